#!/usr/bin/env bash
# The whole test suite under AddressSanitizer with LeakSanitizer (run by hand; CI runs the
# plain suite). Builds in .build-asan so the normal build stays as it is.
#   tools/sanitize.sh                 # everything
#   tools/sanitize.sh --filter Hostile  # a slice
set -euo pipefail
cd "$(dirname "$0")/.."
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:halt_on_error=1}"
# Swift's runtime keeps metadata caches alive for the process lifetime; they are not leaks.
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$(pwd)/tools/lsan.supp:print_suppressions=0}"
# RSS bounds in the tests do not hold under ASan (shadow memory, quarantine): they skip.
export LUAHIER_SANITIZED=1
swift test --traits Server --sanitize=address --scratch-path .build-asan "$@"
