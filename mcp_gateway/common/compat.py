"""Every private attribute of a third-party library that kioku relies on, in one place.

Each helper below names the library attribute it reaches into and why no public API
serves; ``tests/test_compat.py`` has one test per attribute, run against the installed
versions, so an upgrade that moves one fails there by name instead of deep inside a
request. Nothing else in kioku touches a library's private names.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

# -- uvicorn: the HTTP protocol class --------------------------------------------------


def uvicorn_http_protocol() -> type[Any]:
    """uvicorn's HTTP protocol class, to subclass for the header deadline (httpguard).

    ``uvicorn.protocols.http.auto.AutoHTTPProtocol`` is importable but undocumented;
    uvicorn offers no hook between "connection made" and "request complete".
    """
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    return AutoHTTPProtocol


def awaiting_headers(protocol: Any) -> bool:
    """Whether a uvicorn protocol instance waits for a request's headers.

    Reads the private ``cycle`` (the request in progress, None before the first) and
    its ``response_complete`` flag, set by both of uvicorn's HTTP implementations.
    """
    cycle = getattr(protocol, "cycle", None)
    return cycle is None or bool(cycle.response_complete)


# -- the MCP SDK -----------------------------------------------------------------------


def lowlevel_server(server: Any) -> Any:
    """The low-level server an ``MCPServer`` drives (``_lowlevel_server``).

    ``MCPServer.run_stdio_async`` runs it over stdin/stdout only; the session socket
    runs the same server over its own streams, which needs the object itself.
    """
    return server._lowlevel_server


def wrap_session_admission(
    manager: Any, wrap: Callable[[Callable[[Any], Any]], Callable[[Any], Any]]
) -> None:
    """Replace a streamable-HTTP session manager's admission step by ``wrap(old)``.

    ``StreamableHTTPSessionManager._admit_session(requestor)`` is where the SDK applies
    its global session cap; it has no per-requestor cap and no public hook.
    """
    manager._admit_session = wrap(manager._admit_session)


def live_session_owners(manager: Any) -> Iterator[Any]:
    """The requestor of every open session of a streamable-HTTP session manager.

    Reads ``_session_owners`` (session id -> requestor) and ``_server_instances``
    (the sessions still open).
    """
    owners = manager._session_owners
    live = manager._server_instances
    return (who for sid, who in list(owners.items()) if sid in live)


# -- arq: a worker's job tasks ---------------------------------------------------------


async def drop_unstarted_jobs(worker: Any) -> int:
    """Let a signalled arq worker's job tasks end, then forget those cancelled before
    they started; returns how many. ``Worker.close`` gathers ``Worker.tasks`` (job id ->
    task, undocumented) without ``return_exceptions``: a job its SIGTERM handler
    cancelled before the task ran ends cancelled rather than logging "will be run
    again", and its CancelledError came out of ``close`` as a traceback and exit 1.
    Such a job never started, so it is still queued for the next worker."""
    tasks: dict[str, asyncio.Task[Any]] = worker.tasks
    if tasks:
        await asyncio.wait(list(tasks.values()))
    unstarted = [job_id for job_id, task in tasks.items() if task.cancelled()]
    for job_id in unstarted:
        del tasks[job_id]
    return len(unstarted)
