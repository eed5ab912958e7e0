"""Shared by the memory-browser tests: a real gateway, MCP calls, a real headless browser.

The browser is Debian's ``chromium`` driven by Selenium through Debian's
``chromium-driver``. If either is missing, ``browser_paths`` installs both with apt
(root only) and skips, with the reason, only if that is impossible.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from mcp_gateway.daemon.local_gateway import lock_held

from .http_server import KIOKU, free_port, http_client, kioku_env
from .realproc import daemon_pid, gateway_paths, wait_until

TOKEN = "ui-test-token-0123456789abcdef"
SCREENSHOTS = Path(__file__).resolve().parents[1] / "bench" / "results" / "ui"
APT_TIMEOUT_S = 1200


def sign_in_link(proc: subprocess.Popen[str]) -> str:
    """The link ``kioku ui`` prints on its stdout ("sign-in link: URL"); "" if it ended
    without printing one."""
    assert proc.stdout is not None
    for line in proc.stdout:
        if "sign-in link" in line:
            return line.split(": ", 1)[1].strip()
    return ""


def mcp(url: str, tool: str, token: str = TOKEN, **arguments: Any) -> dict[str, Any]:
    """One MCP tool call over streamable HTTP; the structured result (errors raise)."""

    async def call() -> dict[str, Any]:
        async with http_client(url, token) as client:
            res = await client.call_tool(tool, arguments)
            assert not res.is_error, res.content[0].text  # type: ignore[union-attr]
            return res.structured_content or {}

    return asyncio.run(call())


def _found() -> tuple[str, str] | None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    return (chromium, driver) if chromium and driver else None


def browser_paths() -> tuple[str, str]:
    """(chromium, chromedriver), installing Debian's packages if they are missing."""
    found = _found()
    if found:
        return found
    if not shutil.which("apt-get"):
        pytest.skip("no chromium/chromedriver and no apt-get to install them")
    if os.geteuid() != 0:
        pytest.skip("no chromium/chromedriver, and installing them with apt needs root")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    log = []
    for cmd in (
        ["apt-get", "update", "-q"],
        [
            "apt-get",
            "install",
            "-y",
            "-q",
            "--no-install-recommends",
            "chromium",
            "chromium-driver",
        ],
    ):
        try:
            done = subprocess.run(
                cmd, env=env, capture_output=True, text=True, timeout=APT_TIMEOUT_S, check=False
            )
        except subprocess.TimeoutExpired:
            pytest.skip(f"`{' '.join(cmd)}` did not finish within {APT_TIMEOUT_S} s")
        log.append(done.stdout[-1500:] + done.stderr[-1500:])
    found = _found()
    if not found:
        pytest.skip("chromium could not be installed with apt:\n" + "\n".join(log)[-2000:])
    return found


def start_browser() -> Any:
    chromium, driver = browser_paths()
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium (a dev dependency)")
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for arg in (
        "--headless=new",
        "--no-sandbox",  # tests may run as root in a container
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1280,1000",
        "--lang=en-US",
        "--no-first-run",
    ):
        opts.add_argument(arg)
    # the browser's temp files (its profile, a singleton dir it leaves at exit) in a dir
    # of ours, removed when the test quits the browser
    tmp = tempfile.mkdtemp(prefix="kioku-chromium-")
    service = webdriver.ChromeService(executable_path=driver, env={**os.environ, "TMPDIR": tmp})
    browser = webdriver.Chrome(options=opts, service=service)
    browser.set_page_load_timeout(60)
    browser.implicitly_wait(5)
    quit_browser = browser.quit

    def quit_and_clean() -> None:
        try:
            quit_browser()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    browser.quit = quit_and_clean
    return browser


def screenshot(browser: Any, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    browser.save_screenshot(str(path))
    return path


# -- kioku ui, the real command --------------------------------------------------------


@dataclass
class UiProc:
    proc: subprocess.Popen[str]
    port: int
    link: str
    data: Path


def raw(
    link: str,
    method: str,
    path: str,
    *,
    headers: dict[str, str] | None = None,
    body: bytes = b"",
    host: str = "",
) -> tuple[int, bytes]:
    """One request with ``path`` sent byte for byte to the server of ``link``, with
    its Host (``kioku ui``'s secret name) unless ``host`` is given."""
    url = urlsplit(link)
    assert url.port is not None
    conn = http.client.HTTPConnection("127.0.0.1", url.port, timeout=60)
    try:
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        conn.putheader("Host", host or url.netloc)
        for key, value in (headers or {}).items():
            conn.putheader(key, value)
        if body or method == "POST":
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body or None)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def stop_daemon(data: Path) -> None:
    """SIGTERM the daemon ``kioku ui`` started (by its pid) and wait for its lock."""
    pid = daemon_pid(data)
    if pid is None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    wait_until(lambda: not lock_held(gateway_paths(data).lock), 30)


@contextlib.contextmanager
def kioku_ui(data: Path) -> Iterator[UiProc]:
    port = free_port()
    proc = subprocess.Popen(
        [KIOKU, "ui", "--no-browser", "--port", str(port)],
        env=kioku_env(data),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        link = sign_in_link(proc)
        assert link, proc.stderr.read() if proc.stderr else "no link"
        yield UiProc(proc, port, link, data)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
