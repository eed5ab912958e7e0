"""`kioku import` follows a running owner's embedding backlog on stderr until every
note it wrote has its exact vector, and `kioku status` shows the backlog per embedding
model with its rate: real `kioku serve --http`, real CLI processes, the bundled model."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
from pathlib import Path

import pytest

from tests.http_server import KIOKU, kioku_env
from tests.realproc import http_proc
from tests.test_owner import cli, ok

TOPICS = ["deploys", "the billing API", "flaky tests", "database migrations", "code review"]


def notes_folder(folder: Path, count: int, name: str = "n") -> Path:
    folder.mkdir()
    for i in range(count):
        topic = TOPICS[i % len(TOPICS)]
        (folder / f"{name}{i:03d}.md").write_text(
            f"# Lesson {i}\nWith {topic}, note {i}: check the logs first and write down what "
            f"fixed it (case {i * 7 % 13}).",
            "utf-8",
        )
    return folder


# slow: its own owner process (model load) and 40 notes embedded twice (draft, exact)
@pytest.mark.slow
def test_import_follows_the_backlog_until_settled_and_status_shows_it(tmp_path: Path) -> None:
    data = tmp_path / "data"
    folder = notes_folder(tmp_path / "notes", 40)
    with http_proc(data):
        done = cli(data, "import", str(folder), timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.strip().splitlines() == [
            "imported 40 notes (0 updated), 0 records, 0 links; 0 already present"
        ]  # the progress is on stderr only
        lines = done.stderr.strip().splitlines()
        assert lines[0].startswith("kioku: read and checked 40 items in ")
        assert "\r" not in done.stderr  # not a terminal: whole lines, no rewriting
        assert lines[1].startswith("kioku: embedding: ")
        assert lines[-1].startswith("kioku: embedding: 40/40 searchable, 40/40 exact; settled in")

        status = json.loads(ok(data, "status", "--json"))
        # one line per embedding model: the main one first, then each further channel
        backlog = status["backlog"][0]
        assert backlog["model"] == status["embedder"]
        assert all((b["waiting"], b["drafts"]) == (0, 0) for b in status["backlog"])  # settled
        # the 40 vectors were written within the last minute (a redo rewrites its row)
        assert backlog["per_s"] * backlog["window_s"] >= 40
        shown = ok(data, "status")
        assert f"backlog    {status['embedder']}: 0 waiting for a vector, 0 drafts" in shown

        more = cli(data, "import", "--no-wait", str(notes_folder(tmp_path / "more", 5, "more")))
        assert more.returncode == 0 and "imported 5 notes" in more.stdout
        assert "embedding:" not in more.stderr

        # stderr on a terminal: one line rewritten in place, ended once settled
        shown = on_a_terminal(data, "import", str(notes_folder(tmp_path / "tty", 8, "tty")))
        assert "\rkioku: embedding: " in shown
        last = shown.rstrip(" \n").split("\r")[-1]
        # 8 new, and those of the 5 --no-wait notes the owner had not embedded yet
        settled = re.match(r"kioku: embedding: (\d+)/\1 searchable, \1/\1 exact; settled in", last)
        assert settled is not None and 8 <= int(settled[1]) <= 13, last
        assert shown.endswith("\n")


def on_a_terminal(data: Path, *args: str) -> str:
    """What the CLI writes to stderr when stderr is a terminal (a pseudo-terminal)."""
    main, other = pty.openpty()
    proc = subprocess.Popen(
        [KIOKU, *args], env=kioku_env(data), stdout=subprocess.DEVNULL, stderr=other
    )
    os.close(other)
    out = b""
    while True:
        try:
            chunk = os.read(main, 4096)
        except OSError:  # the terminal closed: the process is done with it
            break
        if not chunk:
            break
        out += chunk
    os.close(main)
    assert proc.wait(timeout=300) == 0, out[-2000:]
    return out.decode("utf-8").replace("\r\n", "\n")  # the terminal's own newline mapping


def test_import_without_an_owner_says_who_embeds(tmp_path: Path) -> None:
    data = tmp_path / "data"
    done = cli(data, "import", str(notes_folder(tmp_path / "notes", 3)))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "imported 3 notes" in done.stdout
    assert "3 notes and records wait for a vector: the next `kioku serve` embeds them" in (
        done.stderr
    )
    assert "Traceback" not in done.stderr
