from __future__ import annotations

import math
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_gateway.indexing.lexical import (
    AVGDL,
    K1,
    B,
    sparse_document,
    sparse_query,
    term_id,
    tokenize,
)


def test_english_words_numbers_and_plurals() -> None:
    toks = tokenize("Hit HTTP 429 after 24 PATCH requests, v2 queries!")
    for t in ("http", "429", "24", "patch", "request", "v2", "query", "hit"):
        assert t in toks
    assert "requests" not in toks
    # words that merely end in s are left alone
    assert tokenize("status class bus is") == ["status", "class", "bus", "is"]


def test_identifiers_split_and_kept_whole() -> None:
    toks = tokenize("set rate_limit in kebab-case config.toml via getUserName")
    for t in ("rate_limit", "rate", "limit", "kebab-case", "kebab", "case"):
        assert t in toks
    for t in ("config.toml", "config", "toml", "getusername", "get", "user", "name"):
        assert t in toks
    # a trailing connector is punctuation, not part of the identifier
    assert tokenize("done. next-") == ["done", "next"]


def test_nfkc_and_casefold() -> None:
    assert tokenize("ＣＩ Straße") == ["ci", "strasse"]
    # half-width katakana normalise to full-width before bigramming
    assert tokenize("ｶﾀｶﾅ") == tokenize("カタカナ") == ["カタ", "タカ", "カナ"]


def test_japanese_bigrams_and_single_char() -> None:
    assert tokenize("確認") == ["確認"]
    assert tokenize("鍵") == ["鍵"]
    assert tokenize("デプロイ") == ["デプ", "プロ", "ロイ"]


def test_mixed_japanese_and_latin() -> None:
    toks = tokenize("デプロイ前にCIを確認")
    assert "ci" in toks
    assert "確認" in toks and "デプ" in toks
    # a query for part of the sentence shares terms with it
    assert set(sparse_query("CIを確認").indices) <= set(
        sparse_document("デプロイ前にCIを確認").indices
    )


def test_thai_trigrams_and_mixed() -> None:
    assert tokenize("ใช้ git rebase แทน merge") == ["ใช้", "git", "rebase", "แทน", "merge"]
    # ที่ไม่ใช้ : trigrams over code points (tone marks included)
    run = "ที่ไม่ใช้"
    assert tokenize(run) == [run[i : i + 3] for i in range(len(run) - 2)]
    doc = sparse_document("เราตกลงกันว่าจะใช้ git rebase แทนการ merge เสมอ")
    assert set(sparse_query("แทนการ merge").indices) <= set(doc.indices)


def test_control_chars_and_emoji_are_separators() -> None:
    assert tokenize("a\x00b\x1b[31mc\u200b🎉d\ufeff") == ["a", "b", "31mc", "d"]
    assert tokenize("\ud800 lone surrogate") == ["lone", "surrogate"]
    assert tokenize("🎉🚀") == []


def test_empty_text() -> None:
    for text in ("", "   \n\t", "!!! ---"):
        assert sparse_document(text).is_empty()
        assert sparse_query(text).is_empty()


def test_weights() -> None:
    doc = sparse_document("cache cache miss")
    dl = 3
    norm = K1 * (1 - B + B * dl / AVGDL)
    weights = dict(zip(doc.indices, doc.values, strict=True))
    assert math.isclose(weights[term_id("cache")], 2 * (K1 + 1) / (2 + norm))
    assert math.isclose(weights[term_id("miss")], 1 * (K1 + 1) / (1 + norm))
    q = sparse_query("cache cache miss")
    assert q.values == [1.0, 1.0]
    assert q.indices == sorted({term_id("cache"), term_id("miss")})


def test_term_ids_are_stable_across_processes() -> None:
    code = (
        "from mcp_gateway.indexing.lexical import term_id; "
        "print(term_id('rebase'), term_id('確認'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert [int(x) for x in out] == [term_id("rebase"), term_id("確認")]
    assert 0 <= term_id("x") < 2**31


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_any_text_gives_valid_vectors(text: str) -> None:
    for vec in (sparse_document(text), sparse_query(text)):
        assert vec.indices == sorted(set(vec.indices))
        assert len(vec.indices) == len(vec.values)
        assert all(0 <= i < 2**31 for i in vec.indices)
        assert all(math.isfinite(v) and v > 0 for v in vec.values)
