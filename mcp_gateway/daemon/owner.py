"""The owner of a data dir: the one process that opens its stores and serves everyone.

Whichever way kioku runs -- the shared local daemon behind ``kioku serve`` (stdio
proxies), ``kioku serve --http``, or ``kioku serve --standalone`` -- the process that
owns the data dir holds the exclusive ``flock`` on ``gateway.lock`` for its whole life
(the kernel drops it on any exit, SIGKILL included) and listens on the data dir's Unix
socket (0600) with three things on it:

- ``/api``: the admin API (``admin``), for the CLI, ``kioku status`` and ``kioku stop``;
- ``/ui``: the memory browser (``kioku ui``);
- ``/mcp``: MCP over stateless streamable HTTP;

and one MCP session per stdio proxy on the session socket beside it (``session_socket``).

``--http`` adds the TCP listener (bearer tokens, MCP sessions) beside it. The owner's
socket is listened on only after the stores are open, so a successful ``connect`` there
means "ready". The session socket listens from the start: an editor waits on
``initialize`` at each launch, so that and the tool list are answered while the model
loads, and the rest waits for the stores (``session_socket.Opening``).
Every other process (CLI commands, proxies) talks to the owner; workers write to the
truth store, which the owner applies (``applier``).
"""

from __future__ import annotations

from mcp_gateway.common import startup_gc

if __name__ == "__main__":  # the daemon (``spawn_daemon``): until its stores are open
    startup_gc.hold()

import asyncio
import importlib
import json
import logging
import os
import signal
import socket
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any

import anyio
import uvicorn
from mcp.server.mcpserver import MCPServer
from starlette.applications import Starlette
from starlette.routing import Mount

from mcp_gateway.common import fsperms, heap, logbounds
from mcp_gateway.common.errors import KiokuError
from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.daemon import local_gateway as gw
from mcp_gateway.daemon import owner_watch, request_context
from mcp_gateway.daemon.admin import OwnerOnly, admin_app
from mcp_gateway.daemon.owner_state import OwnerKind, OwnerState, info_path, read_owner
from mcp_gateway.daemon.session_socket import Opening, serve_sessions
from mcp_gateway.protocol import httpguard
from mcp_gateway.protocol.server import (
    check_http,
    create_server,
    http_verifier,
    local_transport_security,
    transport_security,
)
from mcp_gateway.services import Services
from mcp_gateway.services.app import open_app
from mcp_gateway.services.index_follow import follow_adopted

log = logging.getLogger(__name__)

# Imported once the stores are open, in a thread (``_serve_opened``), not at the owner's
# start: an editor's first search waits on that start, and it needs none of them (the
# memory browser's pages and templates: ~0.1 s of CPU, bench/LOG.md). uvicorn is not
# among them: the MCP SDK imports it anyway.
LATER = ("mcp_gateway.ui", "mcp_gateway.protocol.grant_gate")

EXIT_OK, EXIT_LOST_ELECTION, EXIT_STARTUP_FAILED = 0, 0, 3


def _uvicorn(
    app: Any, settings: KiokuSettings, door: httpguard.Door, *, unix: bool, **options: Any
) -> uvicorn.Server:
    config = uvicorn.Config(
        app,
        log_level="warning",
        lifespan="off",
        timeout_graceful_shutdown=10,
        access_log=False,
        # header and body deadlines and the door's connection cap (slowloris, slow
        # bodies, floods); on the Unix socket it also drops another uid's connections
        http=httpguard.guarded_protocol(door, peer_check=unix),
        backlog=httpguard.BACKLOG,
        **options,
    )
    return uvicorn.Server(config)


def door(settings: KiokuSettings, name: str, doors: int) -> httpguard.Door:
    """A listener's limits: the HTTP settings, the cap within the open-file limit."""
    http = settings.http
    cap = min(http.max_connections, httpguard.fd_budget(doors))
    limits = httpguard.Limits(http.header_timeout_s, http.body_timeout_s, cap)
    return httpguard.Door(name, limits)


