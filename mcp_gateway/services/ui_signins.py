"""The memory browser's sign-in state where gateways share a truth store.

The browser door (``ui.session``) keeps its secret, used codes and sign-outs in the data
dir; with a shared store (``database_url``) they are the deployment's, in
``stores.signins``. This is the door's way to them (doors open no table themselves).
"""

from __future__ import annotations

from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.services.app import AppContext
from mcp_gateway.stores.db import Database
from mcp_gateway.stores.signins import SharedSignins


def shared_signins(app: AppContext | None) -> SharedSignins | None:
    """The deployment's sign-in state, when ``app``'s truth store is shared."""
    if app is None or not app.settings.shared_store:
        return None
    return SharedSignins(app.db)


def deployment_secret(settings: KiokuSettings) -> bytes:
    """The deployment's UI secret, opening the shared store for a moment
    (``kioku ui --link`` beside a gateway)."""
    db = Database(settings.database)
    db.open_sync()
    try:
        return SharedSignins(db).secret()
    finally:
        db.close_sync()
