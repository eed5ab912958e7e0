"""``kioku ui``'s loopback port as another local user meets it: the real command, a
real daemon behind it, and raw HTTP requests (http.client sends the path exactly as
written; httpx would normalise the very ``..`` these tests are about)."""

from __future__ import annotations

import html
import http.client
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote, urlsplit

import httpx
import pytest

from mcp_gateway.common.keyfile import OWNER_HEADER, owner_key
from mcp_gateway.daemon.local_gateway import lock_held

from .http_server import KIOKU, free_port, kioku_env
from .realproc import HttpProc, daemon_pid, gateway_paths, http_proc, wait_until
from .ui_support import TOKEN, UiProc, kioku_ui, raw, stop_daemon

SECRET = "The owner's staging password is hunter2."


@pytest.fixture(scope="module")
def ui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UiProc]:
    data = tmp_path_factory.mktemp("uidoor") / "data"
    subprocess.run([KIOKU, "add", SECRET], env=kioku_env(data), check=True, timeout=120)
    try:
        with kioku_ui(data) as handle:
            yield handle
    finally:
        stop_daemon(data)


# The admin API (status, stop, use cases) and MCP live beside /ui/ on the owner's socket.
TRAVERSALS = [
    "/ui/%2e%2e/api/status",
    "/ui/%2E%2E/api/status",
    "/ui/.%2e/api/status",
    "/ui/../api/status",
    "/ui/./../api/status",
    "/ui//../api/status",
    "/ui/static/../../api/status",
    "/ui/static/%2e%2e/%2e%2e/api/status",
    "/ui/..%2fapi/status",
    "/ui/%2e%2e%2fapi%2fstatus",
    "/ui/..%5capi/status",
    "/ui/..\\api/status",
    "/ui/%252e%252e/api/status",
    "/ui/notes/%2e%2e/%2e%2e/api/status",
    "/ui/%2e%2e/mcp",
]


def test_the_forwarder_never_reaches_the_admin_api(ui: UiProc) -> None:
    """Before: ``/ui/%2e%2e/api/status`` answered 200 with the owner's status, and
    ``/ui/%2e%2e/api/stop`` stopped the daemon."""
    for path in TRAVERSALS:
        status, body = raw(ui.link, "GET", path)
        assert status in (400, 404), (path, status, body[:200])
        assert b"owner" not in body and b"rebuild" not in body, path
    call = json.dumps({"op": "notes.search", "args": {"query": "staging password"}}).encode()
    for path in ("/ui/%2e%2e/api/call", "/ui/static/..%2f..%2fapi/call"):
        status, body = raw(
            ui.link, "POST", path, body=call, headers={"Content-Type": "application/json"}
        )
        assert status in (400, 404) and b"hunter2" not in body, (path, status)
    pid = daemon_pid(ui.data)
    status, _ = raw(ui.link, "POST", "/ui/%2e%2e/api/stop")
    assert status in (400, 404)
    assert daemon_pid(ui.data) == pid and lock_held(gateway_paths(ui.data).lock)
    # the memory browser itself still answers: its sign-in page, its assets
    assert raw(ui.link, "GET", "/ui/login")[0] == 200
    assert raw(ui.link, "GET", "/ui/static/ui.css")[0] == 200
    assert raw(ui.link, "GET", "/ui/")[0] == 401
    # only at its secret host name (cookies ignore the port: test_ui_cookie.py)
    assert raw(ui.link, "GET", "/ui/login", host=f"127.0.0.1:{ui.port}")[0] == 421


def _unix_request(sock_path: Path, method: str, path: str, headers: dict[str, str]) -> int:
    """A request on the owner's Unix socket as the owner's user (what the forwarder is)."""
    import socket

    class Conn(http.client.HTTPConnection):
        def connect(self) -> None:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.settimeout(60)
            self.sock.connect(str(sock_path))

    conn = Conn("kioku-gateway", timeout=60)
    try:
        body = b"{}" if method == "POST" else None
        conn.request(method, path, body=body, headers={"Host": "kioku-gateway", **headers})
        return conn.getresponse().status
    finally:
        conn.close()


