"""Browser sessions for the memory browser: signed cookies, CSRF tokens, sign-in codes.

One secret per data dir (``ui.key``, mode 0600, created on first use) signs everything,
so a session survives a gateway restart (the embedded daemon exits when idle) and
``kioku ui`` can mint a one-time sign-in code without talking to the server: whoever
can read the data dir can read every memory anyway, so the key file grants nothing new.
If the data dir is read-only, a per-process key is used (sessions end with the process).

Two keys are derived from the secret:
- the *session* key also covers a digest of the configured bearer tokens, so rotating
  or removing a token signs every browser out;
- the *sign-in* key does not, so ``kioku ui`` (which may not see the server's token
  environment) mints codes the server accepts. A code is single-use and lives 2 minutes.

Used codes and signed-out sessions are kept in the data dir (``spent``), shared by
every mount and kept across restarts. Gateways sharing a truth store (``database_url``)
keep the secret, used codes and sign-outs in it instead (``stores.signins``): a cookie
or a code from one gateway works on every other, a code works once in the whole
deployment, and a sign-out on one gateway ends the session on all of them.

Verified by tests/test_ui_units.py (tampering, expiry, reuse, token rotation),
tests/test_ui_door.py (reuse across mounts and restarts) and
tests/test_ui_gateways.py (two gateways on one PostgreSQL database).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import logging
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from mcp_gateway.common import keyfile
from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.services.app import AppContext
from mcp_gateway.services.ui_signins import deployment_secret, shared_signins
from mcp_gateway.ui.spent import SignInState, Spent

log = logging.getLogger(__name__)

KEY_FILE = "ui.key"
SESSION_TTL_S = 24 * 3600
SIGNIN_TTL_S = 120


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def load_secret(data_dir: Path) -> bytes:
    """The data dir's UI secret (``ui.key``, 0600, created on first use)."""
    return keyfile.load_secret(data_dir, KEY_FILE)


def ui_host(data_dir: Path) -> str:
    """The secret host name ``kioku ui`` serves this data dir on: ``kioku-<hex>.localhost``.

    Browsers keep cookies per host, not per port, so a session cookie set for
    ``127.0.0.1`` also went to every other local user's server on 127.0.0.1 (measured in
    Chromium). A host-only cookie for a name nobody else knows never does; browsers
    resolve every ``*.localhost`` name to loopback themselves. Derived from the data
    dir's key: stable across restarts (the cookie stays valid), unguessable without it.
    """
    secret = load_secret(data_dir)
    return "kioku-" + hmac.new(secret, b"kioku-ui-host", "sha256").hexdigest()[:20] + ".localhost"


def token_digest(settings: KiokuSettings) -> bytes:
    """A digest of every configured bearer token (order-independent)."""
    tokens = []
    if settings.http.token:
        tokens.append(settings.http.token.get_secret_value())
    tokens += [g.token.get_secret_value() for g in settings.http.grants.values()]
    return hashlib.sha256("\0".join(sorted(tokens)).encode()).digest()


@dataclass(frozen=True, slots=True)
class Session:
    grant: str
    sid: str
    expires: float


