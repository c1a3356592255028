#!/usr/bin/env bash
# Startup of every subcommand against `lua5.4 empty.lua`: wall time side by side in one
# hyperfine run per build, then the same interleaved (Benchmarks/startup/interleaved.py: a
# shared machine's load falls on every command alike), then instructions per start
# (callgrind), then `serve` from start to its port accepting a connection
# (Benchmarks/startup/accept.py). Two builds:
#   static:  the README's install (docs/cli.md, "Installing for speed"): the Server trait,
#            `--static-swift-stdlib -Xswiftc -static-executable` (no dynamic loader at all)
#   default: `swift build -c release` (Swift's runtime as shared libraries, no Server trait)
# Each subcommand does its first useful work on a tiny input: `run` an empty script (with no
# option; with --timeout, read without the parser; with `--` before the file, which only the
# argument parser reads), `dispatch` rules on empty input, `test` one test file, `check`
# rules; `serve` to accepting, its instructions and time with and without the parser
# (serve_instructions.py, accept.py). About three minutes, once built.
#   Benchmarks/startup/run.sh [runs]          # LUAHIER_STATIC=BIN LUAHIER_DEFAULT=BIN: no build
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-100}
need=()
for tool in hyperfine valgrind lua5.4; do command -v "$tool" >/dev/null || need+=("$tool"); done
[ ${#need[@]} -eq 0 ] || { apt-get update -qq && apt-get install -y -qq "${need[@]}" >/dev/null; }

if [ -z "${LUAHIER_STATIC:-}" ]; then
    swift build -c release --product luahier --traits Server --static-swift-stdlib -Xswiftc -static-executable \
        --scratch-path .build-static 2>&1 | tail -1
fi
if [ -z "${LUAHIER_DEFAULT:-}" ]; then
    swift build -c release --product luahier 2>&1 | tail -1
fi
static=${LUAHIER_STATIC:-.build-static/release/luahier}
default=${LUAHIER_DEFAULT:-.build/release/luahier}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
: > "$work/empty.lua"
echo 'local app = hier.root:child("app") app:receiveEvent("Ask", function() return "ok" end)' > "$work/rules.lua"
printf '%s\n' 'rules "rules.lua"' 'test("asks", function() expect(trigger("/app", "Ask")):type("ok") end)' \
    > "$work/one_test.lua"
# name|arguments after the binary (stdin is empty for every command)
commands=(
    "run|run $work/empty.lua"
    "run --timeout 5|run --timeout 5 $work/empty.lua"
    "run --timeout 5 -- (the parser)|run --timeout 5 -- $work/empty.lua"
    "dispatch|dispatch $work/rules.lua"
    "test|test $work/one_test.lua"
    "check|check $work/rules.lua"
)

for build in static default; do
    binary=${!build}
    args=(-N -w 10 -r "$runs" -n "lua5.4 empty.lua" "lua5.4 $work/empty.lua")
    for entry in "${commands[@]}"; do
        args+=(-n "luahier ${entry%%|*} ($build)" "$binary ${entry#*|}")
    done
    hyperfine "${args[@]}" --export-json "$work/$build.json" > /dev/null
    # Medians: on a shared machine the means carry every other process's bursts.
    python3 - "$work/$build.json" <<'PY'
import json, sys
results = json.load(open(sys.argv[1]))["results"]
base, cpu_base = results[0]["median"], results[0]["user"] + results[0]["system"]
print(f"  {'command':<36} {'median':>9} {'vs lua5.4':>9}   {'mean cpu':>9} {'vs lua5.4':>9}")
for r in results:
    cpu = r["user"] + r["system"]
    print(f"  {r['command']:<36} {r['median'] * 1000:7.2f}ms {r['median'] / base:8.2f}x   {cpu * 1000:7.2f}ms {cpu / cpu_base:8.2f}x")
PY
    echo
done

echo "The same, interleaved (one run of each per round; CPU time from wait4):"
specs=("lua5.4 empty.lua=lua5.4 $work/empty.lua")
for build in static default; do
    for entry in "${commands[@]}"; do specs+=("luahier ${entry%%|*} ($build)=${!build} ${entry#*|}"); done
done
python3 Benchmarks/startup/interleaved.py "$runs" "${specs[@]}"
echo

echo "Instructions per start (callgrind; copies stripped of DWARF, which valgrind 3.19 cannot read):"
count() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" < /dev/null 2>&1 | sed -n 's/.*refs: *//p'; }
printf '  %-36s %12s\n' "lua5.4 empty.lua" "$(count lua5.4 "$work/empty.lua")"
for build in static default; do
    strip --strip-debug -o "$work/$build" "${!build}"
    for entry in "${commands[@]}"; do
        # shellcheck disable=SC2086
        printf '  %-36s %12s\n' "luahier ${entry%%|*} ($build)" "$(count "$work/$build" ${entry#*|})"
    done
done

printf '  %-36s %12s\n' "luahier serve (static), to accepting" \
    "$(python3 Benchmarks/startup/serve_instructions.py /dev/null "$work/static" serve "$work/rules.lua" --port PORT --log-level warning)"
printf '  %-36s %12s\n' "luahier serve ... -- (the parser)" \
    "$(python3 Benchmarks/startup/serve_instructions.py /dev/null "$work/static" serve "$work/rules.lua" --port PORT --log-level warning --)"
echo "Libraries the default build loads: $(ldd "${default}" | awk '{print $1}' | grep -c .) ($(ldd "${default}" | grep -c -i -E 'foundation|icu') of Foundation's)"

echo
echo "serve, from start to its port accepting (static build), against lua5.4 empty.lua:"
python3 Benchmarks/startup/accept.py "$static" "$work/rules.lua" "$work/empty.lua" 30