def test_the_owner_api_needs_the_owner_key_even_from_the_owners_user(ui: UiProc) -> None:
    """Defence in depth: the socket's peer check passes for the forwarder (same uid), so
    /api and /mcp also need the data dir's owner key, which the forwarder never sends.
    Before: any same-uid connection got the admin API and MCP without one."""
    sock = gateway_paths(ui.data).socket
    pid = daemon_pid(ui.data)
    for method, path in (("GET", "/api/status"), ("POST", "/api/stop"), ("POST", "/mcp")):
        assert _unix_request(sock, method, path, {}) == 403, path
        assert _unix_request(sock, method, path, {OWNER_HEADER: "0" * 64}) == 403, path
    assert daemon_pid(ui.data) == pid
    key = owner_key(ui.data)
    assert _unix_request(sock, "GET", "/api/status", {OWNER_HEADER: key}) == 200
    # the key never travels through the forwarder, even when a browser sends one
    status, _ = raw(ui.link, "GET", "/ui/%2e%2e/api/status", headers={OWNER_HEADER: key})
    assert status in (400, 404)


RECORDER = """#!{python}
import json, os, stat, sys
from urllib.parse import unquote, urlsplit
out = {{"argv": sys.argv, "mode": None, "page": ""}}
page = unquote(urlsplit(sys.argv[1]).path)
if os.path.isfile(page):
    out.update(mode=stat.S_IMODE(os.stat(page).st_mode), page=open(page).read())
with open({out!r}, "w") as fh:
    json.dump(out, fh)
"""


