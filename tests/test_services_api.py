"""The use cases by name (``services.api.call``), as the admin API and an in-process CLI
run them: arguments that do not fit an operation are the caller's mistake, a fault
from inside is not dressed up as one."""

from __future__ import annotations

import pytest

from mcp_gateway.common.access import settings_scope
from mcp_gateway.common.errors import InvalidInput
from mcp_gateway.services import Services, api
from tests.conftest import Harness


@pytest.mark.parametrize(
    ("op", "args", "says"),
    [
        ("notes.add", {"txt": "typo"}, "bad arguments for notes.add"),
        ("notes.get", {}, "bad arguments for notes.get"),
        ("stats", {"extra": 1}, "bad arguments for stats"),
        ("notes.nope", {}, "unknown operation 'notes.nope'"),
    ],
)
async def test_arguments_that_do_not_fit_are_invalid_input(
    harness: Harness, op: str, args: dict[str, object], says: str
) -> None:
    services = Services.over(harness.app)
    with pytest.raises(InvalidInput, match=says):
        await api.call(services, settings_scope(harness.app.settings), op, args)


async def test_a_type_error_from_inside_is_not_bad_arguments(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    services = Services.over(harness.app)

    async def broken(*args: object, **kwargs: object) -> None:
        raise TypeError("a bug deep inside")

    monkeypatch.setattr(services.maintenance, "stats", broken)
    with pytest.raises(TypeError, match="a bug deep inside"):
        await api.call(services, settings_scope(harness.app.settings), "stats", {})


async def test_an_operation_runs_with_the_callers_scope(harness: Harness) -> None:
    services = Services.over(harness.app)
    scope = settings_scope(harness.app.settings)
    added = await api.call(
        services, scope, "notes.add", {"text": "api door note", "type": "knowledge"}
    )
    got = await api.call(services, scope, "notes.get", {"note_id": added["id"]})
    assert got["text"] == "api door note"