async def _serve(
    settings: KiokuSettings,
    bound: tuple[socket.socket, socket.socket],
    state: OwnerState,
    stdio: Callable[[Services], Awaitable[None]] | None,
    gone: Callable[[], str | None] = lambda: None,
) -> None:
    """Serve until stopped. The session socket (the editors' proxies) listens before the
    stores and the model are open: it answers ``initialize`` and the lists at once and
    holds every other request until they are (``Opening``); the other listeners start
    once they are open."""
    sock, session_sock = bound
    httpguard.quiet_accept_errors(asyncio.get_running_loop())
    doors = _doors(state)
    services = Services.unopened()
    local = create_server(settings, services=services)
    opening = Opening()
    sessions_scope = anyio.CancelScope()
    sessions_done = anyio.Event()

    async def sessions() -> None:
        try:
            with sessions_scope:
                cap = door(settings, "session.sock", doors).cap
                await serve_sessions(local, session_sock, state, opening, cap)
        finally:
            sessions_done.set()

    async def stop_sessions() -> None:
        sessions_scope.cancel()
        with anyio.CancelScope(shield=True):
            await sessions_done.wait()

    async with anyio.create_task_group() as outer:
        outer.start_soon(sessions)
        with anyio.CancelScope() as serving:
            outer.start_soon(_watch_signal, state, opening, serving)
            try:
                await _serve_opened(
                    settings, sock, state, stdio, gone, services, local, opening, stop_sessions
                )
            except BaseException as exc:
                reason = _kioku_error(exc)
                # the requests held while the stores opened get the reason, not a broken line
                opening.fail(str(reason) if reason is not None else "the owner stopped")
                with anyio.move_on_after(1, shield=True):
                    await opening.answered()
                raise
            finally:
                state.stop.set()  # ends the signal watcher too
                await stop_sessions()


async def _watch_signal(state: OwnerState, opening: Opening, serving: anyio.CancelScope) -> None:
    """SIGTERM or SIGINT (``run_owner``'s handler): stop. While the stores still open
    that cancels the opening, which nothing else would end (the listeners that handle
    signals once serving do not run yet: an editor's daemon told to stop while loading
    its model used to come up and serve anyway)."""
    while not state.stop.is_set():
        if state.signalled:
            state.stop.set()
            if not opening.is_open:
                serving.cancel()
            return
        await anyio.sleep(0.05)


async def _serve_opened(
    settings: KiokuSettings,
    sock: socket.socket,
    state: OwnerState,
    stdio: Callable[[Services], Awaitable[None]] | None,
    gone: Callable[[], str | None],
    services: Services,
    local: MCPServer[Services],
    opening: Opening,
    stop_sessions: Callable[[], Awaitable[None]],
) -> None:
    async with AsyncExitStack() as stack:
        app = await stack.enter_async_context(open_app(settings))
        # the sessions end before the stores close (last in, first out)
        stack.push_async_callback(stop_sessions)
        # Serve once the start-up reconcile has put back whatever a crash left out of
        # the index, so "answered" means "every acknowledged note is searchable"
        # (bounded: a very large data dir still comes up, and finishes it while serving).
        with anyio.move_on_after(settings.local_gateway.start_timeout_s / 2):
            await app.reconciled.wait()
        services.fill(app)
        # the owner socket accepts from now on (uvicorn serves what waits in the backlog
        # once it starts): a session's answer never comes before the CLI's socket does
        sock.listen(64)
        opening.opened()
        startup_gc.release()  # the start's objects frozen before the held requests run
        # the requests held meanwhile run on the loop while these load beside them
        await anyio.to_thread.run_sync(_import_later)
        from mcp_gateway.protocol.grant_gate import GrantGate
        from mcp_gateway.ui import mount_ui, ui_mount

        if services.rebuild.mend_channels(app.spawn):
            log.warning(
                "building the index's missing dense channels in the background "
                "(searches go without them until it is done)"
            )
        if settings.index.graph_check_s > 0:
            every = settings.index.graph_check_s
            app.spawn(lambda: services.rebuild.watch_graph(every))
        if settings.shared_store:  # an index another gateway adopted (kioku reindex)
            app.spawn(lambda: follow_adopted(services.rebuild))
        local_http = local.streamable_http_app(
            stateless_http=True,
            json_response=True,
            transport_security=local_transport_security(gw.GATEWAY_HOST),
        )
        await stack.enter_async_context(local.session_manager.run())
        # the memory browser: on the socket for `kioku ui` (one-time links, no tokens)...
        ui_local = ui_mount(settings, app, verifier=None)
        routes = [
            Mount("/api", app=admin_app(services, state)),
            ui_local,
            # MCP on the socket has the owner's full scope: the owner key, like /api
            Mount("/", app=OwnerOnly(local_http, settings.data_dir)),
        ]
        # Proxies keep one connection alive (stdio_proxy): uvicorn closes an idle one after
        # 5 s by default, i.e. a reconnect between most of an assistant's calls.
        servers = [
            _uvicorn(
                owner_watch.Activity(Starlette(routes=routes), state),
                settings,
                door(settings, "gateway.sock", _doors(state)),
                unix=True,
                timeout_keep_alive=3600,
            )
        ]
        listeners: list[list[socket.socket] | None] = [[sock]]
        if state.kind == "http":
            remote = create_server(settings, http=True, services=services)
            security = transport_security(settings)
            remote_http = remote.streamable_http_app(transport_security=security)
            # ...and beside /mcp on the TCP port, signed in with the same bearer tokens
            hosts = security.allowed_hosts if security.enable_dns_rebinding_protection else None
            verifier = http_verifier(settings)
            mount_ui(remote_http, settings, app, verifier=verifier, allowed_hosts=hosts)
            await stack.enter_async_context(remote.session_manager.run())
            httpguard.limit_sessions(remote.session_manager, settings.http.max_sessions_per_grant)
            gated: Any = owner_watch.Activity(remote_http, state)
            if verifier is not None:  # outermost: a request past its grant's cap costs least
                gated = GrantGate(
                    gated, verifier.grant_of, settings.http.max_pending_bodies_per_grant
                )
            servers.append(
                _uvicorn(
                    gated,
                    settings,
                    door(settings, f"http port {settings.http.port}", _doors(state)),
                    unix=False,
                    host=settings.http.host,
                    port=settings.http.port,
                    timeout_keep_alive=settings.http.idle_timeout_s,
                )
            )
            listeners.append(None)
        # Listeners end gracefully (in-flight requests finish); the helpers are cancelled.
        async with anyio.create_task_group() as listening:
            for server, socks in zip(servers, listeners, strict=True):
                listening.start_soon(_run_server, server, socks)
            async with anyio.create_task_group() as helpers:
                if stdio is not None:
                    helpers.start_soon(owner_watch.until_done, stdio(services), state)
                if state.kind == "daemon" and settings.local_gateway.idle_exit_s > 0:
                    helpers.start_soon(
                        owner_watch.watch_idle, state, settings.local_gateway.idle_exit_s
                    )
                helpers.start_soon(owner_watch.watch_gone, state, gone)
                helpers.start_soon(
                    heap.trim_when_quiet,
                    lambda: state.requests + heap.work(),
                    lambda: (
                        state.in_flight == 0
                        and time.monotonic() - state.last_request > heap.QUIET_S
                    ),
                    state.stop,
                )
                await owner_watch.watch_stop(state, servers)
                helpers.cancel_scope.cancel()


