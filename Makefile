# The two commands of the README: `make demo` and `make test`.  Both install
# what they need first (Debian packages as root), then build with CMake.
BUILD   ?= build
PREFIX  ?= /usr/local
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=RelWithDebInfo

PYTHON  ?= python3
VENV    := .venv

.PHONY: all deps build venv wheel test test-native test-asan test-tsan test-fuzz test-aarch64 fuzz \
	test-python test-programs demo bench results before paper-quick paper real-fetch real-quick real install clean

all: build

deps:
	@scripts/deps.sh

build: deps venv
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

# The hugeheap command and its test tools, in .venv (rebuilt when pyproject changes).
venv: $(VENV)/.installed
$(VENV)/.installed: pyproject.toml setup.py
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
	  { echo "hugeheap needs Python 3.11 or newer ($(PYTHON) is older)"; exit 1; }
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	@$(VENV)/bin/pip install -q --disable-pip-version-check -e '.[dev,paper]'
	@touch $@

# The hugeheap command as a wheel with libhugeheap in it (what `pip install .`
# installs), in build/wheel/.
wheel: venv
	@rm -rf $(BUILD)/wheel && $(VENV)/bin/pip wheel -q --no-deps -w $(BUILD)/wheel .

# The allocator's own tests, then its logic again under AddressSanitizer with
# UBSan and under ThreadSanitizer (test-only builds: the sanitizer owns malloc),
# a minute of fuzzing, the C tests on AArch64 under qemu-user.
test: test-asan test-tsan test-fuzz test-aarch64 test-native test-python

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

# libFuzzer (Debian's clang): random malloc-family programs against a model,
# from one and two threads.  `make fuzz FUZZ_SECONDS=3600` for longer; the
# corpus stays in build-fuzz/corpus between runs.
FUZZ_SECONDS ?= 60
fuzz: deps
	@if ! command -v clang >/dev/null || ! ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-*.a >/dev/null 2>&1; then \
	  echo "fuzz: SKIPPED: needs clang and libFuzzer (Debian packages clang, libclang-rt-14-dev)"; exit 0; fi; \
	cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DHUGEHEAP_FUZZ=ON $(CMAKE_FLAGS) >/dev/null && \
	cmake --build build-fuzz -j$(JOBS) --target fuzz_alloc && mkdir -p build-fuzz/corpus && \
	{ build-fuzz/bin/fuzz_alloc -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=4096 \
	  -print_final_stats=1 build-fuzz/corpus >build-fuzz/fuzz.log 2>&1 || \
	  { tail -40 build-fuzz/fuzz.log; echo "fuzz: FAILED (reproducer: the crash-* file above)"; exit 1; }; }; \
	grep -E "^(Done|stat::number_of_executed_units)" build-fuzz/fuzz.log
test-fuzz: fuzz

# The allocator's C tests built for AArch64 and run under qemu-user.
test-aarch64: deps
	@if ! command -v aarch64-linux-gnu-gcc >/dev/null || ! command -v qemu-aarch64 >/dev/null; then \
	  echo "test-aarch64: SKIPPED: needs gcc-aarch64-linux-gnu, libc6-dev-arm64-cross, qemu-user"; exit 0; fi; \
	cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake $(CMAKE_FLAGS) >/dev/null && \
	cmake --build build-aarch64 -j$(JOBS) && cd build-aarch64 && ctest --output-on-failure -j$(JOBS)

# Real programs' whole test suites (CPython's, numpy's, scipy's) under glibc and with
# libhugeheap preloaded; fails on any test failing under one only.  Logs,
# JUnit XML and results.json in build/programs.
test-programs: build
	$(PYTHON) alloc/tests/program_suites.py --lib $(BUILD)/lib/libhugeheap.so \
	  --venv-python $(VENV)/bin/python --out $(BUILD)/programs

# The harness: its tests (real processes, real cgroups), lint and types.
test-python: build wheel
	$(VENV)/bin/ruff check python bench scripts suites alloc/tests workloads setup.py
	$(VENV)/bin/mypy
	$(VENV)/bin/pytest --durations=15 python/tests