class Keys:
    """Signs and checks session cookies, CSRF tokens and sign-in codes."""

    def __init__(
        self, secret: bytes, tokens: bytes = b"", spent: SignInState | None = None
    ) -> None:
        """``spent``: where used codes and sign-outs are kept (default: this process's
        memory; ``for_settings`` uses the data dir's, shared by every mount, or the
        shared truth store's)."""
        self._session = hmac.new(secret, b"kioku-ui-session\0" + tokens, "sha256").digest()
        self._signin = hmac.new(secret, b"kioku-ui-signin", "sha256").digest()
        # cookie name differs per key: two kioku UIs on one host (cookies ignore the
        # port) never overwrite each other's session
        self.cookie_name = "kioku_session_" + hashlib.sha256(self._session).hexdigest()[:8]
        self._spent = spent or Spent(None)

    @classmethod
    def for_settings(cls, settings: KiokuSettings, app: AppContext | None = None) -> Keys:
        """The data dir's key and state; with a shared truth store (``app``'s, opened),
        the deployment's (``stores.signins``)."""
        shared = shared_signins(app) if settings.shared_store else None
        if shared is not None:
            return cls(shared.secret(), token_digest(settings), shared)
        spent = Spent.for_data_dir(settings.data_dir)
        return cls(load_secret(settings.data_dir), token_digest(settings), spent)

    # -- signed blobs ------------------------------------------------------------------
    @staticmethod
    def _sign(key: bytes, payload: dict[str, object]) -> str:
        body = _b64(json.dumps(payload, separators=(",", ":")).encode())
        mac = _b64(hmac.new(key, body.encode(), "sha256").digest())
        return f"{body}.{mac}"

    @staticmethod
    def _open(key: bytes, blob: str) -> dict[str, object] | None:
        body, _, mac = blob.partition(".")
        if not body or not mac:
            return None
        want = _b64(hmac.new(key, body.encode(), "sha256").digest())
        if not hmac.compare_digest(want, mac):
            return None
        try:
            data = json.loads(_unb64(body))
        except ValueError:
            return None
        if not isinstance(data, dict) or float(data.get("exp", 0)) < time.time():
            return None
        return data

    # -- sessions ----------------------------------------------------------------------
    def new_session(self, grant: str) -> tuple[str, Session]:
        sess = Session(grant, secrets.token_hex(16), time.time() + SESSION_TTL_S)
        cookie = self._sign(self._session, {"g": sess.grant, "sid": sess.sid, "exp": sess.expires})
        return cookie, sess

    def read_session(self, cookie: str | None) -> Session | None:
        data = self._open(self._session, cookie) if cookie else None
        if (
            data is None
            or not isinstance(data.get("g"), str)
            or not isinstance(data.get("sid"), str)
        ):
            return None
        sid = str(data["sid"])
        if self._spent.revoked(sid):
            return None
        return Session(str(data["g"]), sid, float(data["exp"]))  # type: ignore[arg-type]

    def revoke(self, sess: Session) -> None:
        """Sign-out: every mount refuses the cookie from now on, restarts included."""
        self._spent.revoke(sess.sid, sess.expires)

    def csrf_token(self, sess: Session) -> str:
        return _b64(hmac.new(self._session, b"csrf\0" + sess.sid.encode(), "sha256").digest())

    def csrf_ok(self, sess: Session, given: str) -> bool:
        return bool(given) and hmac.compare_digest(self.csrf_token(sess), given)

    # -- one-time sign-in codes -------------------------------------------------------
    def signin_code(self, grant: str, ttl_s: float = SIGNIN_TTL_S) -> str:
        payload = {"g": grant, "n": secrets.token_hex(16), "exp": time.time() + ttl_s}
        return self._sign(self._signin, payload)

    def redeem(self, code: str) -> str | None:
        """The grant a valid, unused code signs in as; a code works once."""
        data = self._open(self._signin, code)
        if data is None or not isinstance(data.get("g"), str):
            return None
        nonce = str(data.get("n", ""))
        if not nonce or not self._spent.spend_code(nonce, float(data["exp"])):  # type: ignore[arg-type]
            return None
        return str(data["g"])


def mint_signin_code(settings: KiokuSettings, grant: str) -> str:
    """A one-time code for ``grant``, from the data dir's key (``kioku ui``), or with a
    shared truth store from the deployment's secret there (any gateway accepts it)."""
    with contextlib.suppress(OSError):
        settings.data_dir.mkdir(parents=True, exist_ok=True)
    if settings.shared_store:
        return Keys(deployment_secret(settings)).signin_code(grant)
    return Keys(load_secret(settings.data_dir)).signin_code(grant)
