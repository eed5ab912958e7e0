"""The use cases by name, for callers outside the owner process.

``call(services, scope, op, args)`` runs one operation and returns plain JSON. The
owner's admin API serves it over its Unix socket, and a CLI that owns the stores for a
moment calls it in-process: both paths run the same code and return the same JSON.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel

from ..access import Scope
from ..errors import InvalidInput
from . import Services

Operation = Callable[[Services, Scope, dict[str, Any]], Awaitable[Any]]

OPERATIONS: dict[str, Operation] = {
    "notes.add": lambda s, sc, a: s.notes.add(sc, **a),
    "notes.search": lambda s, sc, a: s.notes.search(sc, **a),
    "notes.get": lambda s, sc, a: s.notes.get(sc, **a),
    "notes.update": lambda s, sc, a: s.notes.update(sc, **a),
    "notes.delete": lambda s, sc, a: s.notes.delete(sc, **a),
    "notes.list": lambda s, sc, a: s.notes.list(sc, **a),
    "records.add": lambda s, sc, a: s.records.add(sc, **a),
    "records.link": lambda s, sc, a: s.records.link(sc, **a),
    "records.show": lambda s, sc, a: s.records.show(sc, **a),
    "records.search": lambda s, sc, a: s.records.search(sc, **a),
    "records.update": lambda s, sc, a: s.records.update(sc, **a),
    "records.graph": lambda s, sc, a: s.records.graph(sc, **a),
    "stats": lambda s, sc, a: s.maintenance.stats(),
    "doctor": lambda s, sc, a: s.maintenance.doctor(),
    "export_context": lambda s, sc, a: s.maintenance.export_context(),
    "reconcile": lambda s, sc, a: s.maintenance.reconcile(),
    "transfer.export": lambda s, sc, a: s.transfer.export(),
    "transfer.import": lambda s, sc, a: s.transfer.import_items(**a),
}


async def call(services: Services, scope: Scope, op: str, args: dict[str, Any]) -> Any:
    operation = OPERATIONS.get(op)
    if operation is None:
        raise InvalidInput(f"unknown operation {op!r}; known: {', '.join(sorted(OPERATIONS))}")
    try:
        out = await operation(services, scope, dict(args))
    except TypeError as exc:
        raise InvalidInput(f"bad arguments for {op}: {exc}") from exc
    return to_json(out)


def to_json(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list):
        return [to_json(v) for v in value]
    return value
