#!/usr/bin/env bash
# Fuzzes the case loader (and the .npy header reader) for a bounded time with
# libFuzzer + ASan + UBSan; fails on any crash, leak, timeout or sanitizer
# report. Seeds: cases/ and fuzz/seeds/. Needs the build of .ci/sanitize.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${ATTNCONV_SANITIZE_BUILD:-build-sanitize}
seconds=${ATTNCONV_FUZZ_SECONDS:-60}
[ -x "$build/fuzz/attnconv_fuzz_loader" ] || cmake --build "$build" --target attnconv_fuzz_loader -j "$(nproc)"
corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
find cases fuzz/seeds -type f \( -name '*.json' -o -name '*.npy' \) -exec cp {} "$corpus"/ \;
mkdir -p "$build/fuzz-artifacts"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
"$build/fuzz/attnconv_fuzz_loader" -max_total_time="$seconds" -max_len=16384 -timeout=10 -rss_limit_mb=2048 \
  -dict=fuzz/case_loader.dict -artifact_prefix="$build/fuzz-artifacts/" -print_final_stats=1 "$corpus"
echo "fuzz: no crash in ${seconds} s"
