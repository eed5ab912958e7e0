"""Floods each listening door and times a legitimate client through it (issue 47).

Doors: ``kioku serve --http`` (TCP), ``kioku ui``'s port (TCP), and the owner's socket
(``gateway.sock``), each server under a 1,024 open-file limit (``prlimit``). Floods:
half-sent headers, slow bodies (complete headers with another tenant's token, the body
never sent)
and connection churn (connect and close at once), ``--count`` connections each,
re-opened as the server closes them. The legitimate client makes ``--requests``
requests, each on a fresh connection: MCP ``initialize`` with a token, the browser's
``/ui/`` with its cookie, ``/api/status`` with the owner key. Printed per door and
flood: p50/p95 and their ratio to the quiet run of the same door, requests that failed,
and how much the server's stderr and ``gateway.log`` grew. Loopback only; bounded in
connections and time (about 3 minutes on 2 cores).

    .venv/bin/python bench/doors_flood.py [--count 1100] [--requests 30] [--doors http,ui,sock]
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mcp_gateway.common.keyfile import OWNER_HEADER, owner_key
from tests import flood
from tests.realproc import INITIALIZE, gateway_paths
from tests.test_doors import LIMIT, _sign_in, kioku_ui, serve_http

INIT = json.dumps(INITIALIZE).encode()


class UnixHTTP(http.client.HTTPConnection):
    def __init__(self, path: Path, timeout: float) -> None:
        super().__init__("kioku-gateway", timeout=timeout)
        self.path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(str(self.path))


Request = Callable[[], int]


def churn(connect: Callable[[], socket.socket], stop: threading.Event) -> None:
    while not stop.is_set():
        with contextlib.suppress(OSError):
            connect().close()


@contextlib.contextmanager
def churning(connect: Callable[[], socket.socket]) -> Iterator[None]:
    stop = threading.Event()
    thread = threading.Thread(target=churn, args=(connect, stop), daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(10)


def timed(request: Request, n: int) -> tuple[list[float], int]:
    times, failed = [], 0
    for _ in range(n):
        start = time.perf_counter()
        try:
            if request() >= 500:
                failed += 1
                continue
        except OSError:
            failed += 1
            continue
        times.append(time.perf_counter() - start)
    return times, failed


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def run_door(
    name: str,
    request: Request,
    connect: Callable[[], socket.socket],
    floods: dict[str, bytes | None],
    logs: list[Path],
    n: int,
    count: int,
) -> None:
    quiet, _ = timed(request, n)
    base50, base95 = pct(quiet, 0.5), pct(quiet, 0.95)
    print(f"{name:14} {'quiet':12} p50 {base50:7.1f} ms  p95 {base95:7.1f} ms")
    for kind, payload in floods.items():
        before = sum(flood.size(p) for p in logs)
        started = time.monotonic()
        if payload is None:
            with churning(connect):
                time.sleep(1)
                times, failed = timed(request, n)
        else:
            with flood.Flood(connect, payload, count):
                time.sleep(2)
                times, failed = timed(request, n)
        grown = sum(flood.size(p) for p in logs) - before
        p50, p95 = pct(times, 0.5), pct(times, 0.95)
        print(
            f"{name:14} {kind:12} p50 {p50:7.1f} ms ({p50 / base50:5.1f}x)  p95 {p95:7.1f} ms "
            f"({p95 / base95:5.1f}x)  failed {failed}/{n}  log +{grown:,} B "
            f"in {time.monotonic() - started:.0f} s"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=1100)
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument(
        "--doors", default="http,ui,sock", help="which doors, comma-separated: http, ui, sock"
    )
    args = parser.parse_args()
    doors = set(args.doors.split(","))
    root = Path(tempfile.mkdtemp(prefix="kioku-doors-bench-"))
    print(f"open-file limit of each server: {LIMIT}; {args.count} hostile connections a flood")

    grants = json.dumps(
        {
            "reader": {"token": "reader-token-0123456789", "namespace": "reader"},
            "alice": {"token": "alice-token-0123456789", "namespace": "alice"},
        }
    )
    env = {"KIOKU_HTTP__HEADER_TIMEOUT_S": "5", "KIOKU_HTTP__GRANTS": grants}
    if "http" in doors:
        serve_door(root, env, args.requests, args.count)
    if doors & {"ui", "sock"}:
        ui_doors(root, doors, args.requests, args.count)
    print(f"(median of {args.requests} requests each; ratio: against the quiet run of the door)")


def serve_door(root: Path, env: dict[str, str], requests: int, count: int) -> None:
    with serve_http(root / "http", LIMIT, **env) as gw:
        token = "alice-token-0123456789"  # the legitimate tenant; the slow bodies: reader

        def mcp_init() -> int:
            conn = http.client.HTTPConnection("127.0.0.1", gw.port, timeout=10)
            try:
                headers = {
                    "Authorization": f"Bearer {token}",
                    "Content-Type": "application/json",
                    "Accept": "application/json, text/event-stream",
                }
                conn.request("POST", "/mcp", body=INIT, headers=headers)
                res = conn.getresponse()
                res.read()
                return res.status
            finally:
                conn.close()

        slow = flood.slow_body(f"127.0.0.1:{gw.port}", "reader-token-0123456789")
        floods: dict[str, bytes | None] = {
            "half headers": flood.HALF_HEADERS,
            "slow bodies": slow,
            "churn": None,
        }
        logs = [gw.err]
        run_door("serve --http", mcp_init, flood.tcp(gw.port), floods, logs, requests, count)


def ui_doors(root: Path, doors: set[str], requests: int, count: int) -> None:
    data = root / "ui"
    with kioku_ui(data, LIMIT, KIOKU_HTTP__HEADER_TIMEOUT_S="5") as ui:
        host, cookie = _sign_in(ui.link)

        def browse() -> int:
            conn = http.client.HTTPConnection("127.0.0.1", ui.port, timeout=10)
            try:
                conn.request("GET", "/ui/", headers={"Host": host, "Cookie": cookie})
                res = conn.getresponse()
                res.read()
                return res.status
            finally:
                conn.close()

        logs = [ui.err, gateway_paths(data).log]
        half = {"half headers": flood.HALF_HEADERS, "churn": None}
        if "ui" in doors:
            run_door("kioku ui", browse, flood.tcp(ui.port), half, logs, requests, count)

        sock, key = gateway_paths(data).socket, owner_key(data)

        def status() -> int:
            conn = UnixHTTP(sock, 10)
            try:
                conn.request("GET", "/api/status", headers={OWNER_HEADER: key})
                res = conn.getresponse()
                res.read()
                return res.status
            finally:
                conn.close()

        if "sock" in doors:
            run_door("gateway.sock", status, flood.unix(sock), half, logs, requests, count)


if __name__ == "__main__":
    main()
