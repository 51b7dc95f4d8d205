#!/usr/bin/env bash
# Installs the Debian packages that building, testing and benchmarking need.
# As root it installs what is missing with apt-get; otherwise it names what is
# missing and carries on, so that tests needing a missing tool skip and say why.
set -u

# Build: without these nothing compiles.
build_pkgs=(gcc g++ make cmake binutils libc6-dev python3 python3-venv)
# Tests and benchmarks: real reasoners (the families of suites/paper), the
# peer allocators, a browser for the report, the fuzzer, the AArch64 cross
# build and its emulator, valgrind, a Slurm cluster of this machine alone
# for the tests of the Slurm executor, and the virtual machine of the cgroup
# v2 tests (qemu and the static busybox of its initramfs; its kernel is
# fetched by the test itself with apt-get download, not installed).
test_pkgs=(minisat cadical cryptominisat z3 picosat clasp gringo cvc5 spin swi-prolog-core
           berkeley-abc libmimalloc2.0 libjemalloc2 libtcmalloc-minimal4 chromium clang libclang-rt-14-dev
           gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user valgrind slurm-wlm munge
           qemu-system-x86 busybox-static)

missing=()
for pkg in "${build_pkgs[@]}" "${test_pkgs[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null)
    [[ "$status" == "install ok installed" ]] || missing+=("$pkg")
done

[[ ${#missing[@]} -eq 0 ]] && exit 0

if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
    echo "deps: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    if ! apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1; then
        apt-get update -qq >/dev/null 2>&1 || true
        if ! apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
            echo "deps: apt-get could not install: ${missing[*]}" >&2
        fi
    fi
    still=()
    for pkg in "${missing[@]}"; do
        status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null)
        [[ "$status" == "install ok installed" ]] || still+=("$pkg")
    done
    missing=("${still[@]+"${still[@]}"}")
    [[ ${#missing[@]} -eq 0 ]] && exit 0
fi

echo "deps: missing Debian packages: ${missing[*]}" >&2
echo "deps: install them with: sudo apt-get install ${missing[*]}" >&2
for pkg in "${missing[@]}"; do
    for b in "${build_pkgs[@]}"; do
        if [[ "$pkg" == "$b" ]]; then
            echo "deps: $pkg is needed to build; stopping" >&2
            exit 1
        fi
    done
done
echo "deps: tests that need them will skip and say so" >&2
exit 0
