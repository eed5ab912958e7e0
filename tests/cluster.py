"""A deployment of real processes on several "hosts" (network namespaces), for the
failure tests and ``bench/scale.py``.

A host is a network namespace joined to the root namespace by a veth pair: its
processes bind to their side's address and reach the shared services (Redis, the truth
store) only over the link, at the root side's address. PostgreSQL and Redis on this
machine listen on 127.0.0.1 only, so a ``socat`` forwarder bound to each root-side
address carries PostgreSQL; the test's own ``redis-server`` binds to those addresses
itself. ``hosts(n, netns=False)`` gives n "hosts" that are all the root namespace
(loopback), where namespaces cannot be made (not root, no ``ip``).

Names carry a per-run prefix (``kk`` + 4 hex digits): everything made here is deleted in
the teardown, and nothing else is touched.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tests.pg_server import PG_BIN, ThrowawayCluster

KIOKU = str(Path(sys.executable).with_name("kioku"))
TOKEN = "cluster-test-token-" + "0123456789abcdef" * 2


@dataclass(frozen=True, slots=True)
class Host:
    netns: str  # "" for the root namespace
    addr: str  # where this host's processes listen (and are reached from the root)
    services: str  # where this host reaches Redis and the truth store

    def cmd(self, argv: list[str]) -> list[str]:
        return ["ip", "netns", "exec", self.netns, *argv] if self.netns else argv


def netns_available() -> bool:
    return os.geteuid() == 0 and shutil.which("ip") is not None


def free_port(addr: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((addr, 0))
        return int(sock.getsockname()[1])


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)


@contextlib.contextmanager
def hosts(n: int, *, netns: bool = True) -> Iterator[list[Host]]:
    if not netns:
        yield [Host("", "127.0.0.1", "127.0.0.1") for _ in range(n)]
        return
    prefix = f"kk{secrets.token_hex(2)}"
    subnet = 100 + secrets.randbelow(150)  # 10.<subnet>.<i>.0/24: one link per host
    made: list[str] = []
    try:
        for i in range(1, n + 1):
            ns, outside, inside = f"{prefix}h{i}", f"{prefix}v{i}a", f"{prefix}v{i}b"
            _ip("netns", "add", ns)
            made.append(ns)
            _ip("link", "add", outside, "type", "veth", "peer", "name", inside)
            _ip("link", "set", inside, "netns", ns)
            _ip("addr", "add", f"10.{subnet}.{i}.1/24", "dev", outside)
            _ip("link", "set", outside, "up")
            _ip("-n", ns, "addr", "add", f"10.{subnet}.{i}.2/24", "dev", inside)
            _ip("-n", ns, "link", "set", inside, "up")
            _ip("-n", ns, "link", "set", "lo", "up")
        yield [Host(ns, f"10.{subnet}.{i}.2", f"10.{subnet}.{i}.1") for i, ns in enumerate(made, 1)]
    finally:
        for ns in made:  # deleting the namespace deletes its veth end, and so the pair
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)


@contextlib.contextmanager
def forwarder(addrs: list[str], port: int, target: tuple[str, int]) -> Iterator[None]:
    """``socat`` on ``addr:port`` for each address, to ``target`` (PostgreSQL)."""
    procs = [
        subprocess.Popen(
            [
                "socat",
                f"TCP-LISTEN:{port},bind={addr},fork,reuseaddr",
                f"TCP:{target[0]}:{target[1]}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for addr in sorted(set(addrs))
        if addr != target[0] or port != target[1]
    ]
    try:
        for addr in sorted(set(addrs)):
            wait_port(addr, port, 10)
        yield
    finally:
        for proc in procs:
            proc.kill()
            proc.wait(timeout=10)


@contextlib.contextmanager
def redis_server(addrs: list[str]) -> Iterator[int]:
    """A private ``redis-server`` (no persistence) bound to ``addrs``; yields its port."""
    port = free_port()
    proc = subprocess.Popen(
        [
            *("redis-server", "--port", str(port), "--bind", *sorted(set(addrs))),
            *("--save", "", "--appendonly", "no", "--protected-mode", "no"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_port(sorted(set(addrs))[0], port, 10)
        yield port
    finally:
        proc.kill()
        proc.wait(timeout=10)


def wait_port(addr: str, port: int, timeout_s: float, proc: subprocess.Popen[bytes] | None = None):
    deadline = time.monotonic() + timeout_s
    while True:
        with contextlib.suppress(OSError):
            socket.create_connection((addr, port), timeout=0.2).close()
            return
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"exited with {proc.returncode}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"nothing listens on {addr}:{port} after {timeout_s} s")
        time.sleep(0.1)


@dataclass
class Proc:
    """A ``kioku serve --http`` or ``kioku worker`` on one host; restartable."""

    name: str
    host: Host
    argv: list[str]
    env: dict[str, str]
    log: Path
    port: int = 0
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"http://{self.host.addr}:{self.port}/mcp"

    def start(self, wait_s: float = 120) -> Proc:
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                self.host.cmd(self.argv), env=self.env, stdout=log, stderr=subprocess.STDOUT
            )
        if self.port:
            try:
                wait_port(self.host.addr, self.port, wait_s, self.proc)
            except RuntimeError as exc:
                raise RuntimeError(f"{self.name}: {exc}: {self.tail()}") from None
        return self

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=60)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def tail(self, n: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-n:] if self.log.exists() else ""


def kioku_env(data_dir: Path, database_url: str, redis_url: str | None, **extra: str):
    env = {k: v for k, v in os.environ.items() if not k.startswith("KIOKU_")}
    empty = data_dir.parent / f"{data_dir.name}.toml"  # the user's config must not apply
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    empty.write_text("", encoding="utf-8")
    env.update(
        KIOKU_CONFIG=str(empty),
        KIOKU_DATA_DIR=str(data_dir),
        KIOKU_DATABASE_URL=database_url,
        KIOKU_HTTP__TOKEN=TOKEN,
        KIOKU_LOG_LEVEL="WARNING",
        KIOKU_LOCAL_GATEWAY__IDLE_EXIT_S="20",
        **extra,
    )
    if redis_url:
        env["KIOKU_REDIS_URL"] = redis_url
    return env


class Deployment:
    """Gateways and workers on hosts, sharing ``database_url`` (a callable of the host
    address, since each host reaches the store at its own link) and Redis."""

    def __init__(self, root: Path, db_url: object, redis_port: int | None, namespace: str):
        self.root, self.db_url, self.redis_port = root, db_url, redis_port
        self.namespace = namespace
        self.procs: list[Proc] = []

    def _env(self, name: str, host: Host) -> dict[str, str]:
        url = self.db_url(host.services) if callable(self.db_url) else str(self.db_url)
        redis = f"redis://{host.services}:{self.redis_port}/0" if self.redis_port else None
        return kioku_env(self.root / name / "data", url, redis, KIOKU_NAMESPACE=self.namespace)

    def gateway(self, name: str, host: Host) -> Proc:
        port = free_port() if not host.netns else 8765
        argv = [KIOKU, "serve", "--http", "--host", host.addr, "--port", str(port)]
        log = self.root / f"{name}.log"
        proc = Proc(name, host, argv, self._env(name, host), log, port)
        self.procs.append(proc)
        return proc.start()

    def worker(self, name: str, host: Host) -> Proc:
        log = self.root / f"{name}.log"
        proc = Proc(name, host, [KIOKU, "worker"], self._env(name, host), log)
        self.procs.append(proc)
        return proc.start()

    def close(self) -> None:
        for proc in self.procs:
            proc.kill()


def temp_root() -> Path:
    return Path(tempfile.mkdtemp(prefix="kioku-cluster-"))


ThrowawayPostgres = ThrowawayCluster


@contextlib.contextmanager
def throwaway_postgres() -> Iterator[ThrowawayCluster]:
    """A PostgreSQL cluster of our own (``tests/pg_server.py``), started; removed after."""
    if not (PG_BIN / "initdb").exists():
        raise RuntimeError(f"no PostgreSQL binaries in {PG_BIN} for a throwaway cluster")
    cluster = ThrowawayCluster()
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.remove()
