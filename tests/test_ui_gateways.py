"""The memory browser behind several gateways: two real ``kioku serve --http`` processes,
each with its own data dir, on one PostgreSQL database (a schema of the test's own).

The browser's sign-in state is the deployment's (``stores.signins``): a cookie from one
gateway is read by the other (a proxy may send the browser to either), a one-time code
works once in the whole deployment, and signing out on one gateway ends the session on
the other. Before, each gateway kept used codes and sign-outs in its own data dir."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.pg_server import ScratchDatabase

from .http_server import KIOKU, kioku_env
from .realproc import HttpProc, http_proc
from .ui_support import TOKEN


@pytest.fixture
def gateways(
    tmp_path: Path, pg_database: ScratchDatabase
) -> Iterator[tuple[HttpProc, HttpProc, dict[str, str]]]:
    env: dict[str, Any] = {
        "KIOKU_DATABASE_URL": pg_database.new_schema(),
        "KIOKU_HTTP__TOKEN": TOKEN,
    }
    with (
        http_proc(tmp_path / "a", **env) as a,
        http_proc(tmp_path / "b", **env) as b,
    ):
        yield a, b, env


def base(gateway: HttpProc) -> str:
    return gateway.url.removesuffix("/mcp")


def link(gateway: HttpProc, env: dict[str, str]) -> str:
    """``kioku ui --link`` run beside ``gateway`` (its data dir, the shared store)."""
    out = subprocess.run(
        [KIOKU, "ui", "--link", base(gateway)],
        env=kioku_env(gateway.data_dir, **env),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return out.stdout.strip()


def signed_in(response: httpx.Response) -> str:
    """The session cookie a sign-in set (``name=value``)."""
    assert response.status_code == 303, response.text
    cookie = response.headers["set-cookie"].split(";")[0]
    assert cookie.startswith("kioku_session_")
    return cookie


def page(gateway: HttpProc, cookie: str) -> httpx.Response:
    return httpx.get(base(gateway) + "/ui/", headers={"Cookie": cookie}, timeout=60)


@pytest.mark.slow  # two `kioku serve --http` processes: ~45 s
def test_codes_and_sign_outs_hold_on_every_gateway(
    gateways: tuple[HttpProc, HttpProc, dict[str, str]],
) -> None:
    a, b, env = gateways
    code = link(a, env)
    assert code.startswith(base(a) + "/ui/signin?code=")
    cookie = signed_in(httpx.get(code, timeout=60))
    # the other gateway reads the session: one secret for the deployment
    assert page(b, cookie).status_code == 200
    # the code, replayed on the other gateway: used up there too
    replay = httpx.get(code.replace(base(a), base(b)), timeout=60)
    assert replay.status_code == 401 and "used up or expired" in replay.text
    # ...because it was spent, not because B cannot read A's codes: a fresh one works
    fresh = link(a, env).replace(base(a), base(b))
    other = signed_in(httpx.get(fresh, timeout=60))
    assert page(a, other).status_code == 200

    # signing out on A ends the session on B, and leaves the other session alone
    home = page(a, cookie)
    csrf = re.search(r'name="csrf" value="([^"]+)"', home.text)
    assert csrf, "no CSRF field on the page"
    out = httpx.post(
        base(a) + "/ui/logout",
        data={"csrf": csrf.group(1)},
        headers={"Cookie": cookie, "Origin": base(a)},
        timeout=60,
    )
    assert out.status_code == 303
    for gateway in (a, b):
        assert page(gateway, cookie).status_code == 401
        assert page(gateway, other).status_code == 200
    # the data dirs hold none of it
    assert not (a.data_dir / "ui-sessions.db").exists()
    assert not (b.data_dir / "ui-sessions.db").exists()
