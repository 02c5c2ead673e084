#!/usr/bin/env bash
# attnconv's one build helper. On a fresh Debian 12 machine:
#   ./build.sh verify   install what is missing, build, run the verification suite over cases/ -> reports/
#   ./build.sh test     install what is missing, build, run the test suite (ctest)
# Installing needs root (apt-get); sudo is used when available and needed.
set -euo pipefail
cd "$(dirname "$0")"

# Debian 12 packages: build tools, the libraries, and what the tests use.
packages=(cmake make g++ git pkg-config
          xtensor-dev libxtensor-blas-dev libopenblas-dev
          libssl-dev zlib1g-dev catch2 nlohmann-json3-dev libcli11-dev librapidcheck-dev libbenchmark-dev
          python3 python3-numpy python3-jsonschema python3-torch python3-torchvision python3-sklearn  # the exporters, dump tests, trained models (sklearn: the 8x8 digits)
          gnuplot-nox
          chromium chromium-driver python3-selenium  # tests/scripts/html_browser.py
          clang libclang-rt-14-dev)  # .ci/sanitize.sh, .ci/fuzz.sh

install_missing() {
  local missing=() p
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "build.sh: installing ${missing[*]}" >&2
  local sudo=()
  [ "$(id -u)" -ne 0 ] && sudo=(sudo)
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

build() {
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build -j "$(nproc)"
}

case "${1:-}" in
  verify)
    install_missing
    build
    ./build/attnconv run cases --out reports
    ;;
  test)
    install_missing
    build
    (cd build && ctest --output-on-failure -j "$(nproc)" -LE scale)  # the 100 000-case page: .ci/run
    ;;
  *)
    echo "usage: ./build.sh verify | test" >&2
    exit 2
    ;;
esac
