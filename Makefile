# The two set-up commands: `make demo` and `make test`. Both install what is missing first.
.PHONY: deps configure build python demo test test-asan test-tsan bench clean

deps:
	@bash scripts/install_deps.sh

configure: deps
	@cmake --preset release >/dev/null

build: configure
	@cmake --build --preset release

# The Python package is installed (non-editable) into the virtualenv that install_deps.sh makes;
# scikit-build-core keeps its build folder (build/python/), so reinstalling is incremental.
EF_VENV ?= $(HOME)/.cache/eagerflow/venv
PYTHON := $(EF_VENV)/bin/python

python: deps
	CMAKE_BUILD_PARALLEL_LEVEL=$${CMAKE_BUILD_PARALLEL_LEVEL:-2} $(PYTHON) -m pip install -q --disable-pip-version-check --no-build-isolation .

demo: build python
	./build/release/examples/seed_demo
	rm -rf build/demo/logs
	./build/release/examples/train_mnist
	@# The MNIST MLP data parallel on 2 ranks (Open MPI, shared memory; rank 0 prints), next to one process.
	@if [ -x ./build/release/examples/mnist_data_parallel ] && command -v mpirun >/dev/null; then \
	  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe --bind-to none --mca btl self,vader \
	    -x OMP_NUM_THREADS=1 -np 2 ./build/release/examples/mnist_data_parallel; \
	else echo "mpirun not found: skipping the data-parallel demo (install openmpi-bin)"; fi
	$(PYTHON) scripts/tensorboard_screenshot.py build/demo/logs build/demo/tensorboard.png
	./build/release/examples/char_transformer
	./build/release/examples/char_transformer --model lstm --seconds 45 --generate 200
	cd build && $(PYTHON) ../examples/python/seed.py
	cd build && $(PYTHON) ../examples/python/train_mnist.py

test: build python
	ctest --preset release
	cd build && $(PYTHON) -m pytest -q ../python/tests

test-asan: deps
	@cmake --preset asan >/dev/null
	cmake --build --preset asan
	ctest --preset asan

test-tsan: deps
	@cmake --preset tsan >/dev/null
	cmake --build --preset tsan
	ctest --preset tsan

bench: build
	./build/release/bench/ef_bench --benchmark_min_time=0.2
	./build/release/bench/ef_alloc_count
	./build/release/bench/ef_growth

clean:
	rm -rf build
