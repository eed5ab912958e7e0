"""One redaction rule for every URL and secret kioku may print (issue 47).

- To a **tenant** (an MCP tool error, the browser): nothing of a connection URL at all
  -- no password, user, host, port or database name. Errors say what happened in
  general words ("the database is unavailable; retry in a moment").
- To the **owner** (the server's log, ``kioku status``, CLI errors): the scheme, host,
  port and database name (``owner_url``); never the user's password, wherever the URL
  carries it (``user:pw@`` or ``?password=...``), nor any other query parameter.
- Any text quoting a URL or a driver's error passes through ``scrub``, which removes the
  password of the URLs it was given and of any ``scheme://user:pw@`` in it.

Nothing here raises: a malformed URL (an unterminated ``[IPv6`` host, a port that is no
number) is described, never echoed (``url_problem``).
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlsplit

MASK = "***"
# Every part is bounded: unbounded, each start in a long run of letters was scanned to its
# end for "://" (quadratic: a 100,000-letter tool argument quoted in an error held the
# event loop 55 s). No scheme is over 32 characters; a longer user or password than these
# is still masked where its URL is one ``scrub`` is given (the configured ones).
_USERINFO = re.compile(
    r"(?P<scheme>[a-z][a-z0-9+.-]{0,31}://)"
    r"(?P<user>[^:@/\s]{0,128}):(?P<pw>[^@\s]{0,512})@",
    re.I,
)
_QUERY_SECRET = re.compile(r"(?P<key>(?:password|sslpassword|passfile|token)=)[^&\s'\"]*", re.I)


def url_problem(url: str) -> str | None:
    """Why ``url`` is not a usable ``scheme://[user[:pw]@]host[:port]/db`` URL, in words
    that quote none of it; None when it is."""
    try:
        parts = urlsplit(url)
        port = parts.port  # ValueError: not a number or out of range
    except ValueError as exc:
        text = str(exc)
        if "IPv6" in text:
            return "its [IPv6] host has no closing ']'"
        if "Port" in text or "port" in text:
            return "its port is not a number from 1 to 65535"
        return "it cannot be read as a URL"
    if not parts.hostname and not _socket_dir(url):
        return "it names no host"
    if port is not None and not 0 < port < 65536:
        return "its port is not a number from 1 to 65535"
    return None


def _socket_dir(url: str) -> bool:
    """A ``host=/run/postgresql`` query (a Unix socket) stands for the host."""
    try:
        return any(k == "host" for k, _ in parse_qsl(urlsplit(url).query))
    except ValueError:
        return False


def owner_url(url: str) -> str:
    """``scheme://host:port/db`` of ``url``: what the owner's log may show."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or "local socket"
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "(a malformed URL)"
    if ":" in host:
        host = f"[{host}]"
    return f"{parts.scheme}://{host}{port}{parts.path}"


def secrets_of(url: str) -> list[str]:
    """The secret values ``url`` carries (its password, in userinfo or query)."""
    found: list[str] = []
    match = _USERINFO.search(url)
    if match and match.group("pw"):
        found.append(match.group("pw"))
    query = url.split("?", 1)[1] if "?" in url else ""
    for key, value in parse_qsl(query, keep_blank_values=False):
        if key.lower() in ("password", "sslpassword", "token") and value:
            found.append(value)
    return found


def scrub(text: str, *urls: str | None) -> str:
    """``text`` with the passwords of ``urls`` and of any URL it quotes masked."""
    for url in urls:
        for secret in secrets_of(url or ""):
            text = text.replace(secret, MASK)
    text = _USERINFO.sub(lambda m: f"{m.group('scheme')}{m.group('user')}:{MASK}@", text)
    return _QUERY_SECRET.sub(lambda m: f"{m.group('key')}{MASK}", text)
