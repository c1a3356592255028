#!/usr/bin/env bash
# The whole suite RUNS times (default 5) with a busy loop on every core beside it: the check
# that no test depends on the clock. Prints each run's result line and the failures; exits 1
# if any run failed. By hand (about 5 minutes a run on 2 cores):
#   tools/loaded-suite.sh [RUNS] [swift test options...]
set -uo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}; shift || true
LUAHIER_WERROR=1 swift build --traits Server --build-tests >/dev/null 2>&1 || { echo "build failed"; exit 1; }
loads=()
for _ in $(seq 1 "$(nproc)"); do (while :; do :; done) & loads+=($!); done
trap 'kill "${loads[@]}" 2>/dev/null' EXIT
failed=0
for run in $(seq 1 "$runs"); do
  log=$(mktemp /tmp/luahier-loaded.XXXXXX)
  LUAHIER_WERROR=1 swift test --traits Server "$@" >"$log" 2>&1
  status=$?
  echo "run $run (load average $(cut -d' ' -f1 /proc/loadavg)): $(grep -E 'Test run with' "$log" | tail -1)"
  grep -E "✘ (Test|Suite) .*(recorded|failed)" "$log" | grep -v "Test run" | head -8
  [ $status -eq 0 ] || failed=1
  if [ $status -eq 0 ]; then rm -f "$log"; else echo "  (log kept: $log)"; fi
done
exit $failed
