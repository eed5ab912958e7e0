"""Two gateways and two workers, each on its own "host" (a network namespace), sharing
the truth store and Redis only over their links: kill things, lose nothing.

- SIGKILL a gateway during a burst of adds: clients retry the same add on the other
  (an exact repeat is the same note, so a retry never makes a second one); every
  acknowledged note is counted. SIGKILL a worker in the same burst.
- Restart the killed gateway (same data dir): it catches up from the feed.
- Every acknowledged note is then found *semantically* (a dense hit: the search's
  distance is set) on every gateway. How long that took after the burst is printed
  (``-s``), not asserted (speed is for ``bench/scale.py``).

- PostgreSQL stopped and started again during a burst: adds answer with a clean tool
  error (retryable) while it is down; nobody restarts any kioku process.

The truth store is a PostgreSQL cluster of the test's own (``initdb`` on a free port;
never the machine's shared server), reached from each namespace through a forwarder on
its link, or one SQLite file shared by the processes (namespaces separate networks, not
disks).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client

from mcp_gateway.stores.db import Database
from tests.cluster import (
    TOKEN,
    Deployment,
    Host,
    Proc,
    ThrowawayPostgres,
    forwarder,
    hosts,
    netns_available,
    redis_server,
    throwaway_postgres,
)
from tests.http_server import http_client

pytestmark = pytest.mark.slow

N = 120
CLIENTS = 4
TOPICS = ["deploys", "database migrations", "rate limiting", "docker images", "flaky tests"]


def note_text(i: int) -> str:
    rng = random.Random(i)
    topic = TOPICS[i % len(TOPICS)]
    return f"failover note {i}: about {topic}, remember {rng.randrange(10**9)}"


Cluster = tuple[Deployment, list[Host], ThrowawayPostgres | None]


@pytest.fixture(params=["sqlite", "postgres"])
def cluster(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Cluster]:
    with hosts(4, netns=netns_available()) as hs:
        addrs = ["127.0.0.1", *(h.services for h in hs)]
        with redis_server(addrs) as redis_port, contextlib.ExitStack() as stack:
            pg: ThrowawayPostgres | None = None
            if request.param == "postgres":
                pg = stack.enter_context(throwaway_postgres())
                stack.enter_context(forwarder(addrs, pg.port, ("127.0.0.1", pg.port)))
                port = pg.port
                url: object = lambda addr: f"postgresql://postgres@{addr}:{port}/postgres"  # noqa: E731
            else:
                db_file = tmp_path / "shared" / "kioku.sqlite3"
                db_file.parent.mkdir()
                url = f"sqlite:///{db_file}"
            deployment = Deployment(tmp_path, url, redis_port, "default")
            try:
                yield deployment, hs, pg
            finally:
                deployment.close()


class Burst:
    """Clients adding notes, each preferring one gateway and retrying on the other."""

    def __init__(self, gateways: list[Proc]) -> None:
        self.gateways = gateways
        self.acked: dict[int, str] = {}
        self.retries = 0
        self.tool_errors: list[str] = []  # what clients were told while something was down

    async def add(self, i: int, prefer: int) -> None:
        order = [self.gateways[prefer], self.gateways[1 - prefer]]
        for attempt in range(60):
            gw = order[attempt % 2]
            if not gw.alive():
                continue
            try:
                async with http_client(gw.url, TOKEN) as client:
                    out = await asyncio.wait_for(
                        client.call_tool("add_note", {"text": note_text(i), "type": "knowledge"}),
                        30,
                    )
                if not out.is_error and out.structured_content:
                    self.acked[i] = out.structured_content["id"]
                    return
                self.tool_errors.append(str(out.content[0].text if out.content else out))  # type: ignore[union-attr]
            except Exception:  # the gateway died under the call: retry elsewhere
                pass
            self.retries += 1
            await asyncio.sleep(0.1)
        raise AssertionError(f"note {i} was never acknowledged")

    async def client(self, c: int, todo: list[int]) -> None:
        for i in todo:
            await self.add(i, c % 2)


async def dense_hit(client: Client, i: int, note_id: str) -> bool:
    out = await client.call_tool("search_memory", {"query": note_text(i), "top": 3})
    if out.is_error or not out.structured_content:
        return False
    return any(
        r["id"] == note_id and r.get("distance") is not None
        for r in out.structured_content["results"]
    )


async def all_embedded(deployment: Deployment, acked: dict[int, str]) -> float:
    """Seconds until every acknowledged note has a stored vector (the embedding
    backlog's share of the time ``all_found`` reports)."""
    url = deployment.db_url
    where = url("127.0.0.1") if callable(url) else Path(str(url).removeprefix("sqlite:///"))
    db = Database(where)
    await db.open()
    started = time.monotonic()
    ids = sorted(set(acked.values()))
    marks = ",".join("?" * len(ids))
    sql = (
        "SELECT COUNT(DISTINCT source_id) FROM vectors "
        f"WHERE kind = 'note' AND source_id IN ({marks})"
    )
    try:
        while (await db.fetchall(sql, ids))[0][0] < len(ids):  # noqa: ASYNC110
            await asyncio.sleep(0.2)
        return time.monotonic() - started
    finally:
        await db.close()


async def all_found(
    gateways: list[Proc], acked: dict[int, str], deadline_s: float, where: list[str] | None = None
) -> float:
    """Seconds until every acknowledged note is a dense hit on every gateway;
    ``where`` collects, per gateway, its share, its first search and its sweeps."""
    started = time.monotonic()
    for gw in gateways:
        missing = dict(acked)
        began, first, sweeps = time.monotonic(), None, 0
        async with http_client(gw.url, TOKEN) as client:
            while missing:
                sweeps += 1
                for i, nid in list(missing.items()):
                    if await dense_hit(client, i, nid):
                        del missing[i]
                    first = first or time.monotonic() - began
                if where is not None and not missing:
                    where.append(
                        f"{gw.name} {time.monotonic() - began:.1f} s (first search "
                        f"{first or 0:.1f} s, {sweeps} sweeps)"
                    )
                if missing:
                    assert time.monotonic() - started < deadline_s, (
                        f"{gw.name}: {len(missing)} acknowledged notes not found: {gw.tail()}"
                    )
                    await asyncio.sleep(0.5)
    return time.monotonic() - started


async def test_kill_a_gateway_and_a_worker_mid_burst_loses_no_acknowledged_note(
    cluster: Cluster,
) -> None:
    deployment, hs, _pg = cluster
    gateways = [deployment.gateway("gw1", hs[0]), deployment.gateway("gw2", hs[1])]
    workers = [deployment.worker("w1", hs[2]), deployment.worker("w2", hs[3])]
    burst = Burst(gateways)
    per_client = [list(range(c, N, CLIENTS)) for c in range(CLIENTS)]
    tasks = [asyncio.create_task(burst.client(c, todo)) for c, todo in enumerate(per_client)]
    while len(burst.acked) < N // 3:
        assert not any(t.done() and t.exception() for t in tasks)
        await asyncio.sleep(0.05)
    gateways[0].kill()
    workers[0].kill()
    killed_at = len(burst.acked)
    await asyncio.gather(*tasks)
    assert len(burst.acked) == N and killed_at < N
    embedded = asyncio.create_task(all_embedded(deployment, burst.acked))
    gateways[0].start()  # the same data dir: it catches up from its cursors
    where: list[str] = []
    took = await all_found(gateways, burst.acked, 300, where)
    vectors = await embedded
    # the same sweep again, everything found: what the check itself takes (2 x N
    # searches one after another), not lag
    sweep = await all_found(gateways, burst.acked, 300)
    print(
        f"\n{N} acknowledged ({killed_at} before the kills, {burst.retries} retries); "
        f"all dense hits on both gateways {took:.1f} s after the restart (every "
        f"vector stored after {vectors:.1f} s; the sweep alone, all found: {sweep:.1f} s; "
        f"{', '.join(where)}); netns={bool(hs[0].netns)}"
    )
    assert workers[1].alive(), workers[1].tail()
    assert (deployment.root / "gw1" / "data" / "gateway.id").exists()


async def test_a_postgresql_restart_under_load_needs_no_kioku_restart(cluster: Cluster) -> None:
    deployment, hs, pg = cluster
    if pg is None:
        pytest.skip("a PostgreSQL restart")
    gateways = [deployment.gateway("gw1", hs[0]), deployment.gateway("gw2", hs[1])]
    workers = [deployment.worker("w1", hs[2]), deployment.worker("w2", hs[3])]
    burst = Burst(gateways)
    per_client = [list(range(c, N, CLIENTS)) for c in range(CLIENTS)]
    tasks = [asyncio.create_task(burst.client(c, todo)) for c, todo in enumerate(per_client)]
    while len(burst.acked) < N // 3:
        assert not any(t.done() and t.exception() for t in tasks)
        await asyncio.sleep(0.05)
    await asyncio.to_thread(pg.stop)
    down_at = len(burst.acked)
    await asyncio.sleep(3)  # clients keep adding meanwhile, and are told to retry
    await asyncio.to_thread(pg.start)
    await asyncio.gather(*tasks)
    assert len(burst.acked) == N and down_at < N
    # an add during the outage either waits in the pool until the server is back or
    # is refused with the retryable error (which happens depends on timing)
    assert not [e for e in burst.tool_errors if "Traceback" in e], burst.tool_errors[:3]
    embedded = asyncio.create_task(all_embedded(deployment, burst.acked))
    where: list[str] = []
    took = await all_found(gateways, burst.acked, 300, where)
    vectors = await embedded
    sweep = await all_found(gateways, burst.acked, 300)
    print(
        f"\n{N} acknowledged ({down_at} before the stop, {len(burst.tool_errors)} tool "
        f"errors, e.g. {burst.tool_errors[:1]!r}); all dense hits on both gateways "
        f"{took:.1f} s after the burst (every vector stored after {vectors:.1f} s; the "
        f"sweep alone, all found: {sweep:.1f} s; {', '.join(where)})"
    )
    assert all(p.alive() for p in [*gateways, *workers]), [p.tail() for p in gateways]
