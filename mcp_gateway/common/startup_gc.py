"""The cyclic garbage collector held off while a process imports and opens its stores.

A kioku process starts by importing ~1,650 modules (the MCP SDK's pydantic models of
two protocol versions, numpy, the stores) and opening the stores and the models. Those
allocate ~170k objects that live as long as the process, and the collector traversed
them again and again on the way: ~10 % of the CPU before the daemon could answer an
editor's first search (import + ``open_app`` + one search, 5 runs each, load ~7:
1.12-1.22 s with the collector, 0.99-1.11 s without; bench/LOG.md, round 28). A
collection afterwards found ~2,100 unreachable objects of the 170k.

``hold`` turns the collector off at a process's first line; ``release``, once the
start is over, moves what the start made to the permanent generation (``gc.freeze``:
never traversed again; the few cycles among it are kept, well under 1 MB) and turns the
collector back on for what the process makes from then on. A process that releases
twice, or never held, is unaffected.
"""

from __future__ import annotations

import gc


def hold() -> None:
    gc.disable()


def release() -> None:
    if not gc.isenabled():
        gc.freeze()
        gc.enable()
