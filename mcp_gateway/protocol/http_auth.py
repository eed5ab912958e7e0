"""Bearer tokens over HTTP: each token maps to a grant, each grant to a ``Scope``.

The token verifier puts the grant's name in the access token's ``client_id``; the MCP
tools and the memory browser resolve the caller's scope from it.
"""

from __future__ import annotations

import hmac

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken

from mcp_gateway.common.access import DEFAULT_GRANT, Scope, grant_scopes, settings_scope
from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.protocol.session_scope import session_scope


def request_scope(settings: KiokuSettings) -> Scope:
    """The scope of the current request: its token's grant, else its stdio session's
    (``session_scope``), else the settings' scope."""
    token = get_access_token()
    if token is None:
        return session_scope() or settings_scope(settings)
    scopes = grant_scopes(settings)
    scope = scopes.get(token.client_id)
    if scope is None:  # a verified token always names a grant; refuse if not
        return Scope(write="", read=())
    return scope


class GrantTokenVerifier:
    """Maps bearer tokens to grant names. Every token is compared in constant time and
    all of them are always compared, so timing tells nothing about which one matched."""

    def __init__(self, settings: KiokuSettings) -> None:
        self._tokens: list[tuple[bytes, str]] = []
        if settings.http.token:
            self._tokens.append((settings.http.token.get_secret_value().encode(), DEFAULT_GRANT))
        for name, grant in settings.http.grants.items():
            self._tokens.append((grant.token.get_secret_value().encode(), name))

    def __bool__(self) -> bool:
        return bool(self._tokens)

    def grant_of(self, token: str) -> str:
        """The grant ``token`` names, or "" for none (the same work either way)."""
        given = token.encode()
        matched = ""
        for secret, name in self._tokens:
            if hmac.compare_digest(given, secret):
                matched = name
        return matched

    async def verify_token(self, token: str) -> AccessToken | None:
        matched = self.grant_of(token)
        if not matched:
            return None
        return AccessToken(token="<redacted>", client_id=matched, scopes=["kioku"])
