"""Is a word a name? What two vocabularies say about a Latin-script word out of context.

A made-up ticket label, a product or a tool name (``zqzwkdriqyaf``, ``qdrant``,
``uvicorn``) names one thing; an English word (``forever``, ``sourdough``) is a topic,
even where one memory alone holds it. Two signals, both shipped with the package:

- **a dictionary**: the whole words of BERT's uncased WordPiece vocabulary
  (``minilm_vocab.txt``, ~21,700 words of 4+ letters), with plural, ``-ed`` and
  ``-ing`` forms folded to them;
- **how the multilingual e5 vocabulary spells it**: the SentencePiece-unigram
  log-probability of the lowercase word's best segmentation, per character. Common
  words of any Latin-script language are one or two frequent pieces (``sourdough``
  -3.8, ``spreadsheet`` -2.9); letters in an order no language uses cost more (random
  12-letter strings: median -5.7, 99 % at or below -4.2; words of the dictionary above
  -4.25: 94 % of 20,365).

A word is a name when it is in neither: not a dictionary word and its spelling costs at
most ``NAME_LOGP`` a character. Acronyms of five letters or fewer (``CORS``, ``PDPA``) are
abbreviations of topics, not names. Measured on the bench sets' queries against their
memories (bench/LOG.md).
"""

from __future__ import annotations

import functools
import threading
from pathlib import Path

from mcp_gateway.embedders.e5_tokenizer import UnigramTokenizer

VOCAB = Path(__file__).with_name("minilm_vocab.txt")
# Per character, at most: a name (chosen on the dev queries of the bench sets, where
# -4.0 pinned a non-answer, "cutoff"; bench/LOG.md)
NAME_LOGP = -4.25
MIN_LETTERS = 4
ACRONYM_MAX = 5

_lock = threading.Lock()


@functools.cache
def _dictionary() -> frozenset[str]:
    with VOCAB.open(encoding="utf-8") as fh:
        return frozenset(w for w in (line.strip() for line in fh) if w.isalpha() and len(w) >= 3)


@functools.cache
def _tokenizer() -> UnigramTokenizer:
    """The e5 tokenizer (shared with the e5 engine and the static table when loaded)."""
    from mcp_gateway.embedders import e5_tokenizer
    from mcp_gateway.embedders.e5_onnx import model_path
    from mcp_gateway.graphs import e5_file

    path = model_path("original")  # every variant spells with the same vocabulary
    with _lock:
        return e5_tokenizer.shared(path, lambda: e5_file.load(path).vocab)


def in_dictionary(word: str) -> bool:
    """``word`` (lowercase) or its stem is a whole word of the English dictionary."""
    words = _dictionary()
    if word in words:
        return True
    stems = []
    if word.endswith("ies"):
        stems.append(word[:-3] + "y")
    if word.endswith("s"):
        stems += [word[:-1], word[:-2]]
    if word.endswith("ed"):
        stems += [word[:-2], word[:-1]]
    if word.endswith("ing"):
        stems += [word[:-3], word[:-3] + "e"]
    return any(s in words for s in stems)


def spelling_logp(word: str) -> float:
    """The unigram log-probability per character of ``word``'s best e5 segmentation."""
    tok = _tokenizer()
    ids = tok.encode(word)
    return tok.piece_score(ids) / max(1, len(word))


@functools.lru_cache(maxsize=4096)
def is_name(word: str) -> bool:
    """``word`` (a spaced-script word as written) is a name: letters only, 4 or more,
    not an acronym, in no dictionary and spelt as no language spells (module docstring).
    False, not an error, where the e5 vocabulary is not installed."""
    if len(word) < MIN_LETTERS or not word.isalpha():
        return False
    if word.isupper() and len(word) <= ACRONYM_MAX:
        return False
    lower = word.casefold()
    if in_dictionary(lower):
        return False
    try:
        return spelling_logp(lower) <= NAME_LOGP
    except (OSError, ValueError):  # the model file unreadable: no name rule, never an error
        return False
