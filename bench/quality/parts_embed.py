"""Fill the embedding cache with note parts (sentences/lines) for multi-vector trials."""
from __future__ import annotations
import re, sys
from pathlib import Path
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE)); sys.path.insert(0, str(HERE.parents[1]))
from embcache import Cache, load_jsonl, memory_document  # noqa: E402

def parts(d: str) -> list[str]:
    out = []
    for line in d.split("\n"):
        for s in re.split(r"(?<=[.!?。！？])\s+|(?<=[。！？])", line):
            s = s.strip()
            if len(s) >= 8:
                out.append(s)
    return out if len(out) > 1 else []

if __name__ == "__main__":
    cache = Cache("original")
    todo = [p for m in load_jsonl("memories.jsonl") for p in parts(memory_document(m))]
    print(len(todo), len(cache.missing("passage", todo)), file=sys.stderr)
    cache.fill("passage", todo)