# The main job: suites/demo.toml, a fresh campaign each time (a rebuilt
# library is a different campaign), then its summary and HTML report.
DEMO_DIR := $(BUILD)/demo-campaign
demo: build
	@rm -rf $(DEMO_DIR); $(VENV)/bin/hugeheap bench suites/demo.toml --out $(DEMO_DIR); \
	  status=$$?; if [ $$status -le 1 ]; then \
	    $(VENV)/bin/hugeheap report $(DEMO_DIR) --html $(DEMO_DIR)/report.html || status=$$?; \
	  fi; exit $$status

# The allocator comparison (suites/allocators.toml), through the harness; the
# same command on the same directory resumes a stopped campaign.
BENCH_DIR := $(BUILD)/bench-allocators
bench: build
	@$(VENV)/bin/hugeheap bench suites/allocators.toml --out $(BENCH_DIR); \
	  status=$$?; if [ $$status -le 1 ]; then \
	    $(VENV)/bin/hugeheap report $(BENCH_DIR) --html $(BENCH_DIR)/report.html || status=$$?; \
	  fi; exit $$status

# The tables of the docs made anew from the campaigns packed in published/
# (`hugeheap results pack`; published/README.md): every block between a line
# <!-- results:NAME --> and <!-- /results:NAME --> in docs/*.md, docs/notebook/*.md
# and README.md.
results: venv
	@$(VENV)/bin/hugeheap results docs

# libhugeheap as it was before libhugeheap 2 (commit 9766530), built beside
# this checkout for the suites that compare with it (suites/experiments/, mode
# hugeheap-before).
BEFORE_REVISION := 9766530
before: $(BUILD)/before/lib/libhugeheap.so
$(BUILD)/before/lib/libhugeheap.so:
	@rm -rf $(BUILD)/before-src && mkdir -p $(BUILD)/before-src
	@git archive $(BEFORE_REVISION) alloc CMakeLists.txt workloads suites bench | tar -x -C $(BUILD)/before-src
	@cmake -S $(BUILD)/before-src -B $(BUILD)/before $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD)/before -j$(JOBS) --target hugeheap_shared
	@echo "$$(git rev-parse --short $(BEFORE_REVISION)), built by make before" > $(BUILD)/before/REVISION

# The THP paper's Tables 2 and 3, family by family (docs/REPRODUCTION.md):
# each suite of suites/paper (generated instances) or suites/real (public
# benchmark files named by URL and sha256, fetched once into the instance
# cache; `make real-fetch` only fills it) in its quick size (minutes each), or
# whole (`make paper`, `make real`); the same command resumes. Then the tables
# over all of them.
PAPER_FAMILIES := sat asp smt maxsat mus modelchecking hwmc tabling
REAL_FAMILIES := sat asp smt maxsat mus mcc spin hwmc tabling
real-fetch: venv
	@$(VENV)/bin/hugeheap fetch $(foreach f,$(REAL_FAMILIES),suites/real/$(f).toml)
paper-quick paper real-quick real: build
	@kind=$(firstword $(subst -, ,$@)); \
	  families="$(if $(filter real%,$@),$(REAL_FAMILIES),$(PAPER_FAMILIES))"; \
	  quick=$(if $(filter %-quick,$@),--quick,); suffix=$(if $(filter %-quick,$@),-quick,); \
	  campaigns=; \
	  for family in $$families; do \
	    $(VENV)/bin/hugeheap bench suites/$$kind/$$family.toml $$quick \
	      --out $(BUILD)/$$kind/$$family$$suffix || exit $$?; \
	    campaigns="$$campaigns $(BUILD)/$$kind/$$family$$suffix"; \
	  done; \
	  $(VENV)/bin/hugeheap report $$campaigns --tables paper --pair system,hugeheap

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) build-asan build-tsan build-fuzz build-aarch64 $(VENV)
