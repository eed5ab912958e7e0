"""The memory browser's sign-in state in the truth store, for gateways that share it.

With one data dir, ``ui.key`` signs cookies and one-time codes, and ``ui-sessions.db``
beside it keeps used codes and signed-out sessions (``ui.spent``). Gateways on one
truth store each have their own data dir, so that state would be per gateway: a
browser sent by the proxy to the other gateway would hold a cookie it cannot read, a
code used on one would work again on another, and a sign-out would end the session on
one gateway only. So with a shared store (``database_url``) all three live here:

- ``ui_secret``: one random secret for the deployment, created by whoever asks first
  (``INSERT .. ON CONFLICT DO NOTHING``, then read back: every process gets the same).
  Whoever reads the truth store reads every memory anyway, so the secret there grants
  nothing new (as the key file in a data dir);
- ``ui_used_codes``: a code is spent by an ``INSERT`` on its nonce, which succeeds once
  in the whole deployment, committed before the browser gets its cookie;
- ``ui_revoked_sessions``: a sign-out, read by every gateway on every request.

Rows leave with their expiry. The methods are synchronous (the UI calls them in a
worker thread), through ``Database.transaction_sync``/``run_sync``.
"""

from __future__ import annotations

import secrets
import sqlite3
import time

from mcp_gateway.stores.db import Database


class SharedSignins:
    """Used codes, sign-outs and the UI secret of a deployment (see the module docstring)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def secret(self) -> bytes:
        """The deployment's UI secret (created on first use, the same for everyone)."""
        fresh = secrets.token_bytes(32).hex()

        def get(conn: sqlite3.Connection) -> str:
            conn.execute(
                "INSERT INTO ui_secret(id, secret) VALUES (1, ?) ON CONFLICT(id) DO NOTHING",
                (fresh,),
            )
            return str(conn.execute("SELECT secret FROM ui_secret WHERE id = 1").fetchone()[0])

        return bytes.fromhex(self.db.transaction_sync(get))

    def spend_code(self, nonce: str, expires: float) -> bool:
        """True the first time ``nonce`` is spent anywhere in the deployment."""

        def spend(conn: sqlite3.Connection) -> bool:
            conn.execute("DELETE FROM ui_used_codes WHERE expires < ?", (time.time(),))
            cur = conn.execute(
                "INSERT INTO ui_used_codes(nonce, expires) VALUES (?, ?) "
                "ON CONFLICT(nonce) DO NOTHING",
                (nonce, expires),
            )
            return bool(cur.rowcount == 1)

        return self.db.transaction_sync(spend)

    def revoke(self, sid: str, expires: float) -> None:
        def revoke(conn: sqlite3.Connection) -> None:
            conn.execute("DELETE FROM ui_revoked_sessions WHERE expires < ?", (time.time(),))
            conn.execute(
                "INSERT INTO ui_revoked_sessions(sid, expires) VALUES (?, ?) "
                "ON CONFLICT(sid) DO NOTHING",
                (sid, expires),
            )

        self.db.transaction_sync(revoke)

    def revoked(self, sid: str) -> bool:
        sql = "SELECT 1 FROM ui_revoked_sessions WHERE sid = ?"
        return bool(self.db.run_sync(lambda c: c.execute(sql, (sid,)).fetchall()))
