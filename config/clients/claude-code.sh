#!/bin/sh
# Register kioku with Claude Code (user scope), over stdio. Run it from anywhere:
#   /path/to/kioku/config/clients/claude-code.sh
# It registers this checkout's venv executable by its absolute path (created by
# `make serve` or `make test`), which works where `kioku` is not on the PATH.
# KIOKU=/other/path/to/kioku overrides it (e.g. `KIOKU=$(which kioku)` after pipx).
set -eu
repo=$(cd "$(dirname "$0")/../.." && pwd)
KIOKU=${KIOKU:-$repo/.venv/bin/kioku}
if [ ! -x "$KIOKU" ]; then
    echo "no executable $KIOKU: run 'make serve' once in $repo (or set KIOKU)" >&2
    exit 1
fi
claude mcp add --scope user kioku -- "$KIOKU" serve
# or, to a running HTTP gateway (compose.yaml's token variable is KIOKU_TOKEN):
# claude mcp add --transport http kioku http://127.0.0.1:8765/mcp --header "Authorization: Bearer $KIOKU_TOKEN"
