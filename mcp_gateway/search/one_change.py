"""Two notes that are one sentence with one thing changed: two facts, not a rewording.

The e5 cosine of "Resize images to 1024 pixels ..." and "Resize videos to 1024 pixels
..." (0.994) is above most rewordings' (0.91-0.99), so no cosine tells them apart
(bench/quality/neardup). What does: a rewording keeps the names and the content words
and changes the rest ("Never" -> "Do not", a clause reordered), or changes so much that
the two texts are not near-identical; a related fact in the same sentence swaps a
content word ("images" -> "videos", "月曜" -> "日曜"), a name ("Atlantis" for "the CI
pipeline") or where the negation sits. ``differ`` says so from the two texts alone (no
model), in English, Japanese and Thai:

- a *salient* word swapped: each text has a name the other lacks. Salient: a Latin
  word with a digit or a connector, with two capitals or more, or capitalised inside a
  sentence; in a Japanese or Thai text every Latin word (tools and names are written
  so). "Lacks": not found in the other text with case, spaces and connectors ignored,
  so "force-push" matches "force push".
- in near-identical texts (token-sequence likeness at least ``NEAR_IDENTICAL``): a
  content unit swapped (each side of the difference holds one: an English word that is
  not a function word; a kanji or katakana; a Thai letter outside the listed function
  words), or a negation added, dropped or moved. Content only added on one side
  ("Always rebuild ...") is a rewording.

The lists and ``NEAR_IDENTICAL`` were chosen on the dev half of the pairs; the account
is in docs/ranking.md ("Near-duplicates, folded").
"""

from __future__ import annotations

import difflib
import re
import unicodedata

from mcp_gateway.indexing.lexical import WORD, runs

# likeness (difflib ratio of the unit sequences) from which two texts count as one
# sentence edited; chosen on the dev pairs with the fold threshold
NEAR_IDENTICAL = 0.75

_EN_FUNCTION = frozenset(
    """a an the this that these those it its is are was were be been being am do does
    did doing done have has had having will would shall should can could may might must
    to of in on at by for with from as into onto over under than then so because since
    while when if or and but also only just even all any each every some such here there
    i we you he she they me us them my our your their his her which who whom what where
    how why instead once until before after up down out off again still yet very too
    more most less already first always""".split()
)
_EN_NEGATION = frozenset("not never no dont cannot without nor".split())
_JA_NEGATION = ("ない", "せず", "禁止", "ません", "なし", "無し")
_TH_NEGATION = ("ไม่", "ห้าม", "อย่า")
_TH_FUNCTION = tuple(
    """ให้ ต้อง ไว้ เพราะ ทุกครั้ง แทน ได้ จะ ก็ ที่ ของ เป็น แล้ว เท่านั้น อย่างมากที่สุด
    เข้า ไป มา กัน และ หรือ แต่ ถ้า เมื่อ ตอน ด้วย ใน บน จาก ถึง กับ นี้ นั้น มัน เลย ก่อน
    อยู่ ทำ ยัง ถูก โดน ทั้ง อัน ๆ""".split()
)
# longest first, so a word is taken whole before a shorter one it starts with
_KNOWN = sorted({*_TH_FUNCTION, *_TH_NEGATION, *_JA_NEGATION}, key=len, reverse=True)
_NEGATIONS = frozenset((*_TH_NEGATION, *_JA_NEGATION))
_LOOSE = re.compile(r"[\s\-_./]")
# the apostrophe splits words: "don't" would be "don" and "t", two content words
_CONTRACTIONS = (
    (re.compile(r"\bwon['’]t\b"), "will not"),
    (re.compile(r"\bcan['’]t\b"), "can not"),
    (re.compile(r"n['’]t\b"), " not"),
)

CONTENT, FUNCTION, NEGATION = "c", "f", "n"


def _loose(text: str) -> str:
    return _LOOSE.sub("", unicodedata.normalize("NFKC", text).casefold())


def _hiragana(ch: str) -> bool:
    return 0x3040 <= ord(ch) <= 0x309F


def salient(text: str) -> set[str]:
    """The names of ``text``: identifiers, versions, products, tools (module docstring)."""
    parts = list(runs(unicodedata.normalize("NFKC", text)))
    spaced_only = all(kind == WORD for kind, _ in parts)
    out: set[str] = set()
    for i, (kind, word) in enumerate(parts):
        if kind != WORD:
            continue
        if (
            not spaced_only
            or any(c.isdigit() or c in "_-." for c in word)
            or sum(c.isupper() for c in word) >= 2
            or (i > 0 and word[0].isupper())
        ):
            out.add(word)
    return out


def units(text: str) -> list[tuple[str, str]]:
    """(unit, CONTENT/FUNCTION/NEGATION): Latin words; in Japanese and Thai runs the
    listed words whole, else single characters (hiragana are function units)."""
    out: list[tuple[str, str]] = []
    text = unicodedata.normalize("NFKC", text).casefold()
    for pattern, replacement in _CONTRACTIONS:
        text = pattern.sub(replacement, text)
    for kind, run in runs(text):
        if kind == WORD:
            if run in _EN_NEGATION:
                out.append((run, NEGATION))
            else:
                out.append((run, FUNCTION if run in _EN_FUNCTION or run.isdigit() else CONTENT))
            continue
        i = 0
        while i < len(run):
            word = next((w for w in _KNOWN if run.startswith(w, i)), None)
            if word is not None:
                out.append((word, NEGATION if word in _NEGATIONS else FUNCTION))
                i += len(word)
            else:
                out.append((run[i], FUNCTION if _hiragana(run[i]) else CONTENT))
                i += 1
    return out


def _inflected(a: list[str], b: list[str]) -> bool:
    """One English word each side sharing 4 letters or more at the start
    ("uploading" / "upload"): the same word, inflected."""
    if len(a) != 1 or len(b) != 1 or not (a[0].isascii() and b[0].isascii()):
        return False
    return len(_common_prefix(a[0], b[0])) >= 4


def _common_prefix(a: str, b: str) -> str:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


def salient_swapped(a: str, b: str) -> bool:
    loose_a, loose_b = _loose(a), _loose(b)
    return any(_loose(w) not in loose_b for w in salient(a)) and any(
        _loose(w) not in loose_a for w in salient(b)
    )


def edited(a: str, b: str) -> tuple[float, bool, bool]:
    """(likeness, a content unit swapped, a negation changed) of the two unit sequences."""
    x, y = units(a), units(b)
    matcher = difflib.SequenceMatcher(None, [u for u, _ in x], [u for u, _ in y], autojunk=False)
    lost = gained = negation = False
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            continue
        left = [u for u, tag in x[i1:i2] if tag == CONTENT]
        right = [u for u, tag in y[j1:j2] if tag == CONTENT]
        if not _inflected(left, right):
            lost, gained = lost or bool(left), gained or bool(right)
        if any(t == NEGATION for _, t in x[i1:i2]) != any(t == NEGATION for _, t in y[j1:j2]):
            negation = True
    return matcher.ratio(), lost and gained, negation


def differ(a: str, b: str) -> bool:
    """True when ``a`` and ``b`` are one sentence with one thing changed (a name, a
    content word, a negation): different facts however high their cosine."""
    if salient_swapped(a, b):
        return True
    likeness, swapped, negation = edited(a, b)
    return likeness >= NEAR_IDENTICAL and (swapped or negation)
