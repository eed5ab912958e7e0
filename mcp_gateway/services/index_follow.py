"""Gateways on one truth store follow the index that any of them adopted.

``kioku reindex`` runs in the gateway it is sent to: that gateway builds a new
collection and adopts it for the deployment (``index.active`` and ``index.model`` in
the shared ``meta`` table). Every other gateway checks that choice every
``FOLLOW_EVERY_S`` and, when it differs from the collection it serves:

- with its own embedded index (the default: an index in each data dir), it builds its
  own copy under the adopted name, blue/green as a reindex does (the old index serves
  until the copy is complete; stored vectors, so nothing is embedded again for the same
  model), and sets only its own cursors;
- with one Qdrant server for all (``qdrant_url``), the adopted collection is already
  built: it opens it and swaps it in (the adopting gateway keeps the old collection
  ``reindex.SHARED_SWAP_GRACE_S`` longer, so no search meets a missing one);
- if the adopted model is not the one this gateway embeds with (a model switch done on
  one gateway), it cannot build that index: it says so in its log and keeps serving
  its current one until it is restarted with the same embedder settings.

A gateway restarted after the switch opens the adopted collection at start-up as any
gateway does.
"""

from __future__ import annotations

import logging
from typing import Literal

import anyio

from mcp_gateway.index import catalog
from mcp_gateway.services.reindex import Rebuilder, embedder_spec

log = logging.getLogger(__name__)

FOLLOW_EVERY_S = 5.0

Followed = Literal["same", "busy", "mismatch", "opened", "rebuilt", "failed"]


async def follow_adopted(rebuilder: Rebuilder, every_s: float = FOLLOW_EVERY_S) -> None:
    """The gateway's periodic check (its lifetime)."""
    warned: set[str] = set()
    while True:
        await anyio.sleep(every_s)
        try:
            await adopt_elsewhere(rebuilder, warned)
        except Exception:
            log.exception("following the deployment's index failed; retrying")


async def adopt_elsewhere(rebuilder: Rebuilder, warned: set[str] | None = None) -> Followed:
    """Serve the collection the deployment adopted, if this gateway does not yet."""
    app = rebuilder.app
    if rebuilder.status.state == "running":
        return "busy"  # this gateway's own rebuild adopts (or follows) at its end
    info = await catalog.live_info(app.db, app.settings)
    current = app.index.spec
    if info.collection == current.collection:
        return "same"
    if info.model_id != app.embedder.model_id or info.dim != app.embedder.dim:
        if warned is None or info.collection not in warned:
            log.error(
                "another gateway adopted the index %s for %s@%s, but this one embeds with "
                "%s@%s: it keeps serving %s until it is restarted with the same embedder",
                info.collection,
                info.model_id,
                info.dim,
                app.embedder.model_id,
                app.embedder.dim,
                current.collection,
            )
            if warned is not None:
                warned.add(info.collection)
        return "mismatch"
    log.info("another gateway adopted the index %s: following it", info.collection)
    if app.settings.qdrant_url:
        spec = embedder_spec(app, info.collection)
        old = app.index.swap(await catalog.open_index(app.settings, spec))
        await old.close()  # the adopting gateway removes the collection itself
        await app.reconcile()
        return "opened"
    status = await rebuilder.rebuild(adopted=info.collection)
    return "rebuilt" if status.state == "done" else "failed"
