#!/usr/bin/env bash
# The test suite under AddressSanitizer + UndefinedBehaviorSanitizer (clang),
# in build-sanitize/, which also holds the loader fuzzer for .ci/fuzz.sh.
# Any sanitizer report aborts the process and fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${ATTNCONV_SANITIZE_BUILD:-build-sanitize}
CC=clang CXX=clang++ cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DATTNCONV_SANITIZE=ON -DATTNCONV_FUZZ=ON >/dev/null
cmake --build "$build" -j "$(nproc)"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export LSAN_OPTIONS=suppressions=$PWD/.ci/lsan.supp  # one clang 14 bug, explained there
(cd "$build" && ctest --output-on-failure -j "$(nproc)" -LE scale)  # the scale test: .ci/run, once
