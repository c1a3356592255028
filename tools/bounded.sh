#!/usr/bin/env bash
# Runs a command (the test suite) with a bound on its time. Past the bound it prints the
# evidence of a hang, then ends the command and exits 124:
#   - the tests that started and did not end (Swift Testing's "◇ Test X started." lines that
#     no "✔"/"✘" line for X followed);
#   - every process still in the command's group, with its age and command line;
#   - every thread's stack in each test process (gdb, when installed).
# CI runs the suite through it, so that a test that hangs fails the run within the bound, with
# what it was waiting on, instead of holding the run to CI's own limit. By hand:
#   tools/bounded.sh SECONDS COMMAND [ARGS...]
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: tools/bounded.sh SECONDS COMMAND [ARGS...]" >&2; exit 2; }
bound=$1; shift
log=$(mktemp /tmp/luahier-bounded.XXXXXX)
# A process group of its own, so that the end reaches every child (the test runner's xctest,
# the servers the tests started); the output is copied to the log the diagnosis reads.
setsid bash -o pipefail -c '"$@" 2>&1 | tee "$0"' "$log" "$@" &
group=$!

diagnose() {
  echo
  echo "bounded: still running after $bound s; what it was doing:"
  echo "--- tests started and not ended"
  sed -nE 's/^.*◇ Test (.*) started\.$/\1/p' "$log" | sort -u > "$log.started"
  sed -nE 's/^.*[✔✘] Test (.*) (passed|failed) .*$/\1/p' "$log" | sort -u > "$log.ended"
  comm -23 "$log.started" "$log.ended"
  echo "--- processes in the command's group"
  ps -o pid,etime,stat,args -g "$group" || true
  if command -v gdb >/dev/null; then
    for pid in $(pgrep -g "$group" -f 'xctest|PackageTests'); do
      echo "--- threads of $pid: $(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | cut -c1-200)"
      timeout 120 gdb -p "$pid" -batch -ex 'set pagination off' -ex 'thread apply all bt 25' 2>/dev/null \
        | grep -E '^(Thread|#)' | head -2000
    done
  fi
  rm -f "$log.started" "$log.ended"
}

deadline=$((SECONDS + bound))
# Polls the command's end once a second: the bound of a tool, not a wait a test depends on.
while kill -0 "$group" 2>/dev/null; do
  if [ "$SECONDS" -ge "$deadline" ]; then
    diagnose
    kill -KILL -- -"$group" 2>/dev/null
    wait "$group" 2>/dev/null
    echo "bounded: ended after $bound s (log: $log)"
    exit 124
  fi
  sleep 1
done
wait "$group"
status=$?
rm -f "$log"
exit $status
