"""The use cases by name, for callers outside the owner process.

``call(services, scope, op, args)`` runs one operation and returns plain JSON. The
owner's admin API serves it over its Unix socket, and a CLI that owns the stores for a
moment calls it in-process: both paths run the same code and return the same JSON.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any, get_type_hints

from pydantic import BaseModel, ValidationError

from mcp_gateway.common.access import Scope
from mcp_gateway.common.errors import InvalidInput
from mcp_gateway.services import Services

# op -> (service, method, whether the method takes the caller's scope first)
OPERATIONS: dict[str, tuple[str, str, bool]] = {
    "notes.add": ("notes", "add", True),
    "notes.search": ("notes", "search", True),
    "notes.get": ("notes", "get", True),
    "notes.update": ("notes", "update", True),
    "notes.delete": ("notes", "delete", True),
    "notes.list": ("notes", "list", True),
    "records.add": ("records", "add", True),
    "records.link": ("records", "link", True),
    "records.show": ("records", "show", True),
    "records.search": ("records", "search", True),
    "records.update": ("records", "update", True),
    "records.graph": ("records", "graph", True),
    "stats": ("maintenance", "stats", False),
    "doctor": ("maintenance", "doctor", False),
    "export_context": ("context", "export", False),
    "reconcile": ("maintenance", "reconcile", False),
    "transfer.export": ("transfer", "export", False),
    "transfer.import": ("transfer", "import_items", False),
}


async def call(services: Services, scope: Scope, op: str, args: dict[str, Any]) -> Any:
    """Run ``op`` with ``args``; arguments that do not fit its signature are the
    caller's mistake (InvalidInput), anything raised from inside is not."""
    target = OPERATIONS.get(op)
    if target is None:
        raise InvalidInput(f"unknown operation {op!r}; known: {', '.join(sorted(OPERATIONS))}")
    service, name, scoped = target
    method: Callable[..., Awaitable[Any]] = getattr(getattr(services, service), name)
    lead = (scope,) if scoped else ()
    try:
        args = _typed(method, args)
        inspect.signature(method).bind(*lead, **args)
    except (TypeError, ValidationError) as exc:
        raise InvalidInput(f"bad arguments for {op}: {_said(exc)}") from exc
    return to_json(await method(*lead, **args))


def _typed(method: Callable[..., Any], args: dict[str, Any]) -> dict[str, Any]:
    """``args`` with the fields of the operation's typed input (``common.inputs``: a
    parameter annotated with a model) gathered into that model; the wire stays flat
    (``notes.add`` takes ``text=..., type=...``)."""
    hints = get_type_hints(method)
    models = [
        (name, hint)
        for name, hint in hints.items()
        if name != "return" and isinstance(hint, type) and issubclass(hint, BaseModel)
    ]
    if not models:
        return args
    ((name, model),) = models  # one typed input per operation
    own = set(inspect.signature(method).parameters)
    rest = {k: v for k, v in args.items() if k not in own}
    return {**{k: v for k, v in args.items() if k in own}, name: model.model_validate(rest)}


def _said(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors()
        )
    return str(exc)


def to_json(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list):
        return [to_json(v) for v in value]
    return value
