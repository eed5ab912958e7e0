"""A long-log stress variant of the conversational set (dev/test as ``conv/``).

Real chat logs are hundreds of turns long and mostly small talk: many short, nearly
identical turns ("That sounds great!", "thanks!") between the few that state a fact.
``conv/``'s conversations are 21-38 turns of mostly content. This writes a variant where
every English conversation gets, after each of its turns, 1-5 small-talk turns from
``smalltalk.txt`` (hand-written, no fact in any; alternating speakers, same session
prefix), so each is ~4x longer. Turns of the other conversations, the questions and
their evidence are unchanged; a small-talk turn is never evidence.

    python bench/quality/conv/long.py --out DIR   # then run.py --data that dir
"""

from __future__ import annotations

import argparse
import json
import random
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEED = 30


def pools() -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    for line in (HERE / "smalltalk.txt").read_text(encoding="utf-8").splitlines():
        if line[:3] in ("u: ", "a: "):
            out["user" if line[0] == "u" else "assistant"].append(line[3:].strip())
    return out


def lengthen(memories: list[dict], rng: random.Random) -> list[dict]:
    talk = pools()
    by_conv: dict[str, list[dict]] = defaultdict(list)
    for m in memories:
        by_conv[m["conversation"]].append(m)
    out: list[dict] = []
    for cid, turns in by_conv.items():
        if any(t["lang"] != "en" for t in turns):
            out.extend(turns)
            continue
        turns = sorted(turns, key=lambda t: -t["age_days"])
        n = 0
        pos = 0
        for turn in turns:
            prefix, rest = turn["text"].split("] ", 1)
            speaker = rest.split(":", 1)[0]
            day = int(turn["age_days"])
            pos += 1
            out.append({**turn, "age_days": round(day + 0.5 - pos / 10000, 5)})
            for _ in range(rng.randint(1, 5)):
                speaker = "user" if speaker == "assistant" else "assistant"
                n += 1
                pos += 1
                text = f"{prefix}] {speaker}: {rng.choice(talk[speaker])}"
                out.append(
                    {
                        **turn,
                        "key": f"{cid}f{n:03d}",
                        "text": text,
                        "age_days": round(day + 0.5 - pos / 10000, 5),
                    }
                )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    memories = [json.loads(x) for x in (HERE / "memories.jsonl").open(encoding="utf-8")]
    longer = lengthen(memories, random.Random(SEED))
    args.out.mkdir(parents=True, exist_ok=True)
    with (args.out / "memories.jsonl").open("w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(m, ensure_ascii=False) + "\n" for m in longer)
    (args.out / "queries.jsonl").write_text((HERE / "queries.jsonl").read_text(encoding="utf-8"))
    print(f"{len(memories)} -> {len(longer)} turns", flush=True)


if __name__ == "__main__":
    main()
