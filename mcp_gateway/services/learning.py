"""``used=[ids]``: the assistant says which memories it used; kioku learns from it.

The assistant is the one part of the loop that knows what helped. Naming a memory it
used (on its next ``search_memory`` or ``add_note``, the calls it makes anyway) does two
things, both in the caller's own namespace only:

- the question of the search that showed the memory becomes a learned key of it
  (``stores.learned_keys``): the next rewording of that need finds it;
- a ``used_memory`` entry in the activity log: an explicit credit, which the re-ranking
  job (``jobs.priors``) weighs above the implicit "retrieved, then solved" one.

Only a memory the caller's namespace was shown by a search in the last 30 minutes can
be credited, once per showing (``search.recent_asks.RecentAsks``, backed by the activity
log: a restart or another gateway does not lose the searches): a client cannot credit
what it never saw, and a burst of wrong marks is bounded by the searches behind it.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

from mcp_gateway.common.access import Scope
from mcp_gateway.common.errors import NotFound
from mcp_gateway.common.events import USED, Used
from mcp_gateway.common.types import Note
from mcp_gateway.services.app import AppContext
from mcp_gateway.stores.learned_keys import LearnedKey


class KeyView(BaseModel):
    """A learned key as doors show it: the question a memory answered, where, when."""

    note_id: str
    namespace: str
    question: str
    used_at: float
    uses: int

    @classmethod
    def of(cls, key: LearnedKey) -> KeyView:
        return cls(
            note_id=key.note_id,
            namespace=key.namespace,
            question=key.question,
            used_at=key.used_at,
            uses=key.uses,
        )


class UseCredited(BaseModel):
    """What ``used`` did: the ids credited, and those ignored (not shown to this caller
    by a search in the last 30 minutes, or no longer a memory it can read)."""

    credited: list[str] = []
    ignored: list[str] = []


async def credit_used(
    app: AppContext, scope: Scope, used: Sequence[str], solved_query: str = ""
) -> UseCredited:
    """Learn from the memories ``scope`` says it used (``used`` already checked).
    The question each answered: ``solved_query`` when the call gives one (the problem
    they helped solve), else the query of the newest search that showed it."""
    out = UseCredited()
    learned = app.search.learned
    if not used or learned is None:
        return out
    now = learned.clock()
    readable = [m for m in used if await _readable_note(app, scope, m)]
    shown_for = await learned.asks.questions_for(scope.write, readable, now)
    questions: dict[str, str] = {}
    for memory_id in used:
        question = solved_query or shown_for.get(memory_id)
        if memory_id not in shown_for or not question:
            out.ignored.append(memory_id)
            continue
        questions[memory_id] = question
        out.credited.append(memory_id)
    for question in dict.fromkeys(questions.values()):
        views, _, _ = await app.search.vectors.embed(question)
        if not views:  # embedder down: the credit still counts, the key waits
            continue
        answered_by = [m for m, q in questions.items() if q == question]
        # keys that sent this need to other memories lose out to what answered it now:
        # one wrong pick misleads until the need is next answered, not for good
        for rival, asked in await learned.rivals(scope.write, views[0], answered_by):
            await learned.store.remove(scope.write, rival, asked)
        for memory_id in answered_by:
            await learned.store.add(
                scope.write, memory_id, question, learned.model_id, views[0], now=now
            )
    if out.credited:
        marked = Used(namespace=scope.write, ids=out.credited, questions=questions)
        await app.activity.append(USED, **marked.fields())
    return out


async def _readable_note(app: AppContext, scope: Scope, memory_id: str) -> bool:
    try:
        note = await app.notes.get(memory_id)
    except NotFound:
        return False  # a record, or a note deleted since: records learn no keys yet
    return scope.can_read(note.namespace)


async def keys_of(app: AppContext, scope: Scope, note_id: str) -> list[KeyView]:
    """The questions ``note_id`` answered, as learned in the namespaces ``scope`` reads;
    a note it may not read answers like an unknown id (its keys never show)."""
    note = await _note_for(app, scope, note_id)
    learned = app.search.learned
    if learned is None:
        return []
    return [KeyView.of(k) for k in await learned.store.of_note(note.id, scope.read)]


async def forget_key(app: AppContext, scope: Scope, note_id: str, question: str) -> bool:
    """Remove one learned key of ``note_id`` from the caller's own namespace."""
    note = await _note_for(app, scope, note_id)
    learned = app.search.learned
    return learned is not None and await learned.store.remove(scope.write, note.id, question)


async def newest_keys(app: AppContext, scope: Scope, limit: int = 30) -> list[KeyView]:
    """The newest learned keys of the caller's namespaces whose notes it may read."""
    learned = app.search.learned
    if learned is None:
        return []
    keys = await learned.store.newest(scope.read, limit)
    notes = await app.notes.get_many([k.note_id for k in keys])
    return [
        KeyView.of(k)
        for k in keys
        if k.note_id in notes and scope.can_read(notes[k.note_id].namespace)
    ]


async def _note_for(app: AppContext, scope: Scope, note_id: str) -> Note:
    try:
        note = await app.notes.get(str(note_id).strip(), include_deleted=True)
    except NotFound:
        note = None
    if note is None or not scope.can_read(note.namespace):
        # the same words as NoteService for an unknown id: ids cannot be probed
        raise NotFound(f"no note with id {str(note_id).strip()!r}", kind="note")
    return note
