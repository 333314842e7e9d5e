# The two set-up commands: `make demo` and `make test`. Both install what is missing first.
# Each build and test step prints a summary; the full output goes to build/logs/ (named there).
.PHONY: deps configure build build-demo python install-python wheel demo test test-interop test-asan test-tsan bench clean

EF_VENV ?= $(HOME)/.cache/eagerflow/venv
PYTHON := $(EF_VENV)/bin/python
STEP := python3 $(CURDIR)/scripts/step.py
LOGS := build/logs
# The Python package as laid out in the release tree (python/CMakeLists.txt): the extension
# there links the library the C++ tests link, so nothing is compiled twice.
IN_TREE_PYTHON := PYTHONPATH=$(CURDIR)/build/release/python_package

deps:
	@bash scripts/install_deps.sh

configure: deps
	@cmake --preset release -DEF_BUILD_PYTHON=ON -DPython_EXECUTABLE=$(PYTHON) > /dev/null

build: configure
	@$(STEP) --kind build --label "build (release)" --build-dir build/release --log $(LOGS)/build-release.log -- cmake --build --preset release

# `pip install .` into the virtualenv, as a user would (a separate build under build/python/;
# make test and make demo use the release tree's package instead).
install-python: deps
	CMAKE_BUILD_PARALLEL_LEVEL=$${CMAKE_BUILD_PARALLEL_LEVEL:-2} $(PYTHON) -m pip install -q --disable-pip-version-check --no-build-isolation .
python: install-python

# A wheel with its shared libraries bundled (auditwheel), from the release tree's extension.
wheel: build
	@$(PYTHON) scripts/make_wheel.py --build build/release --out build/wheel

# The demo needs the library, the examples and the Python package, not the tests and benchmarks.
DEMO_TARGETS := seed_demo train_mnist mnist_data_parallel char_transformer _core ef_python_package
build-demo: configure
	@$(STEP) --kind build --label "build (release, demo programs)" --build-dir build/release --log $(LOGS)/build-demo.log -- \
	  cmake --build --preset release --target $(DEMO_TARGETS)

demo: build-demo
	@rm -rf build/demo/logs
	./build/release/examples/seed_demo
	./build/release/examples/train_mnist
	@# The MNIST MLP data parallel on 2 ranks (Open MPI, shared memory; rank 0 prints), next to one process.
	@if [ -x ./build/release/examples/mnist_data_parallel ] && command -v mpirun >/dev/null; then \
	  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe --bind-to none --mca btl self,vader \
	    -x OMP_NUM_THREADS=1 -np 2 ./build/release/examples/mnist_data_parallel; \
	else echo "mpirun not found: skipping the data-parallel demo (install openmpi-bin)"; fi
	$(PYTHON) scripts/tensorboard_screenshot.py build/demo/logs build/demo/tensorboard.png
	./build/release/examples/char_transformer
	./build/release/examples/char_transformer --model lstm --generate 200
	cd build && $(IN_TREE_PYTHON) $(PYTHON) ../examples/python/seed.py
	cd build && $(IN_TREE_PYTHON) $(PYTHON) ../examples/python/train_mnist.py

# The Python tests verify the IR after every pass (EF_VERIFY_IR=1), as the C++ test programs do.
test: build
	@$(STEP) --kind ctest --label "ctest (release)" --log $(LOGS)/ctest-release.log -- ctest --preset release
	@cd build && EF_VERIFY_IR=1 $(IN_TREE_PYTHON) $(STEP) --kind pytest --label "pytest" --log logs/pytest.log -- \
	  $(PYTHON) -m pytest -q --durations=5 --ignore=../python/tests/interop ../python/tests

# Files exchanged with the real clients (Keras 3, TensorFlow): their virtualenv is large, so it is
# made here (scripts/install_interop_deps.sh) and not by `make test`; without it the tests skip.
test-interop: build
	@PY=$$(bash scripts/install_interop_deps.sh) || echo "interop: no Keras/TensorFlow virtualenv; the tests will skip"; \
	  cd build && EF_INTEROP_PYTHON=$$PY EF_VERIFY_IR=1 $(IN_TREE_PYTHON) $(STEP) --kind pytest --label "pytest (interop)" \
	  --log logs/pytest-interop.log -- $(PYTHON) -m pytest -q ../python/tests/interop

test-asan: deps
	@cmake --preset asan > /dev/null
	@$(STEP) --kind build --label "build (asan)" --build-dir build/asan --log $(LOGS)/build-asan.log -- cmake --build --preset asan
	@$(STEP) --kind ctest --label "ctest (asan)" --log $(LOGS)/ctest-asan.log -- ctest --preset asan

test-tsan: deps
	@cmake --preset tsan > /dev/null
	@$(STEP) --kind build --label "build (tsan)" --build-dir build/tsan --log $(LOGS)/build-tsan.log -- cmake --build --preset tsan
	@$(STEP) --kind ctest --label "ctest (tsan, label threads)" --log $(LOGS)/ctest-tsan.log -- ctest --preset tsan

bench: build
	./build/release/bench/ef_bench --benchmark_min_time=0.2
	./build/release/bench/ef_alloc_count
	./build/release/bench/ef_growth

clean:
	rm -rf build
