#!/usr/bin/env bash
# Lints the package's own Lua (Lua/*.lua) with luacheck and .luacheckrc (Debian: lua-check).
# walk.lua is checked as its traced variant, the one that keeps every line: its "--T|" lines
# are code there (luahier_pushwalk), so the untraced variant is the same code with some
# lines commented out.
set -euo pipefail
cd "$(dirname "$0")/.."
luacheck --no-color --codes $(ls Lua/*.lua | grep -v '^Lua/walk.lua$')
sed 's/^--T|/    /' Lua/walk.lua | luacheck --no-color --codes --filename Lua/walk.lua -
