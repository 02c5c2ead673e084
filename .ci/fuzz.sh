#!/usr/bin/env bash
# Fuzzes, with libFuzzer + ASan + UBSan, for a bounded time each
# (ATTNCONV_FUZZ_SECONDS, default 25 s, so about 100 s in all):
#   attnconv_fuzz_loader  the case loader (and the .npy header reader); seeds: cases/, fuzz/seeds/
#   attnconv_fuzz_report  the report reader of merge and plot; seeds: fuzz/seeds/reports/
#   attnconv_fuzz_npy     the .npy reader (check and loader must agree); seeds: fuzz/seeds/npy/
#   attnconv_fuzz_npz     the .npz (zip) reader, its directory and every entry; seeds: fuzz/seeds/npz/
# Fails on any crash, leak, timeout or sanitizer report. Builds only the fuzz
# targets, in the build folder of .ci/sanitize.sh (configured here if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${ATTNCONV_SANITIZE_BUILD:-build-sanitize}
seconds=${ATTNCONV_FUZZ_SECONDS:-25}
[ -f "$build/CMakeCache.txt" ] || CC=clang CXX=clang++ cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DATTNCONV_SANITIZE=ON -DATTNCONV_FUZZ=ON >/dev/null
cmake --build "$build" --target attnconv_fuzz_loader attnconv_fuzz_report attnconv_fuzz_npy attnconv_fuzz_npz -j "$(nproc)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/loader" "$work/report" "$work/npy" "$work/npz" "$build/fuzz-artifacts"
find cases fuzz/seeds -maxdepth 1 -type f \( -name '*.json' -o -name '*.npy' \) -exec cp {} "$work/loader"/ \;
cp fuzz/seeds/reports/* "$work/report"/
cp fuzz/seeds/npy/* "$work/npy"/
cp fuzz/seeds/npz/* "$work/npz"/
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
for target in loader report npy npz; do
  case $target in
    loader) dict=fuzz/case_loader.dict ;;
    report) dict=fuzz/report.dict ;;
    npy) dict=fuzz/npy.dict ;;
    npz) dict=fuzz/npz.dict ;;
  esac
  echo "fuzz: attnconv_fuzz_$target for ${seconds} s"
  "$build/fuzz/attnconv_fuzz_$target" -max_total_time="$seconds" -max_len=16384 -timeout=10 -rss_limit_mb=2048 \
    -dict="$dict" -artifact_prefix="$build/fuzz-artifacts/$target-" -print_final_stats=1 "$work/$target"
done
echo "fuzz: no crash in 4 x ${seconds} s"
