#!/usr/bin/env bash
# The Arm cross toolchain and the emulator, from Debian/Ubuntu packages, installed only when
# missing: gcc-arm-none-eabi (compiler), libnewlib-arm-none-eabi (C library, semihosting specs),
# qemu-system-arm (the mps2/mps3 boards), cmake (the exported project's CMake build), chromium
# (headless: the Inspector's HTML report test renders the report and checks a screenshot), clang and
# libclang-rt-14-dev (libFuzzer and the sanitizer runtimes: the fuzzing harness, docs/fuzzing.md), gcc
# (the host compiler: the C runtime's host build and the QEMU plugin of the estimated cycles).
# Needs root or sudo; prints what to run otherwise.
set -euo pipefail

missing=()
command -v gcc >/dev/null 2>&1 || missing+=(gcc)
command -v arm-none-eabi-gcc >/dev/null 2>&1 || missing+=(gcc-arm-none-eabi)
# newlib's semihosting specs file is how we know libnewlib-arm-none-eabi is there.
arm-none-eabi-gcc -print-file-name=rdimon.specs 2>/dev/null | grep -q / || missing+=(libnewlib-arm-none-eabi)
command -v qemu-system-arm >/dev/null 2>&1 || missing+=(qemu-system-arm)
command -v cmake >/dev/null 2>&1 || missing+=(cmake)  # export-c also writes a CMakeLists.txt, tested
command -v chromium >/dev/null 2>&1 || missing+=(chromium)  # Debian's package (Ubuntu's is a snap stub)
command -v clang >/dev/null 2>&1 || missing+=(clang)
# libFuzzer's runtime is how we know libclang-rt-14-dev (or the matching version) is there.
clang -print-file-name=libclang_rt.fuzzer-x86_64.a 2>/dev/null | grep -q / || missing+=(libclang-rt-14-dev)
if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
else
    echo "mcuforge: missing ${missing[*]}; install them with: apt-get install ${missing[*]}" >&2
    exit 1
fi
echo "installing ${missing[*]} (apt-get)"
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
