"""Lifecycle graph logic: "replaced-by" walks, head resolution and cycle checks.

``supersedes`` and ``duplicates`` both retire a record, in opposite edge directions:
``B supersedes A`` retires A in favour of B; ``A duplicates C`` retires A in favour of
the canonical C. Both are read as one directed "replaced-by" graph (A -> B, A -> C).
A record is *current* when it has no replaced-by edge; its *head* is where the
replaced-by walk ends. Refusing cycles in that combined graph guarantees every walk
ends at a current record, even across a mixed supersedes/duplicates chain.

The functions are pure: ``replaced_by(id)`` supplies a record's successors, preferred
first (the store reads them from SQL inside its transaction).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from mcp_gateway.records.model import REPLACING_RELATIONS

log = logging.getLogger(__name__)

Successors = Callable[[str], Sequence[str]]

# A guard only: the cycle check keeps walks finite; this bounds a corrupted graph.
MAX_WALK = 10_000


def replaced_by_edge(source: str, relation: str, target: str) -> tuple[str, str] | None:
    """The replaced-by edge (old, new) an edge adds, or None if it retires nothing."""
    if relation not in REPLACING_RELATIONS:
        return None
    return (target, source) if relation == "supersedes" else (source, target)


def head_path(start: str, replaced_by: Successors) -> list[str]:
    """Ids from ``start`` to its head, following the preferred successor each step."""
    path = [start]
    seen = {start}
    while len(path) < MAX_WALK:
        successors = replaced_by(path[-1])
        if not successors:
            return path
        nxt = next((s for s in successors if s not in seen), None)
        if nxt is None:  # only reachable if a cycle slipped past the checks
            log.warning("replaced-by cycle at %s; stopping the head walk there", path[-1])
            return path
        path.append(nxt)
        seen.add(nxt)
    log.warning("head walk from %s exceeded %d steps", start, MAX_WALK)
    return path


def heads(starts: Sequence[str], replaced_by: Successors, budget: int = MAX_WALK) -> dict[str, str]:
    """The head of every start, memoised: a chain is walked once however many of its
    records are among ``starts`` (a 1,500-long supersedes chain whose every version
    matched a search used to cost 1,500 walks of up to 1,500 steps each, holding the
    database lock for seconds). ``budget`` bounds the steps of all walks together; a
    start whose walk runs out of it is left out (and logged)."""
    head_of: dict[str, str] = {}
    steps = 0
    for start in starts:
        path: list[str] = []
        on_path: set[str] = set()
        node, head = start, None
        while head is None:
            if node in head_of:
                head = head_of[node]
                break
            path.append(node)
            on_path.add(node)
            if steps >= budget:
                break
            steps += 1
            nxt = next((s for s in replaced_by(node) if s not in on_path), None)
            if nxt is None:
                head = node
            else:
                node = nxt
        if head is None:
            log.warning("head resolution stopped after %d steps; %s left out", budget, start)
            continue
        for seen in path:
            head_of[seen] = head
    return {s: head_of[s] for s in starts if s in head_of}


def reaches(start: str, goal: str, replaced_by: Successors) -> bool:
    """Whether ``goal`` is reachable from ``start`` over replaced-by edges."""
    stack = [start]
    seen: set[str] = set()
    while stack:
        node = stack.pop()
        if node == goal:
            return True
        if node in seen:
            continue
        seen.add(node)
        stack.extend(replaced_by(node))
    return False


def creates_cycle(source: str, relation: str, target: str, replaced_by: Successors) -> bool:
    """Whether adding ``source -relation-> target`` closes a replaced-by cycle."""
    edge = replaced_by_edge(source, relation, target)
    if edge is None:
        return False
    old, new = edge
    return reaches(new, old, replaced_by)
