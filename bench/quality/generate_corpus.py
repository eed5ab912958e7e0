#!/usr/bin/env python3
"""Generate the kioku retrieval-quality benchmark data from its hand-written seeds.

Everything in ``data/`` (memories.jsonl, queries.jsonl, STATS.md) is produced by this
script from ``seeds/memories.jsonl`` and ``seeds/queries.jsonl`` (written by hand: one
memory or query a line). The script is deterministic: it uses one fixed random seed
and no other input, so running it again reproduces the files byte-for-byte.  Run it
with::

    python bench/quality/generate_corpus.py          # write the files
    python bench/quality/generate_corpus.py --check  # verify files on disk match

Memories are written under symbolic ids ("sids"); keys (m0001, ...) are assigned at
the end in creation order (oldest first), and queries refer to sids that are
resolved to keys.  All labelling rules are asserted in ``validate()``.

A seed memory: ``sid``, ``kind`` (note or record), ``type``, ``domain``, ``lang``,
``text``, ``title`` (records), ``priority``, ``age`` (days; null: drawn from the seed),
``links`` (records: [kind, target sid] pairs). A seed query: ``kind``, ``lang``,
``query``, ``rel`` (the relevant sids), ``type``, ``domain``, ``old`` (the superseded
memory whose wording it uses), ``under`` (the newer distractors of a buried query),
``terms`` (key terms of the answer), ``variant`` and ``pair`` (outdated queries only).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

SEED = 20240611
RNG = random.Random(SEED)
HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
SEEDS = HERE / "seeds"

NOTE_TYPES = {"lesson", "conclusion", "knowledge", "profile", "checkpoint"}
RECORD_TYPES = {"audit", "fix", "verification", "decision", "knowledge"}
LANGS = {"en", "ja", "th"}
QUERY_KINDS = [
    "trigger",
    "contextual",
    "paraphrase",
    "crosslang",
    "buried",
    "superseded",
    "type_filter",
    "outdated",
]
OUTDATED_VARIANTS = ("replaced", "control")
LINK_KINDS = {"supersedes", "resolves", "verifies", "duplicates"}


def _load(name: str) -> list[dict]:
    with (SEEDS / name).open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


MEMS: list[dict] = _load("memories.jsonl")
SIDS: dict[str, dict] = {m["sid"]: m for m in MEMS}
QUERIES: list[dict] = _load("queries.jsonl")
assert len(SIDS) == len(MEMS), "duplicate sids"


STOPWORDS = set(
    """
