"""Typed errors. Every error a user can cause says what to do about it.

Exception map (where each is raised, and what the caller sees):

- ``KiokuError``            base; an MCP tool turns any of these into ``is_error=True``
  with the message alone (never a traceback).
- ``InvalidInput``          bad tool or CLI argument: empty/huge text, unknown type,
  priority, relation, status; malformed ``link``; ``top`` out of range.
- ``NotFound``              unknown note or record id (or one the caller may not read:
  the same words). The message names the id only; ``kind`` ("note", "record") lets
  each door add its own hint (MCP: the tool to call; CLI: the ``kioku`` command).
- ``Conflict``              duplicate edge, self-link, ``supersedes``/``duplicates`` cycle.
- ``IndexMismatch``         the index was built with another embedding model or dimension;
  fix with ``kioku reindex``.
- ``StoreUnavailable``      data dir not writable, disk full, index locked by another process.
- ``EmbedderUnavailable``   the embedding provider is down; adds are still stored and are
  indexed once it is back (transient: jobs retry).
- ``IndexJoining``          (a ``StoreUnavailable``) a gateway that shares the truth store
  and has not yet caught up with it since it started: a search is refused, with how far
  behind it is, instead of answering from a half-built index; retry in a moment.
- ``IndexBehind``           (a ``StoreUnavailable``) a gateway on a Qdrant server every
  gateway shares, whose writer has not applied what this search read as committed
  within ``index.writer_wait_s``: refused, with how far behind, never answered from
  an index missing it; retry in a moment.
- ``AccessDenied``          a token tried to read or write a namespace it has no grant for.
"""

from __future__ import annotations


def quoted(value: object, most: int = 60) -> str:
    """``value`` as an error message quotes it: its ``repr``, cut to ``most`` characters
    with its length said. A message must not grow with hostile input: a tool error is
    scrubbed, logged and sent back whole (a 100,000-character "type" made one 100 KB)."""
    if isinstance(value, str) and len(value) > most:
        return f"{value[:most]!r}... ({len(value):,} characters)"
    shown = repr(value)
    return shown if len(shown) <= most else f"{shown[:most]}... (cut)"


class KiokuError(Exception):
    """Base class; ``str(err)`` is the user-facing message."""


class InvalidInput(KiokuError, ValueError):
    pass


class NotFound(KiokuError, LookupError):
    def __init__(self, message: str = "", *, kind: str = "") -> None:
        super().__init__(message)
        self.kind = kind


class Conflict(KiokuError):
    pass


class IndexMismatch(KiokuError):
    pass


class StoreUnavailable(KiokuError):
    pass


class IndexJoining(StoreUnavailable):
    pass


class IndexBehind(StoreUnavailable):
    pass


class EmbedderUnavailable(KiokuError):
    pass


class EmbedderStopping(EmbedderUnavailable):
    """The process is stopping: its embedders start no further call. What was skipped
    is done by the next start (the embedding job, reconcile), so it is no fault."""


class AccessDenied(KiokuError, PermissionError):
    pass
