"""``used=[ids]``: the assistant says which memories it used; kioku learns from it.

The assistant is the one part of the loop that knows what helped. Naming a memory it
used (on its next ``search_memory`` or ``add_note``, the calls it makes anyway) does two
things, both in the caller's own namespace only:

- the question of the search that showed the memory becomes a learned key of it
  (``stores.learned_keys``): the next rewording of that need finds it;
- a ``used_memory`` entry in the activity log: an explicit credit, which the re-ranking
  job (``jobs.priors``) weighs above the implicit "retrieved, then solved" one.

Only a memory the caller's namespace was shown by a search in the last 30 minutes can
be credited (``search.learned_keys.RecentAsks``): a client cannot credit what it never
saw, and a burst of wrong marks is bounded by the searches behind it.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

from mcp_gateway.common.access import Scope
from mcp_gateway.common.errors import InvalidInput, NotFound
from mcp_gateway.common.events import USED, Used
from mcp_gateway.services.app import AppContext

MAX_USED = 10


class UseCredited(BaseModel):
    """What ``used`` did: the ids credited, and those ignored (not shown to this caller
    by a search in the last 30 minutes, or no longer a memory it can read)."""

    credited: list[str] = []
    ignored: list[str] = []


def checked_used(given: object) -> tuple[str, ...]:
    """``used`` as distinct ids, or ``InvalidInput`` saying what to pass."""
    if given is None:
        return ()
    if (
        isinstance(given, str)
        or not isinstance(given, Sequence)
        or len(given) > MAX_USED
        or not all(isinstance(i, str) for i in given)
    ):
        raise InvalidInput(
            f"used: give a list of at most {MAX_USED} memory ids, copied from earlier "
            "search_memory results that you actually used"
        )
    return tuple(dict.fromkeys(i.strip() for i in given if i.strip()))


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
    questions: dict[str, str] = {}
    for memory_id in used:
        shown_for = learned.asks.question_for(scope.write, memory_id, now)
        question = solved_query or shown_for
        if shown_for is None or not question or not await _readable_note(app, scope, memory_id):
            out.ignored.append(memory_id)
            continue
        views, _, _ = await app.search.vectors.embed(question)
        if views:  # embedder down: the credit still counts, the key waits for next time
            await learned.store.add(
                scope.write, memory_id, question, learned.model_id, views[0], now=now
            )
        questions[memory_id] = question
        out.credited.append(memory_id)
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
