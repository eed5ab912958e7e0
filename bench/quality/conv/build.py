"""The hand-written conversations in ``src/*.txt`` as ``memories.jsonl`` and ``queries.jsonl``.

This is a format converter, not a generator: every turn and question is written out in
``src/``; this script only numbers turns, prefixes each with its session date, assigns
the split by conversation and checks the labels. Source format::

    # c01 | free-text title
    @ 1 2026-01-12            (session number and date)
    u: user turn              (a: for the assistant)
    u[tag]: turn that a question cites as evidence
    ? kind | tag[,tag2] [!oldtag] | question   (!oldtag: the superseded turn, not relevant)

    python bench/quality/conv/build.py           # write the jsonl files and print stats
    python bench/quality/conv/build.py --check   # fail when the files on disk differ
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from datetime import date
from pathlib import Path

HERE = Path(__file__).resolve().parent
TODAY = date(2026, 12, 4)  # age_days are measured from here; every session is before it
SPLITS = ("dev", "test")
SPEAKER = {"u": "user", "a": "assistant"}
TURN = re.compile(r"^([ua])(?:\[([\w-]+)\])?:\s*(.+)$")
QUESTION = re.compile(r"^\?\s*([\w-]+)\s*\|\s*([^|]+?)\s*\|\s*(.+)$")


def lang_of(text: str) -> str:
    if re.search(r"[\u0e00-\u0e7f]", text):
        return "th"
    if re.search(r"[\u3040-\u30ff\u4e00-\u9fff]", text):
        return "ja"
    return "en"


def parse(path: Path) -> list[dict]:
    convs: list[dict] = []
    for n, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        where = f"{path.name}:{n}"
        if not line:
            continue
        if line.startswith("# "):
            cid, title = (p.strip() for p in line[2:].split("|", 1))
            convs.append({"cid": cid, "title": title, "turns": [], "questions": [], "tags": {}})
            continue
        conv = convs[-1]
        if line.startswith("@ "):
            num, day = line[2:].split()
            conv["session"] = (int(num), date.fromisoformat(day))
        elif m := TURN.match(line):
            num, day = conv["session"]
            turn = {"speaker": SPEAKER[m[1]], "text": m[3], "session": num, "date": day}
            conv["turns"].append(turn)
            if m[2]:
                assert m[2] not in conv["tags"], f"{where}: tag {m[2]} twice"
                conv["tags"][m[2]] = len(conv["turns"]) - 1
        elif m := QUESTION.match(line):
            refs = m[2].split()
            conv["questions"].append(
                {
                    "kind": m[1],
                    "evidence": refs[0].split(","),
                    "old": refs[1:],
                    "query": m[3],
                    "at": where,
                }
            )
        else:
            raise SystemExit(f"{where}: cannot parse {line!r}")
    return convs


def split_of(cid: str) -> str:
    """Whole conversations alternate by number (c01 dev, c02 test, ...): never split within one."""
    return "dev" if int(cid[1:]) % 2 else "test"


def build() -> tuple[list[dict], list[dict]]:
    convs = [c for p in sorted((HERE / "src").glob("*.txt")) for c in parse(p)]
    memories: list[dict] = []
    queries: list[dict] = []
    for conv in convs:
        cid, split = conv["cid"], split_of(conv["cid"])
        keys = []
        prev = None
        for i, t in enumerate(conv["turns"]):
            assert prev is None or prev <= t["date"], f"{cid}: sessions out of order"
            assert t["date"] < TODAY, f"{cid}: session dated after {TODAY}"
            prev = t["date"]
            key = f"{cid}t{i + 1:02d}"
            keys.append(key)
            text = f"[{t['date'].isoformat()} session {t['session']}] {t['speaker']}: {t['text']}"
            memories.append(
                {
                    "key": key,
                    "kind": "note",
                    "type": "note",
                    "lang": lang_of(t["text"]),
                    "text": text,
                    "priority": "",
                    "domain": "",
                    # later turns are newer: a thousandth of a day apart within a session
                    "age_days": round((TODAY - t["date"]).days + 0.5 - i / 1000, 3),
                    "split": split,
                    "conversation": cid,
                }
            )
        for j, q in enumerate(conv["questions"], 1):
            tags = conv["tags"]
            for ref in q["evidence"] + [o.lstrip("!") for o in q["old"]]:
                assert ref in tags, f"{q['at']}: unknown tag {ref}"
            relevant = [keys[tags[r]] for r in q["evidence"]]
            row = {
                "qid": f"{cid}q{j:02d}",
                "query": q["query"],
                "lang": lang_of(q["query"]),
                "kind": q["kind"],
                "relevant": relevant,
                "split": split,
                "conversation": cid,
            }
            if q["old"]:
                row["superseded_from"] = keys[tags[q["old"][0].lstrip("!")]]
            assert 1 <= len(relevant) <= 2, f"{q['at']}: 1 or 2 evidence turns"
            if q["kind"] == "cross-language":
                ev = {m["lang"] for m in memories if m["key"] in relevant}
                assert row["lang"] not in ev, (
                    f"{q['at']}: cross-language in the evidence's language"
                )
            queries.append(row)
    assert len({m["key"] for m in memories}) == len(memories)
    assert len({m["text"] for m in memories}) == len(memories), "duplicate turn text"
    assert len({q["query"] for q in queries}) == len(queries), "duplicate question"
    return memories, queries


def stats(memories: list[dict], queries: list[dict]) -> str:
    convs = Counter(m["conversation"] for m in memories)
    sizes = convs.values()

    def counts(rows: list[dict], field: str) -> str:
        return ", ".join(f"{k} {v}" for k, v in sorted(Counter(r[field] for r in rows).items()))

    def by_split(kind: str) -> str:
        dev, test = (sum(q["kind"] == kind and q["split"] == s for q in queries) for s in SPLITS)
        return f"{kind} {dev}/{test}"

    english = [len(q["query"].split()) for q in queries if q["lang"] == "en"]
    split_convs = {s: len({m["conversation"] for m in memories if m["split"] == s}) for s in SPLITS}
    evidence = Counter(len(q["relevant"]) for q in queries)
    return "\n".join(
        [
            f"{len(convs)} conversations, {len(memories)} turns, {len(queries)} questions",
            f"turns per conversation: min {min(sizes)} max {max(sizes)} "
            f"mean {len(memories) / len(convs):.1f}",
            "split (conversations): " + ", ".join(f"{s} {n}" for s, n in split_convs.items()),
            "split (questions): " + counts(queries, "split"),
            "turn languages: " + counts(memories, "lang"),
            "question languages: " + counts(queries, "lang"),
            "question kinds (dev/test): "
            + ", ".join(by_split(k) for k in sorted({q["kind"] for q in queries})),
            "evidence turns per question: "
            + ", ".join(f"{k}: {v}" for k, v in sorted(evidence.items())),
            f"English question length: mean {sum(english) / len(english):.1f} words",
        ]
    )


def dump(rows: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    memories, queries = build()
    files = {"memories.jsonl": dump(memories), "queries.jsonl": dump(queries)}
    if args.check:
        stale = [n for n, text in files.items() if (HERE / n).read_text(encoding="utf-8") != text]
        if stale:
            sys.exit(f"stale: {', '.join(stale)}; run build.py")
    else:
        for name, text in files.items():
            (HERE / name).write_text(text, encoding="utf-8")
    print(stats(memories, queries))


if __name__ == "__main__":
    main()