def test_the_sign_in_code_never_reaches_the_browsers_command_line(
    ui: UiProc, tmp_path: Path
) -> None:
    """The real ``kioku ui`` opens "the browser" ($BROWSER: a recorder of its argv,
    which every local user can read in /proc). Before: argv held the one-time link.
    (A second ``kioku ui`` on the module's data dir: it joins the running daemon.)"""
    data = ui.data
    record = tmp_path / "browser.json"
    browser = tmp_path / "browser"
    browser.write_text(RECORDER.format(python=sys.executable, out=str(record)))
    browser.chmod(0o755)
    port = free_port()
    proc = subprocess.Popen(
        [KIOKU, "ui", "--port", str(port)],
        env={**kioku_env(data), "BROWSER": str(browser)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        link = next(ln.split(": ", 1)[1].strip() for ln in proc.stdout if "sign-in link" in ln)
        code = link.split("code=", 1)[1]
        assert wait_until(record.exists, 60), "the browser was not started"
        seen = json.loads(record.read_text())
        argv = " ".join(seen["argv"])
        assert code not in argv and unquote(code) not in argv and "code=" not in argv, argv
        page = Path(unquote(urlsplit(seen["argv"][1]).path))
        assert page.parent == data and seen["mode"] == 0o600
        assert html.escape(link, quote=True) in seen["page"]  # it leads to the sign-in
        status, _ = raw(link, "GET", urlsplit(link).path + "?" + urlsplit(link).query)
        assert status == 303
        assert wait_until(lambda: not page.exists(), 10), "the used page was kept"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert not list(data.glob("ui-signin-*"))


def _path(link: str) -> str:
    url = urlsplit(link)
    return f"{url.path}?{url.query}"


def _kioku_stop(data: Path, owner: HttpProc) -> None:
    subprocess.run([KIOKU, "stop"], env=kioku_env(data), check=True, timeout=120)
    owner.proc.wait(timeout=60)


@pytest.mark.slow  # two owners and a `kioku ui` in turn
def test_used_codes_and_sign_outs_hold_on_every_mount_and_after_a_restart(
    tmp_path: Path,
) -> None:
    """Before: a code used on one mount worked on the other, every used code worked
    again after `kioku stop`, and a signed-out cookie worked again after a restart."""
    data = tmp_path / "data"
    with http_proc(data, KIOKU_HTTP__TOKEN=TOKEN) as owner:
        base = owner.url.removesuffix("/mcp")
        minted = subprocess.run(
            [KIOKU, "ui", "--link", base],
            env=kioku_env(data),
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        tcp_code = _path(minted.stdout.strip())
        with httpx.Client(base_url=base, timeout=60) as c:
            assert c.get(tcp_code).status_code == 303  # used on serve --http's /ui/
            # a session, signed out there
            assert c.get("/ui/").status_code == 200
            page = c.get("/ui/").text
            csrf = re.search(r'name="csrf" value="([^"]+)"', page)
            assert csrf
            signed_out = dict(c.cookies)
            r = c.post("/ui/logout", data={"csrf": csrf.group(1)}, headers={"Origin": base})
            assert r.status_code == 303
        with kioku_ui(data) as ui:  # the socket-mounted UI, behind kioku ui's port
            assert raw(ui.link, "GET", tcp_code)[0] == 401
            ui_code = _path(ui.link)
            assert raw(ui.link, "GET", ui_code)[0] == 303
            assert httpx.get(base + ui_code, timeout=60).status_code == 401
        _kioku_stop(data, owner)
    with http_proc(data, KIOKU_HTTP__TOKEN=TOKEN) as owner:
        base = owner.url.removesuffix("/mcp")
        for code in (tcp_code, ui_code):
            assert httpx.get(base + code, timeout=60).status_code == 401
        with httpx.Client(base_url=base, timeout=60, cookies=signed_out) as c:
            assert c.get("/ui/").status_code == 401
        with httpx.Client(base_url=base, timeout=60) as c:  # a fresh sign-in still works
            r = c.post("/ui/login", data={"token": TOKEN}, headers={"Origin": base})
            assert r.status_code == 303 and c.get("/ui/").status_code == 200
        _kioku_stop(data, owner)


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for pid {pid}")


def _chunked_post(netloc: str, port: int, path: str, megabytes: int) -> bytes:
    """POST ``megabytes`` MiB as a chunked body (no Content-Length to check) to
    127.0.0.1:``port`` with Host ``netloc``; the answer's first bytes. The body is sent
    from a thread while the answer is read, as a client that keeps sending would."""
    import socket
    import threading

    sock = socket.create_connection(("127.0.0.1", port), timeout=120)
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {netloc}\r\nOrigin: http://{netloc}\r\n"
        "Content-Type: application/x-www-form-urlencoded\r\n"
        "Transfer-Encoding: chunked\r\n\r\n"
    ).encode()
    chunk = b"token=" + b"a" * (1024 * 1024 - 6)

    def send() -> None:
        try:
            sock.sendall(head)
            for _ in range(megabytes):
                sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            sock.sendall(b"0\r\n\r\n")
        except OSError:
            pass  # refused and closed part-way: what the server should do

    writer = threading.Thread(target=send, daemon=True)
    writer.start()
    answer = b""
    try:
        while b"\r\n" not in answer:
            data = sock.recv(4096)
            if not data:
                break
            answer += data
    except OSError:
        pass
    finally:
        sock.close()
        writer.join(timeout=120)
    return answer


BIG_MB = 128


@pytest.mark.slow  # pushes 2 x 128 MiB at two servers
def test_large_chunked_bodies_are_refused_before_they_are_held(tmp_path: Path) -> None:
    """Before: a chunked body went whole into memory before the 413 (kioku ui's
    forwarder), or past the 256 KiB form limit (/ui/login: no Content-Length)."""
    data = tmp_path / "data"
    with http_proc(data, KIOKU_HTTP__TOKEN=TOKEN) as owner:
        with kioku_ui(data) as ui:
            netloc = urlsplit(ui.link).netloc
            assert raw(ui.link, "GET", "/ui/login")[0] == 200  # warm: imports, pools
            before = _rss_kb(ui.proc.pid)
            answer = _chunked_post(netloc, ui.port, "/ui/login", BIG_MB)
            grown = _rss_kb(ui.proc.pid) - before
            assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
            assert grown < 16 * 1024, f"kioku ui grew by {grown} KiB"
        netloc = f"127.0.0.1:{owner.port}"
        assert httpx.get(f"http://{netloc}/ui/login", timeout=60).status_code == 200
        before = _rss_kb(owner.proc.pid)
        answer = _chunked_post(netloc, owner.port, "/ui/login", BIG_MB)
        grown = _rss_kb(owner.proc.pid) - before
        assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
        assert grown < 16 * 1024, f"the owner grew by {grown} KiB"
        _kioku_stop(data, owner)
