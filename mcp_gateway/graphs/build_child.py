"""``python -m mcp_gateway.graphs.build_child KIND INPUT... --out FILE``: build one
e5 graph into the cache (``graphs.cache``), in a process of its own so that the build's
temporaries die with it."""

from __future__ import annotations

import argparse
from pathlib import Path

from mcp_gateway.common.fsperms import write_atomic
from mcp_gateway.graphs.cache import KINDS, build


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mcp_gateway.graphs.build_child")
    parser.add_argument("kind", choices=KINDS)
    parser.add_argument("inputs", nargs="+", type=Path)
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args(argv)
    args.out.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    write_atomic(args.out, build(args.kind, args.inputs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
