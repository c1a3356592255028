#!/usr/bin/env bash
# docs/openapi.json against a live `luahier serve`, by Schemathesis: requests made from the
# document's schemas (and some broken on purpose), each answer checked against the document.
# By hand, not in CI (it needs Python and the network to install):
#   python3 -m venv /tmp/st && /tmp/st/bin/pip install schemathesis
#   SCHEMATHESIS=/tmp/st/bin/schemathesis tools/schemathesis.sh [schemathesis run options...]
# The server answers scripts/alerts.lua with --reload-endpoint on and --trace path, on PORT
# (18080); its stderr goes to /tmp/luahier-schemathesis.log. The last run's result is in
# docs/serve.md (The API document).
set -euo pipefail
cd "$(dirname "$0")/.."
schemathesis=${SCHEMATHESIS:-schemathesis}
port=${PORT:-18080}
swift build --traits Server >/dev/null 2>&1 || { echo "tools/schemathesis.sh: swift build failed" >&2; exit 1; }
.build/debug/luahier serve scripts/alerts.lua --port "$port" --reload-endpoint --trace path 2>/tmp/luahier-schemathesis.log &
server=$!
trap 'kill "$server" 2>/dev/null' EXIT
# Schemathesis keeps its cache in the folder it runs in: a scratch one, not the package.
cd "$(mktemp -d /tmp/luahier-schemathesis.XXXXXX)"
# positive_data_acceptance is left out: a request the schema allows can still name a node the
# rules do not have (400 NoSuchNode), which only the rules decide.
"$schemathesis" run "http://127.0.0.1:$port/openapi.json" --wait-for-schema 30 --checks all \
  --exclude-checks positive_data_acceptance "$@"
