"""Who may read and write which namespace.

Over stdio the scope comes from settings (``namespace`` + ``read_namespaces``). Over
HTTP each bearer token maps to a grant (``http_auth``), and every use case receives the
grant's ``Scope``. A record or note outside the caller's namespaces gets exactly the
answer of an unknown id (``unseen``), so ids from another namespace cannot even be
probed.
"""

from __future__ import annotations

from dataclasses import dataclass

from mcp_gateway.common.errors import NotFound
from mcp_gateway.common.settings import KiokuSettings

DEFAULT_GRANT = "default"


def unseen(what: str, kind: str = "") -> NotFound:
    """The one answer for an unknown id AND for an id in a namespace the caller cannot
    read: identical text, so the answer tells nothing about other tenants. ``kind``
    lets each door add its own hint (``errors.NotFound``)."""
    return NotFound(f"no {what}", kind=kind)


@dataclass(frozen=True, slots=True)
class Scope:
    write: str
    read: tuple[str, ...]  # own namespace first

    def can_read(self, namespace: str) -> bool:
        return namespace in self.read

    def require_read(self, namespace: str, what: str, kind: str = "") -> None:
        if namespace not in self.read:
            raise unseen(what, kind)

    def require_write(self, namespace: str, what: str, kind: str = "") -> None:
        if namespace != self.write:
            self.require_read(namespace, what, kind)
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
