"""The owner's last ``initialize`` answer, kept in the data dir for the stdio proxy.

An editor waits on ``initialize`` at each launch. When the proxy has to start the daemon,
the daemon's imports and the opening of the stores and the model take seconds; the
answer itself depends on none of it (server name and version, capabilities,
instructions, the protocol version negotiated from the client's). So the proxy answers
it from this file at once, and replays the ``initialize`` to the daemon when it is up,
swallowing the daemon's reply (as it does after a reconnect); that reply refreshes the
file. The file is keyed by what the answer depends on: the client's protocol version,
kioku's version, and the installed code of the server and of the MCP SDK (their files'
modification times), so an upgrade or an edited checkout never gets an old answer twice.
Private (0600) like the rest of the data dir.
"""

from __future__ import annotations

import importlib.util
import json
import logging
from pathlib import Path
from typing import Any

from mcp_gateway import __version__
from mcp_gateway.common.fsperms import write_atomic

log = logging.getLogger(__name__)

FILE = "initialize.json"
_SERVER = Path(__file__).resolve().parents[1] / "protocol" / "server.py"


def _key(protocol_version: str) -> str:
    spec = importlib.util.find_spec("mcp")  # located, not imported: the proxy stays light
    stamps = []
    for path in (_SERVER, Path(spec.origin) if spec and spec.origin else None):
        try:
            stamps.append(str(path.stat().st_mtime_ns) if path else "-")
        except OSError:
            stamps.append("-")
    return "|".join([protocol_version, __version__, str(_SERVER), *stamps])


def requested_version(message: dict[str, Any]) -> str | None:
    params = message.get("params")
    version = params.get("protocolVersion") if isinstance(params, dict) else None
    return version if isinstance(version, str) else None


def cached(data_dir: Path, protocol_version: str) -> dict[str, Any] | None:
    """The answer kept for this client's protocol version, or None."""
    try:
        kept = json.loads((data_dir / FILE).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(kept, dict) or kept.get("key") != _key(protocol_version):
        return None
    result = kept.get("result")
    return result if isinstance(result, dict) else None


def remember(data_dir: Path, protocol_version: str, result: dict[str, Any]) -> None:
    """Keep ``result`` (an ``initialize`` reply's) for the next launch; never raises."""
    if not data_dir.is_dir() or cached(data_dir, protocol_version) == result:
        return
    try:
        text = json.dumps({"key": _key(protocol_version), "result": result}, ensure_ascii=False)
        write_atomic(data_dir / FILE, text)
    except OSError as exc:
        log.info("initialize answer not kept (%s)", exc)
