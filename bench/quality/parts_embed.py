"""Fill the embedding cache with note parts (sentences/lines): the multi-vector trial
in bench/LOG.md (measured, not shipped).

    python bench/quality/parts_embed.py
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from embcache import Cache, load_jsonl, memory_document  # noqa: E402


def parts(document: str) -> list[str]:
    """Lines and sentences of at least 8 characters; [] when the note is one part."""
    out = []
    for line in document.split("\n"):
        for s in re.split(r"(?<=[.!?。！？])\s+|(?<=[。！？])", line):
            s = s.strip()
            if len(s) >= 8:
                out.append(s)
    return out if len(out) > 1 else []


if __name__ == "__main__":
    cache = Cache("original")
    todo = [p for m in load_jsonl("memories.jsonl") for p in parts(memory_document(m))]
    cache.fill("passage", todo)