a an the and or but if then else of to in on at by for with from into onto over under about as is are was were be been
being am do does did done doing have has had having it its it's this that these those there here i me my we our us you
your he she they them their his her what which who whom whose when where why how all any both each few more most other
some such no nor not only own same so than too very can could will would shall should may might must just also now one
once up down out off again further s t don't isn't aren't wasn't weren't won't can't cannot get got go goes going gone
let lets like use used using uses need needs make makes made still even ever every anything something nothing
is it whether before after while until because via per vs i'm i'll i'd what's
""".split()
)


def _stem(w: str) -> str:
    for suf in ("ing", "ed", "es", "s"):
        if len(w) > 4 and w.endswith(suf):
            return w[: -len(suf)]
    return w


def en_content_words(text: str) -> set[str]:
    words = re.findall(r"[a-z0-9]+", text.lower())
    return {_stem(w) for w in words if w not in STOPWORDS}


_KANJI = re.compile(r"[\u4e00-\u9fff\u3005]+")
_KATA = re.compile(r"[\u30a1-\u30fa\u30fc]+")
_LATIN = re.compile(r"[A-Za-z0-9]+")


def ja_key_bigrams(text: str) -> set[str]:
    grams = set()
    for run in _KANJI.findall(text) + _KATA.findall(text):
        for i in range(len(run) - 1):
            grams.add(run[i : i + 2])
    return grams


def latin_words(text: str) -> set[str]:
    return {w.lower() for w in _LATIN.findall(text)}


def th_term_grams(terms: list[str]) -> set[str]:
    grams = set()
    for t in terms:
        if _LATIN.fullmatch(t.replace(".", "").replace(" ", "")):
            continue
        t = t.replace(" ", "")
        if len(t) < 3:
            grams.add(t)
        for i in range(len(t) - 2):
            grams.add(t[i : i + 3])
    return grams


def mem_text(m: dict) -> str:
    return (m.get("title", "") + " " + m["text"]).strip()


# ---------------------------------------------------------------------------
# Dev/test split, by memory: memories that answer a common query form one group
# (union-find over each query's relevant set); a group goes to test when a stable
# hash of its smallest sid says so, and each query follows its relevant memories.
# Tuning looks at dev queries only, so no test answer is ever seen while tuning.
# Memories that answer no query are distractors for both splits (their own hash
# decides their label, which nothing uses). Hashing sids, not keys, keeps a
# group's split when the data set grows.  Outdated queries also join the two notes of
# their pair, so a pair never straddles the splits; those groups are split evenly
# within each (language, variant) by ranking them on the same hash, because 10 or 4
# pairs left to the hash alone can land lopsided.
# ---------------------------------------------------------------------------
TEST_SHARE = 0.5


def _split_hash(sid: str) -> float:
    digest = hashlib.blake2b(f"kioku-split\0{sid}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def _split_of(sid: str) -> str:
    return "test" if _split_hash(sid) < TEST_SHARE else "dev"


def assign_splits() -> dict[str, str]:
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for q in QUERIES:
        members = q["rel"] + ([q["pair"]] if q["pair"] else [])
        for s in members[1:]:
            a, b = find(members[0]), find(s)
            if a != b:
                parent[max(a, b)] = min(a, b)
    groups: dict[str, list[str]] = defaultdict(list)
    for sid in SIDS:
        groups[find(sid)].append(sid)
    split = {sid: _split_of(min(members)) for members in groups.values() for sid in members}

    strata: dict[tuple[str, str], set[str]] = defaultdict(set)
    for q in QUERIES:
        if q["kind"] == "outdated":
            root = find(q["rel"][0])
            assert sorted(groups[root]) == sorted(q["rel"] + [q["pair"]]), groups[root]
            strata[SIDS[q["rel"][0]]["lang"], q["variant"]].add(root)
    for roots in strata.values():
        ranked = sorted(roots, key=lambda r: (_split_hash(min(groups[r])), r))
        n_test = round(len(ranked) * TEST_SHARE)
        for i, r in enumerate(ranked):
            for sid in groups[r]:
                split[sid] = "test" if i < n_test else "dev"
    return split


def build() -> tuple[list[dict], list[dict]]:
    age_rng = random.Random(SEED + 1)
    for m in MEMS:  # MEMS order is authoring order: deterministic
        if m["age"] is None:
            m["age"] = round(age_rng.uniform(1.0, 420.0), 2)
    ordered = sorted(MEMS, key=lambda m: (-m["age"], m["sid"]))
    for i, m in enumerate(ordered, 1):
        m["key"] = f"m{i:04d}"
        m["order"] = i
    key = {m["sid"]: m["key"] for m in ordered}
    split = assign_splits()

    memories = []
    for m in ordered:
        out = {
            "key": m["key"],
            "kind": m["kind"],
            "type": m["type"],
            "lang": m["lang"],
            "text": m["text"],
        }
        if m["kind"] == "record":
            out["title"] = m["title"]
        out["priority"] = m["priority"]
        out["domain"] = m["domain"]
        out["age_days"] = float(m["age"])
        out["split"] = split[m["sid"]]
        if m["kind"] == "record":
            out["links"] = [f"{lk}:{key[t]}" for lk, t in m["links"]]
        memories.append(out)

    queries = []
    n = 0
    for kind in QUERY_KINDS:
        for q in QUERIES:
            if q["kind"] != kind:
                continue
            n += 1
            for s in q["rel"] + q["under"] + [x for x in (q["old"], q["pair"]) if x is not None]:
                assert s in SIDS, f"query {q['query']!r} refers to unknown sid {s}"
            out = {
                "qid": f"q{n:03d}",
                "query": q["query"],
                "lang": q["lang"],
                "kind": kind,
                "relevant": [key[s] for s in q["rel"]],
                "split": split[q["rel"][0]],
            }
            if q["type"]:
                out["type"] = q["type"]
            if q["domain"]:
                out["domain"] = q["domain"]
            if q["old"]:
                out["superseded_from"] = key[q["old"]]
            if q["under"]:
                out["buried_under"] = [key[s] for s in q["under"]]
            if q["variant"]:
                out["variant"] = q["variant"]
                out["outdated_pair"] = key[q["pair"]]
            q["qid"] = out["qid"]
            queries.append(out)
    return memories, queries


def validate(memories: list[dict], queries: list[dict]) -> list[str]:
    """Assert every labelling rule; return human-readable check results."""
    res = []
    by_key = {m["key"]: m for m in memories}
    assert len(by_key) == len(memories), "duplicate memory keys"
    assert len({q["qid"] for q in queries}) == len(queries), "duplicate qids"
    assert len({q["query"] for q in queries}) == len(queries), "duplicate query texts"
    assert len({m["text"] for m in memories}) == len(memories), "duplicate memory texts"
    res.append(
        f"unique keys ({len(memories)}), qids ({len(queries)}), memory texts and query texts"
    )

    assert len(memories) >= 1000
    for m in memories:
        assert m["kind"] in ("note", "record")
        assert m["type"] in (NOTE_TYPES if m["kind"] == "note" else RECORD_TYPES), m
        assert m["lang"] in LANGS and m["text"]
        assert isinstance(m["age_days"], float) and m["age_days"] > 0
        if m["kind"] == "record":
            assert m["title"]
        else:
            assert "links" not in m and "title" not in m
    ages = [m["age_days"] for m in memories]
    assert ages == sorted(ages, reverse=True), "keys must follow creation order (oldest first)"
    res.append(
        "keys follow creation order (m0001 is the oldest); notes have no title/links, records have titles"
    )

    superseded_by: dict[str, str] = {}
    n_links = Counter()
    for m in memories:
        for link in m.get("links", []):
            lk, tgt = link.split(":")
            n_links[lk] += 1
            assert lk in LINK_KINDS
            assert tgt in by_key, link
            t = by_key[tgt]
            assert t["kind"] == "record", f"{m['key']} links to a note"
            assert t["key"] < m["key"] and t["age_days"] > m["age_days"], (
                f"{m['key']} links to a newer record"
            )
            if lk == "supersedes":
                assert tgt not in superseded_by, f"{tgt} superseded twice"
                superseded_by[tgt] = m["key"]
                assert t["type"] == m["type"] == "decision"
            if lk == "resolves":
                assert m["type"] == "fix" and t["type"] == "audit"
            if lk == "verifies":
                assert m["type"] == "verification" and t["type"] == "fix"
            if lk == "duplicates":
                assert m["type"] == t["type"]
    res.append(
        f"referential integrity: {sum(n_links.values())} links, every target an older record; "
        "supersedes decision->decision, resolves fix->audit, verifies verification->fix"
    )

    def head_of(k: str) -> str:
        while k in superseded_by:
            k = superseded_by[k]
        return k

    langs = Counter(m["lang"] for m in memories)
    for lg in ("ja", "th"):
        share = langs[lg] / len(memories)
        assert share >= 0.15, (lg, share)
    res.append(
        "language shares: "
        + ", ".join(f"{lg} {langs[lg] / len(memories):.1%}" for lg in ("en", "ja", "th"))
        + " (ja, th >= 15%)"
    )

    kinds = Counter(q["kind"] for q in queries)
    assert len(queries) >= 300
    for k in QUERY_KINDS:
        assert kinds[k] >= (20 if k == "type_filter" else 40), (k, kinds[k])
    res.append("query counts: " + ", ".join(f"{k} {kinds[k]}" for k in QUERY_KINDS))

    sid_by_key = {m["key"]: m["sid"] for m in MEMS}
    src = {q["qid"]: q for q in QUERIES}
    para_min = 99
    sup_margin = []
    outdated_pairs: dict[str, tuple[str, str, str]] = {}  # relevant key -> (partner, variant, lang)
    outdated_cross = Counter()
    for q in queries:
        rel = [by_key[k] for k in q["relevant"]]
        assert rel, q
        assert len(set(q["relevant"])) == len(rel), q
        for r in rel:
            assert r["key"] not in superseded_by, f"{q['qid']}: relevant {r['key']} is superseded"
        kind, lang, text = q["kind"], q["lang"], q["query"]
        if kind == "trigger":
            if lang == "en":
                assert len(text.split()) <= 3, q
            else:
                assert len(text) <= 16, q
        elif kind == "contextual":
            if lang == "en":
                assert 15 <= len(text.split()) <= 40, (q["qid"], len(text.split()), text)
            else:
                assert 30 <= len(text) <= 160, q
        elif kind == "paraphrase":
            for r in rel:
                assert r["lang"] == lang, q
                if lang == "en":
                    shared = en_content_words(text) & en_content_words(mem_text(r))
                    assert not shared, (
                        f"{q['qid']} paraphrase shares {shared} with {r['key']}: {text}"
                    )
                elif lang == "ja":
                    shared = {g for g in ja_key_bigrams(mem_text(r)) if g in text}
                    shared |= latin_words(text) & latin_words(mem_text(r))
                    assert not shared, (
                        f"{q['qid']} paraphrase shares {shared} with {r['key']}: {text}"
                    )
                else:
                    terms = src[q["qid"]]["terms"]
                    assert terms, f"{q['qid']}: Thai paraphrase needs key terms"
                    for t in terms:
                        assert t.replace(" ", "") in mem_text(r).replace(" ", ""), (q["qid"], t)
                    shared = {g for g in th_term_grams(terms) if g in text}
                    shared |= latin_words(text) & latin_words(mem_text(r))
                    assert not shared, (
                        f"{q['qid']} paraphrase shares {shared} with {r['key']}: {text}"
                    )
        elif kind == "crosslang":
            for r in rel:
                assert r["lang"] != lang, f"{q['qid']}: crosslang answer {r['key']} is also {lang}"
        elif kind == "buried":
            under = [by_key[k] for k in q.get("buried_under", [])]
            for r in rel:
                assert r["kind"] == "note" and r["type"] == "lesson" and r["priority"] == "high", (
                    q["qid"],
                    r["key"],
                )
            a = rel[0]
            assert len(under) >= 2, q
            for u in under:
                assert (
                    u["kind"] == "note" and u["type"] == a["type"] and u["domain"] == a["domain"]
                ), (q["qid"], u["key"])
                assert u["priority"] != "high" and u["age_days"] < a["age_days"], (
                    q["qid"],
                    u["key"],
                )
                assert u["key"] not in q["relevant"]
            newer = [
                m
                for m in memories
                if m["kind"] == "note"
                and m["type"] == a["type"]
                and m["domain"] == a["domain"]
                and m["priority"] != "high"
                and m["age_days"] < a["age_days"]
            ]
            assert len(newer) >= 2, q
        elif kind == "superseded":
            old = q["superseded_from"]
            assert old in superseded_by, f"{q['qid']}: {old} is not superseded"
            assert old not in q["relevant"]
            assert len(rel) == 1 and head_of(old) == rel[0]["key"], (
                f"{q['qid']}: relevant is not the chain head"
            )
            if lang == "en" and by_key[old]["lang"] == "en":
                qw = en_content_words(text)
                m_old = len(qw & en_content_words(mem_text(by_key[old])))
                m_new = len(qw & en_content_words(mem_text(rel[0])))
                sup_margin.append(m_old - m_new)
                assert m_old >= 1, (q["qid"], "superseded query must echo the old wording")
        elif kind == "type_filter":
            assert q.get("type"), q
            for r in rel:
                assert r["type"] == q["type"], (q["qid"], r["key"], r["type"])
        elif kind == "outdated":
            variant = q.get("variant")
            assert variant in OUTDATED_VARIANTS and variant == src[q["qid"]]["variant"], q
            assert len(rel) == 1, q
            a = rel[0]
            b = by_key[SIDS[src[q["qid"]]["pair"]]["key"]]
            assert b["key"] not in q["relevant"], q
            for m in (a, b):
                assert m["kind"] == "note" and m["type"] in ("knowledge", "lesson", "conclusion"), (
                    q["qid"],
                    m["key"],
                )
            assert (a["type"], a["domain"], a["lang"]) == (b["type"], b["domain"], b["lang"]), (
                q["qid"],
                a["key"],
                b["key"],
            )
            assert a["split"] == b["split"], (q["qid"], "pair straddles the splits")
            old, new = (b, a) if variant == "replaced" else (a, b)
            assert 60 <= old["age_days"] <= 500 and 0.5 <= new["age_days"] <= 20, (
                q["qid"],
                old,
                new,
            )
            assert old["key"] < new["key"], q["qid"]
            assert outdated_pairs.setdefault(a["key"], (b["key"], variant, a["lang"])) == (
                b["key"],
                variant,
                a["lang"],
            ), (q["qid"], "a note belongs to two pairs")
            if lang != a["lang"]:
                assert variant == "replaced", (q["qid"], "controls are same-language")
                outdated_cross[lang, a["lang"]] += 1
    res.append("every relevant key exists and no relevant memory is superseded by a newer decision")
    res.append(
        "trigger queries are short (en <= 3 words); contextual queries are 15-40 words (en) / 30-160 chars (ja, th)"
    )
    res.append(
        "paraphrase: en queries share no content word (lower-cased, stop-words removed, crude suffix stemming) "
        "with any relevant memory; ja queries share no kanji/katakana bigram or Latin word with the answer; "
        "th queries contain no 3-character substring of the answer's listed key terms and no shared Latin word"
    )
    res.append("crosslang: every relevant memory is in a language other than the query's")
    res.append(
        "buried: every relevant memory is an old high-priority lesson; each query lists >= 2 newer non-high "
        "lessons of the same domain (buried_under), which are not relevant"
    )
    res.append(
        "superseded: superseded_from is superseded, relevant is exactly the head of its chain; English queries "
        f"echo the old decision's wording (old-minus-head content-word overlap: min {min(sup_margin)}, "
        f"mean {sum(sup_margin) / len(sup_margin):.2f})"
    )
    res.append("type_filter: every relevant memory has the filtered type")
    relevant_anywhere = {k for q in queries for k in q["relevant"]}
    partners = [p for p, _, _ in outdated_pairs.values()]
    assert len(set(partners) | set(outdated_pairs)) == 2 * len(outdated_pairs), "pairs overlap"
    for partner, variant, _ in outdated_pairs.values():
        if variant == "replaced":
            assert partner not in relevant_anywhere, (
                f"replaced note {partner} is relevant somewhere"
            )
    n_var = Counter(v for _, v, _ in outdated_pairs.values())
    res.append(
        f"outdated: {n_var['replaced']} replaced pairs, relevant is only the newer note (0.5-20 days) "
        "of a same-type, same-domain, same-language pair whose older note (60-500 days) is relevant "
        f"to no query; {n_var['control']} control pairs, relevant is only the older note, both notes "
        f"still valid; {sum(outdated_cross.values())} cross-language queries reuse replaced pairs ("
        + ", ".join(f"{a}->{b} {n}" for (a, b), n in sorted(outdated_cross.items()))
        + ")"
    )

    for q in queries:
        assert q["split"] in ("dev", "test"), q
        for k in q["relevant"]:
            assert by_key[k]["split"] == q["split"], f"{q['qid']}: relevant {k} in the other split"
    per = Counter((q["split"], q["kind"]) for q in queries)
    for k in QUERY_KINDS:
        assert per["dev", k] >= 10 and per["test", k] >= 10, (k, per["dev", k], per["test", k])
    pair_split = Counter(
        (by_key[k]["split"], variant, lg) for k, (_, variant, lg) in outdated_pairs.items()
    )
    for variant in OUTDATED_VARIANTS:
        for lg in ("en", "ja", "th"):
            d, t = pair_split["dev", variant, lg], pair_split["test", variant, lg]
            assert d + t > 0 and abs(d - t) <= 1, (variant, lg, d, t)
    res.append(
        "dev/test split by memory: every query's relevant memories lie in the query's split; "
        + ", ".join(f"{k} {per['dev', k]}/{per['test', k]}" for k in QUERY_KINDS)
        + " (dev/test); outdated pairs split evenly per language and variant ("
        + ", ".join(
            f"{v} {lg} {pair_split['dev', v, lg]}/{pair_split['test', v, lg]}"
            for v in OUTDATED_VARIANTS
            for lg in ("en", "ja", "th")
        )
        + ")"
    )
    return res


def render_stats(memories: list[dict], queries: list[dict], checks: list[str]) -> str:
    L = []
    L.append("# Benchmark data statistics\n")
    L.append(
        "Generated by `bench/quality/generate_corpus.py` (seed %d). Do not edit by hand.\n" % SEED
    )
    L.append(f"## Memories: {len(memories)}\n")

    def table(title, counter, total):
        L.append(f"### {title}\n")
        L.append("| value | count | share |")
        L.append("|---|---:|---:|")
        for k, v in sorted(counter.items(), key=lambda kv: (-kv[1], str(kv[0]))):
            L.append(f"| {k if k != '' else '(none)'} | {v} | {v / total:.1%} |")
        L.append("")

    table("By kind", Counter(m["kind"] for m in memories), len(memories))
    table("By kind/type", Counter(f"{m['kind']}/{m['type']}" for m in memories), len(memories))
    table("By language", Counter(m["lang"] for m in memories), len(memories))
    table("By priority", Counter(m["priority"] for m in memories), len(memories))
    table("By domain", Counter(m["domain"] for m in memories), len(memories))
    links = Counter(l.split(":")[0] for m in memories for l in m.get("links", []))
    table("Links by kind", links, max(1, sum(links.values())))
    sup = {
        l.split(":")[1] for m in memories for l in m.get("links", []) if l.startswith("supersedes:")
    }
    heads = [
        m
        for m in memories
        if m["type"] == "decision"
        and m["key"] not in sup
        and any(l.startswith("supersedes:") for l in m.get("links", []))
    ]
    by_key = {m["key"]: m for m in memories}

    def chain_len(m):
        n = 1
        while True:
            prev = [l.split(":")[1] for l in m.get("links", []) if l.startswith("supersedes:")]
            if not prev:
                return n
            m = by_key[prev[0]]
            n += 1

    table("Decision chains by length", Counter(chain_len(h) for h in heads), len(heads))
    words = [len(m["text"].split()) for m in memories if m["lang"] == "en"]
    chars = [len(m["text"]) for m in memories if m["lang"] != "en"]
    L.append(
        f"Text length: en {min(words)}-{max(words)} words (mean {sum(words) / len(words):.1f}); "
        f"ja/th {min(chars)}-{max(chars)} characters (mean {sum(chars) / len(chars):.1f}).\n"
    )
    L.append(
        f"Age: {min(m['age_days'] for m in memories):.2f}-{max(m['age_days'] for m in memories):.2f} days.\n"
    )

    L.append(f"## Queries: {len(queries)}\n")
    table("By kind", Counter(q["kind"] for q in queries), len(queries))
    table("By language", Counter(q["lang"] for q in queries), len(queries))
    table("By split", Counter(q["split"] for q in queries), len(queries))
    L.append("### Kind x language\n")
    L.append("| kind | en | ja | th | total |")
    L.append("|---|---:|---:|---:|---:|")
    for k in QUERY_KINDS:
        c = Counter(q["lang"] for q in queries if q["kind"] == k)
        L.append(f"| {k} | {c['en']} | {c['ja']} | {c['th']} | {sum(c.values())} |")
    L.append("")
    table(
        "Number of relevant memories per query",
        Counter(len(q["relevant"]) for q in queries),
        len(queries),
    )
    table(
        "Type filters",
        Counter(q["type"] for q in queries if q.get("type")),
        max(1, sum(1 for q in queries if q.get("type"))),
    )
    cov = {k for q in queries for k in q["relevant"]}
    L.append(
        f"Distinct memories used as answers: {len(cov)} of {len(memories)}; the rest act only as distractors.\n"
    )
    L.append("## Validation (all asserted by the generator)\n")
    for c in checks:
        L.append(f"- OK: {c}")
    L.append("")
    return "\n".join(L)


def dump_jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--check", action="store_true", help="verify that the files on disk are up to date"
    )
    args = ap.parse_args()
    memories, queries = build()
    checks = validate(memories, queries)
    files = {
        DATA / "memories.jsonl": dump_jsonl(memories),
        DATA / "queries.jsonl": dump_jsonl(queries),
        DATA / "STATS.md": render_stats(memories, queries, checks),
    }
    if args.check:
        stale = [
            p.name
            for p, body in files.items()
            if not p.exists() or p.read_text(encoding="utf-8") != body
        ]
        if stale:
            print("out of date:", ", ".join(stale))
            return 1
        print("data files are up to date")
        return 0
    DATA.mkdir(parents=True, exist_ok=True)
    for p, body in files.items():
        p.write_text(body, encoding="utf-8", newline="\n")
    print(f"wrote {len(memories)} memories and {len(queries)} queries to {DATA}")
    for c in checks:
        print(" -", c)
    return 0


if __name__ == "__main__":
    sys.exit(main())
