#!/bin/sh
# Register kioku with Claude Code (user scope), over stdio:
claude mcp add --scope user kioku -- kioku serve
# or, to a running HTTP gateway:
# claude mcp add --transport http kioku http://127.0.0.1:8765/mcp --header "Authorization: Bearer $KIOKU_HTTP__TOKEN"
