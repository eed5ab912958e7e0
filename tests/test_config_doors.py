"""Secrets and bad configuration at the doors (issue 47): one redaction rule for every
URL, one line for every configuration mistake, on real processes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client

from tests.http_server import KIOKU, kioku_env
from tests.pg_server import ThrowawayCluster
from tests.realproc import authed, http_proc

SECRET = "Sup3rSecretPw-4711"
GRANTS = json.dumps({"alice": {"token": "alice-token-0123456789", "namespace": "alice"}})


# slow: its own PostgreSQL server, stopped under a gateway: ~25 s
@pytest.mark.slow
async def test_a_tenant_never_learns_the_database_url(
    tmp_path: Path, throwaway_cluster: ThrowawayCluster
) -> None:
    """Before: with ?password=... in KIOKU_DATABASE_URL and the database down, a tenant's
    add_note, search_memory and record_search errors showed the password in clear, and
    with user:pw@ the user, host, port and database name; the same in stderr."""
    url = f"{throwaway_cluster.url}?password={SECRET}"
    port = str(throwaway_cluster.port)
    with http_proc(tmp_path / "data", KIOKU_DATABASE_URL=url, KIOKU_HTTP__GRANTS=GRANTS) as gw:
        async with Client(authed(gw.url, "alice-token-0123456789")) as client:
            ok = await client.call_tool("add_note", {"text": "written while the database is up"})
            assert not ok.is_error
            throwaway_cluster.stop()
            calls = [
                ("add_note", {"text": "written while the database is down"}),
                ("search_memory", {"query": "written while the database"}),
                ("record_search", {"query": "database"}),
            ]
            errors = []
            for tool, args in calls:
                res = await client.call_tool(tool, args)
                text = " ".join(getattr(c, "text", "") for c in res.content)
                errors.append(text)
                for leak in (SECRET, "postgres", "127.0.0.1", port):
                    assert leak not in text, (tool, text)
            assert any("database is unavailable" in e for e in errors), errors
        assert SECRET not in gw.stderr()


@pytest.mark.parametrize(
    ("url", "words"),
    [
        (f"postgresql://kioku:{SECRET}@[::1/kioku", "no closing ']'"),
        (f"postgresql://kioku:{SECRET}@db.example:abc/kioku", "port is not a number"),
    ],
)
def test_a_malformed_database_url_is_one_line(tmp_path: Path, url: str, words: str) -> None:
    """Before: a 69-75-line traceback with the password inside it."""
    out = subprocess.run(
        [KIOKU, "stats"],
        env=kioku_env(tmp_path / "data", KIOKU_DATABASE_URL=url),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert "KIOKU_DATABASE_URL" in lines[0] and words in lines[0]
    assert SECRET not in out.stderr + out.stdout and "Traceback" not in out.stderr


def test_a_database_url_without_the_postgres_extra_is_one_line(tmp_path: Path) -> None:
    """Before: KIOKU_DATABASE_URL set without psycopg installed was a traceback. The
    real CLI, in a Python where psycopg cannot be imported."""
    script = (
        "import sys; sys.modules['psycopg'] = None\n"
        "from mcp_gateway.cli.main import main\n"
        "sys.exit(main(['stats']))\n"
    )
    url = f"postgresql://kioku:{SECRET}@127.0.0.1:5432/kioku"
    out = subprocess.run(
        [sys.executable, "-c", script],
        env=kioku_env(tmp_path / "data", KIOKU_DATABASE_URL=url),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert "KIOKU_DATABASE_URL" in lines[0] and "kioku[postgres]" in lines[0]
    assert SECRET not in out.stderr
