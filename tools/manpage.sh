#!/usr/bin/env bash
# Regenerates docs/luahier.1 from the command definitions, with swift-argument-parser's
# generate-manual plugin (it builds luahier in release mode and reads its help dump). The
# page records the SHA-256 of that dump; UnixCitizenTests.theManPageIsCurrent compares it
# with what the built binary prints, so a changed flag or help text without a new page
# fails the tests. Run after changing any command: tools/manpage.sh && git add docs/luahier.1
set -euo pipefail
cd "$(dirname "$0")/.."
swift package plugin generate-manual --date "$(date +%F)"
page=.build/plugins/GenerateManual/outputs/luahier/luahier.1
hash=$(.build/release/luahier --experimental-dump-help | sha256sum | cut -c1-64)
mkdir -p docs
{
    head -n 1 "$page"
    echo ".\\\" generated from help with SHA-256 $hash (tools/manpage.sh)"
    tail -n +2 "$page"
} > docs/luahier.1
echo "docs/luahier.1: $(wc -l < docs/luahier.1) lines, help SHA-256 $hash"
