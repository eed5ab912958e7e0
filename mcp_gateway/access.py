"""Who may read and write which namespace.

Over stdio the scope comes from settings (``namespace`` + ``read_namespaces``). Over
HTTP each bearer token maps to a grant; the token verifier puts the grant's name in
the access token's ``client_id``, and every tool resolves its scope from it. A record
or note outside the caller's namespaces is reported as not found, so ids from another
namespace cannot even be probed.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken

from .errors import NotFound
from .settings import KiokuSettings

DEFAULT_GRANT = "default"


@dataclass(frozen=True, slots=True)
class Scope:
    write: str
    read: tuple[str, ...]  # own namespace first

    def can_read(self, namespace: str) -> bool:
        return namespace in self.read

    def require_read(self, namespace: str, what: str) -> None:
        if namespace not in self.read:
            raise NotFound(f"no {what} (or it belongs to a namespace you cannot read)")

    def require_write(self, namespace: str, what: str) -> None:
        if namespace != self.write:
            self.require_read(namespace, what)
            raise NotFound(f"{what} belongs to another namespace ({namespace}): read-only to you")


def settings_scope(settings: KiokuSettings) -> Scope:
    own = settings.namespace
    return Scope(own, (own, *[n for n in settings.read_namespaces if n != own]))


def grant_scopes(settings: KiokuSettings) -> dict[str, Scope]:
    scopes = {DEFAULT_GRANT: settings_scope(settings)}
    for name, grant in settings.http.grants.items():
        read = (grant.namespace, *[n for n in grant.read if n != grant.namespace])
        scopes[name] = Scope(grant.namespace, read)
    return scopes


def request_scope(settings: KiokuSettings) -> Scope:
    """The scope of the current request: its token's grant, else the settings' scope."""
    token = get_access_token()
    if token is None:
        return settings_scope(settings)
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

    async def verify_token(self, token: str) -> AccessToken | None:
        given = token.encode()
        matched = ""
        for secret, name in self._tokens:
            if hmac.compare_digest(given, secret):
                matched = name
        if not matched:
            return None
        return AccessToken(token="<redacted>", client_id=matched, scopes=["kioku"])