def _import_later() -> None:
    for name in LATER:
        importlib.import_module(name)


def _doors(state: OwnerState) -> int:
    """Listeners sharing the open-file limit: the two sockets, and the HTTP port."""
    return 3 if state.kind == "http" else 2


async def _run_server(server: uvicorn.Server, socks: list[socket.socket] | None) -> None:
    async with anyio.create_task_group() as tg:
        tg.start_soon(httpguard.deepen_queues, server)
        await server.serve(sockets=socks)


def run_owner(
    settings: KiokuSettings,
    kind: OwnerKind,
    *,
    stdio: Callable[[Services], Awaitable[None]] | None = None,
    lock_fd: int | None = None,
) -> int:
    """Own the data dir until stopped; the exit code for the process. ``lock_fd``: the
    lock its spawner took for it (``local_gateway.spawn_daemon``)."""
    paths = gw.GatewayPaths.for_settings(settings)
    if lock_fd is not None:
        fd: int | None = lock_fd if gw.adopt(lock_fd) else None
    else:
        try:
            fd = gw.acquire(paths.lock, 0.0)
        except OSError as exc:
            log.error("%s%s is not writable (%s)", gw.CANNOT_START, paths.lock, exc.strerror)
            return EXIT_STARTUP_FAILED
    if fd is None:
        if kind == "daemon":
            log.info("another kioku owns %s; leaving it to that one", settings.data_dir)
            return EXIT_LOST_ELECTION
        log.error("%s%s", gw.CANNOT_START, busy_message(settings))
        return EXIT_STARTUP_FAILED
    state = OwnerState(kind=kind)
    httpguard.raise_open_file_limit()  # before the doors size their caps from it
    if kind == "http":
        state.http_url = f"http://{settings.http.host}:{settings.http.port}/mcp"
        try:
            check_http(settings)
        except KiokuError as exc:
            log.error("%s%s", gw.CANNOT_START, exc)
            os.close(fd)
            return EXIT_STARTUP_FAILED
    try:
        sock_path = paths.make_socket_path()
        session_path = sock_path.with_name(gw.SESSION_SOCKET)
        sock, session_sock = gw.bind(sock_path), gw.bind(session_path)
    except OSError as exc:
        log.error("%scannot create the owner socket (%s)", gw.CANNOT_START, exc.strerror)
        os.close(fd)
        return EXIT_STARTUP_FAILED
    inodes = {path: os.stat(path).st_ino for path in (sock_path, session_path)}
    # the owner's own settings, for a proxy to name the ones it sets otherwise (0600)
    info = {**state.public(), "settings": request_context.owner_view(settings)}
    gw.write_private(info_path(paths), json.dumps(info))
    log.info("kioku %s pid %d owns %s", kind, state.pid, settings.data_dir)

    def stopping(signum: int, _frame: object) -> None:
        log.info("signal %d: stopping", signum)
        state.signalled = True  # a flag only: _watch_signal acts on it in the loop

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, stopping)
    try:
        gone = owner_watch.gone_check(settings, fd, inodes)
        anyio.run(_serve, settings, (sock, session_sock), state, stdio, gone)
    except (KiokuError, BaseExceptionGroup) as exc:
        reason = _kioku_error(exc)
        if reason is None:
            raise
        log.error("%s%s", gw.CANNOT_START, reason)
        return EXIT_STARTUP_FAILED
    finally:
        for path, inode in inodes.items():
            gw.unlink_if_ours(path, inode)
        sock.close()
        session_sock.close()
        info_path(paths).unlink(missing_ok=True)
        gw.drop_private_dir(paths, sock_path.parent)
        os.close(fd)  # releases the lock last: the stores are closed by now
    log.info("kioku %s stopped", kind)
    from mcp_gateway.embedders.lanes import exit_if_busy

    exit_if_busy(EXIT_OK)  # the batch a stop abandoned is not waited for
    return EXIT_OK


