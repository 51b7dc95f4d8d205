# The two commands of the README: `make demo` and `make test`.  Both install
# what they need first (Debian packages as root), then build with CMake.
BUILD   ?= build
PREFIX  ?= /usr/local
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=RelWithDebInfo

.PHONY: all deps build test test-native test-asan test-tsan demo bench install clean

all: build

deps:
	@scripts/deps.sh

build: deps
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

# The allocator's own tests, then its logic again under AddressSanitizer with
# UBSan and under ThreadSanitizer (test-only builds: the sanitizer owns malloc).
test: test-asan test-tsan test-native

test-native: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

test-asan: deps
	@cmake -S . -B build-asan $(CMAKE_FLAGS) -DHUGEHEAP_SANITIZE=address,undefined >/dev/null
	@cmake --build build-asan -j$(JOBS)
	cd build-asan && ctest --output-on-failure -j$(JOBS)

test-tsan: deps
	@cmake -S . -B build-tsan $(CMAKE_FLAGS) -DHUGEHEAP_SANITIZE=thread >/dev/null
	@cmake --build build-tsan -j$(JOBS)
	cd build-tsan && ctest --output-on-failure -j$(JOBS)

demo: build
	@python3 scripts/demo.py $(BUILD)

bench: build
	@python3 bench/allocators.py --build $(BUILD)

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) build-asan build-tsan
