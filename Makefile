# The two set-up commands: `make demo` and `make test`. Both install what is missing first.
.PHONY: deps configure build demo test test-asan test-tsan bench clean

deps:
	@bash scripts/install_deps.sh

configure: deps
	@cmake --preset release >/dev/null

build: configure
	@cmake --build --preset release

demo: build
	./build/release/examples/seed_demo
	./build/release/examples/train_mnist

test: build
	ctest --preset release

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
