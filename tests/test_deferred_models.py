"""A one-shot command that only reads opens the stores without loading a model
(``open_app(models=False)``, ``embedders.deferred``); should it embed after all, the
model loads at that first text and the answer is the one a started app gives."""

from __future__ import annotations

from mcp_gateway.common.access import settings_scope
from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.embedders.deferred import Deferred
from mcp_gateway.services import Services, api
from mcp_gateway.services.app import open_app

TEXTS = [
    "Deploys to staging need the VPN; the runner times out without it.",
    "The billing service moved to Postgres 16 for MERGE.",
    "Rotate the TLS certificates on the load balancer every 60 days.",
]
QUERY = "why does the staging deploy time out"


async def _search(settings: KiokuSettings, **options: bool) -> tuple[list[str], Services]:
    async with open_app(settings, run_jobs=False, **options) as app:
        services = Services.over(app)
        out = await api.call(
            services, settings_scope(settings), "notes.search", {"query": QUERY, "top": 3}
        )
        return [r["id"] for r in out["results"]], services


async def test_a_reading_command_loads_no_model_and_a_search_loads_it(
    settings: KiokuSettings,
) -> None:
    async with open_app(settings) as app:
        services = Services.over(app)
        for text in TEXTS:
            await api.call(services, settings_scope(settings), "notes.add", {"text": text})
        await app.settle()
    async with open_app(settings, run_jobs=False, models=False) as app:
        embedders = [app.embedder, *(c.embedder for c in app.channels)]
        assert all(isinstance(e, Deferred) for e in embedders)
        assert [c.channel.name for c in app.channels] == list(settings.embedder.channels)
        listed = await api.call(Services.over(app), settings_scope(settings), "notes.list", {})
        assert len(listed["notes"]) == 3
        assert not any(e.started for e in embedders if isinstance(e, Deferred))
    started, _ = await _search(settings)
    later, services = await _search(settings, models=False)
    assert later == started and later
    deferred = services.app.embedder
    assert isinstance(deferred, Deferred) and deferred.started


async def test_a_new_data_dir_loads_the_models_at_once(settings: KiokuSettings) -> None:
    """No index yet: its dimension comes from the model, so the model starts."""
    async with open_app(settings, run_jobs=False, models=False) as app:
        assert not isinstance(app.embedder, Deferred)
        assert app.embedder.dim == 384
