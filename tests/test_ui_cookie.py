"""Another local user's server on another loopback port never gets the session cookie.

Browsers keep cookies per host, not per port. Measured in real headless Chromium: sign
in through the real ``kioku ui``, then visit a small server on another port (another
local user's, in the attack) at 127.0.0.1 and localhost, under the cookie's path; it
records every Cookie header it is sent. Before: it received ``kioku_session_…`` and
replaying it answered 200.
"""

from __future__ import annotations

import http.server
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

import pytest

from .http_server import KIOKU, free_port, kioku_env
from .ui_support import kioku_ui, raw, start_browser, stop_daemon

pytestmark = pytest.mark.slow

NOTE = "Cookie isolation check: the release checklist lives in docs/release.md."


class _Collector(http.server.BaseHTTPRequestHandler):
    seen: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.seen.append(self.headers.get("Cookie", ""))
        page = b"<html><body><p>another local server</p></body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(page)))
        self.end_headers()
        self.wfile.write(page)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def other_server() -> Iterator[int]:
    _Collector.seen = []
    # threaded: Chromium keeps a spare connection open (see test_ui_browser.py)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), _Collector)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        thread.join()


def test_another_loopback_port_never_gets_the_session_cookie(
    tmp_path: Path, other_server: int
) -> None:
    from selenium.webdriver.common.by import By

    data = tmp_path / "data"
    subprocess.run([KIOKU, "add", NOTE], env=kioku_env(data), check=True, timeout=120)
    browser: Any = None
    try:
        with kioku_ui(data) as ui:
            browser = start_browser()
            browser.get(ui.link)
            assert "release checklist" in browser.find_element(By.TAG_NAME, "main").text
            session = next(
                c for c in browser.get_cookies() if c["name"].startswith("kioku_session_")
            )
            for host in ("127.0.0.1", "localhost"):
                for path in ("/", "/ui/", "/ui/notes/x"):
                    browser.get(f"http://{host}:{other_server}{path}")
                    assert "another local server" in browser.page_source
            assert len(_Collector.seen) >= 6  # (and favicon requests)
            leaked = [c for c in _Collector.seen if "kioku_session" in c]
            assert not leaked, leaked
            # and the cookie itself answers only at kioku ui's secret host name
            cookie = {"Cookie": f"{session['name']}={session['value']}"}
            assert raw(ui.link, "GET", "/ui/", headers=cookie)[0] == 200
            loopback = f"127.0.0.1:{urlsplit(ui.link).port}"
            status, body = raw(ui.link, "GET", "/ui/", headers=cookie, host=loopback)
            assert status == 421 and b"release checklist" not in body
    finally:
        if browser is not None:
            browser.quit()
        stop_daemon(data)
