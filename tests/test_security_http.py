"""``kioku serve --http`` hardening (issue 10, items 7 and 11), on real processes."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import stat
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.http_server import KIOKU, http_client, kioku_env
from tests.realproc import INITIALIZE, http_proc

HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


# slow: its own processes -- ~8 s on a 2-core AVX2 machine (round 10)
@pytest.mark.slow
async def test_loopback_http_requires_the_generated_token(tmp_path: Path) -> None:
    """Before: with no token configured, any local user could search and edit."""
    data = tmp_path / "data"
    with http_proc(data) as gw:
        async with httpx2.AsyncClient(timeout=30) as http:
            res = await http.post(gw.url, json=INITIALIZE, headers=HEADERS)
            assert res.status_code == 401
        path = data / "http.token"
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        tok = path.read_text().strip()
        assert len(tok) >= 32
        async with http_client(gw.url, tok) as client:
            assert "add_note" in {t.name for t in (await client.list_tools()).tools}
        assert tok not in gw.stderr()
    with http_proc(data) as gw:  # a restart keeps the same token
        async with http_client(gw.url, tok) as client:
            await client.list_tools()


async def test_partial_headers_are_timed_out(tmp_path: Path) -> None:
    """Before: 300 connections sending half a request header were held forever."""
    with http_proc(tmp_path / "data", KIOKU_HTTP__HEADER_TIMEOUT_S="1") as gw:

        def slowloris() -> list[bytes]:
            socks = []
            for _ in range(300):
                s = socket.create_connection(("127.0.0.1", gw.port), timeout=60)
                s.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
                socks.append(s)
            out = []
            deadline = time.monotonic() + 30  # one wait for all: they expire together
            for s in socks:
                s.settimeout(max(0.1, deadline - time.monotonic()))
                try:
                    out.append(s.recv(1024))  # b"" once the server closed it
                except TimeoutError:
                    out.append(b"still open")
                except OSError:
                    out.append(b"")
                finally:
                    s.close()
            return out

        answers = await asyncio.to_thread(slowloris)
        assert all(a == b"" or a.startswith(b"HTTP/1.1 4") for a in answers), answers[:3]
        tok = (tmp_path / "data" / "http.token").read_text().strip()
        async with http_client(gw.url, tok) as client:  # real clients still served
            await client.list_tools()


async def test_session_cap_is_per_grant(tmp_path: Path) -> None:
    """Before: one cap (10,000) for all grants: one token could lock everyone out."""
    grants = {
        "alice": {"token": "alice-token-0123456789", "namespace": "alice"},
        "bob": {"token": "bob-token-0123456789", "namespace": "bob"},
    }
    env: dict[str, Any] = {
        "KIOKU_HTTP__GRANTS": json.dumps(grants),
        "KIOKU_HTTP__MAX_SESSIONS_PER_GRANT": "2",
    }
    with http_proc(tmp_path / "data", **env) as gw:
        async with httpx2.AsyncClient(timeout=30) as http:

            async def open_session(who: str) -> int:
                auth = {"authorization": f"Bearer {grants[who]['token']}"}
                res = await http.post(gw.url, json=INITIALIZE, headers=HEADERS | auth)
                return res.status_code

            assert [await open_session("alice") for _ in range(3)] == [200, 200, 503]
            assert await open_session("bob") == 200


def test_a_typo_in_one_grant_does_not_print_tokens(tmp_path: Path) -> None:
    """Before: the settings error echoed the grant, token included."""
    grants = {
        "alice": {"token": "alice-SECRET-0123456789", "namespace": "alice"},
        "bob": {"token": "bob-SECRET-0123456789", "namespce": "bob"},
        "carol": "carol-SECRET-0123456789",
    }
    out = subprocess.run(
        [KIOKU, "stats"],
        env=kioku_env(tmp_path / "data", KIOKU_HTTP__GRANTS=json.dumps(grants)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode != 0
    assert "grants.bob" in out.stderr and "SECRET" not in out.stderr + out.stdout
