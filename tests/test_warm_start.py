"""The model warms while the editor initializes (issue 48): an editor's ``kioku serve``
spawns the daemon, which starts loading its models before it imports the server
(``daemon.boot``, ``embedders.preload``), so the first search after ``initialize`` no
longer waits for imports, then the model, one after the other.

Through the real door: ``kioku serve`` over stdio, raw JSON-RPC, a cold start (no
daemon) into a data dir with a note in it, as an editor's launch the day after. The
daemon's log shows the loading began before the server's imports were done (the
``owns`` line comes after them); before this change the model loaded after that line,
once the stores were opening. The timings are printed, not asserted (a shared machine).
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from tests.realproc import INITIALIZE, KIOKU, gateway_paths, kill_daemon, kioku_env, wait_until
from tests.test_make_serve import Lines, send

SEARCH = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/call",
    "params": {
        "name": "search_memory",
        "arguments": {"query": "how do we ship a release to the staging servers"},
    },
}


def launch(data: Path) -> tuple[float, float, dict[str, object]]:
    """One editor launch: seconds to the ``initialize`` reply, then from it to the first
    search's answer, and that answer."""
    began = time.monotonic()
    proc = subprocess.Popen(
        [KIOKU, "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=kioku_env(data, KIOKU_LOG_LEVEL="INFO"),
    )
    try:
        lines = Lines(proc)
        send(proc, INITIALIZE)
        assert lines.message()["id"] == 1
        initialized = time.monotonic()
        send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        send(proc, SEARCH)
        answer = lines.message()
        searched = time.monotonic()
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        proc.wait(timeout=30)
    return initialized - began, searched - initialized, answer


# slow: its own daemons (two model loads)
@pytest.mark.slow
def test_a_cold_start_loads_the_model_while_the_server_imports(tmp_path: Path) -> None:
    data = tmp_path / "data"
    log = gateway_paths(data).log
    try:
        subprocess.run(
            [KIOKU, "add", "Deploys to staging go through the release pipeline, never by hand"],
            env=kioku_env(data),
            check=True,
            capture_output=True,
            timeout=300,
        )
        kill_daemon(data)  # a cold start: no daemon, a data dir used before
        log.unlink(missing_ok=True)
        to_init, to_search, answer = launch(data)
        print(f"cold start: initialize {to_init:.2f} s, first search {to_search:.2f} s after it")
        content = answer["result"]["structuredContent"]  # type: ignore[index]
        assert [hit["text"] for hit in content["results"]][:1] == [
            "Deploys to staging go through the release pipeline, never by hand"
        ], answer
        assert wait_until(lambda: "kioku ready" in log.read_text(), 60)
        lines = log.read_text().splitlines()
        started = "loading the models in the background"
        began = [i for i, line in enumerate(lines) if started in line]
        owns = next(i for i, line in enumerate(lines) if " owns " in line)
        assert began and began[0] < owns, "\n".join(lines)  # beside the imports, not after
        assert any("models loaded in the background" in line for line in lines)
        assert "Traceback" not in log.read_text()
    finally:
        kill_daemon(data)