def _kioku_error(exc: BaseException) -> KiokuError | None:
    """The KiokuError behind a failure, also when task groups wrapped it."""
    if isinstance(exc, KiokuError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = _kioku_error(inner)
            if found is not None:
                return found
    return None


def busy_message(settings: KiokuSettings) -> str:
    paths = gw.GatewayPaths.for_settings(settings)
    owner = read_owner(paths) or {}
    pid, kind = owner.get("pid", "?"), owner.get("kind", "kioku")
    return (
        f"{settings.data_dir} is owned by another kioku process (pid {pid}, {kind}); "
        "CLI commands and `kioku serve` talk to it. Stop it with `kioku stop` "
        f"(or `kill {pid}`) to run this one instead"
    )


def serve(settings: KiokuSettings, *, http: bool, standalone: bool = False) -> int:
    """``kioku serve``: a stdio proxy to the shared daemon (default), or an owner itself
    (``--http``, ``--standalone``)."""
    if http:
        return run_owner(settings, "http")
    from mcp_gateway.daemon.stdio_proxy import proxies, run_proxy

    if not standalone and proxies(settings):
        # Several editors, one embedded memory: proxy to the data dir's shared daemon.
        run_proxy(settings)
        return EXIT_OK

    async def stdio(services: Services) -> None:
        await create_server(settings, services=services).run_stdio_async()

    return run_owner(settings, "stdio", stdio=stdio)


def main(argv: list[str] | None = None) -> int:
    """``python -m mcp_gateway.daemon.owner --data-dir DIR``: the shared local daemon, started
    detached by the first ``kioku serve`` proxy (``local_gateway.spawn_daemon``)."""
    import argparse

    from mcp_gateway.common.settings import load_settings

    parser = argparse.ArgumentParser(prog="python -m mcp_gateway.daemon.owner")
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--lock-fd", type=int, help="the data dir's lock, taken by the spawner")
    args = parser.parse_args(argv)
    fsperms.private_umask()  # logs, SQLite, index: owner-only whatever the parent's umask
    settings = load_settings(data_dir=args.data_dir)
    # the spawner's stderr is logs/gateway.log: rotated, repeats counted (logbounds)
    logbounds.configure(
        settings.log_level.upper(),
        rotate=gw.GatewayPaths.for_settings(settings).log,
        max_bytes=int(settings.local_gateway.log_max_mb * 1024 * 1024),
    )
    # Stateless mode "terminates" a transport after every request: not news.
    logging.getLogger("mcp.server.streamable_http").setLevel(logging.WARNING)
    return run_owner(settings, "daemon", lock_fd=args.lock_fd)


if __name__ == "__main__":
    raise SystemExit(main())
