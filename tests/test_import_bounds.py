"""``kioku import`` bounded before it reads (issue 47): the real CLI on hostile sources.
Each refusal is one line naming the file (and nothing is written); a symlink loop in a
Markdown folder is skipped with a warning."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.http_server import KIOKU, kioku_env

NOTE_ID = "01ARZ3NDEKTSV4RRFFQ69G5FAV"


def _import(tmp_path: Path, source: Path | str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [KIOKU, "import", str(source)],
        env=kioku_env(tmp_path / "data"),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )


def _front_matter(folder: Path, value: str) -> Path:
    folder.mkdir()
    (folder / "hostile.md").write_text(f"---\ntitle: {value}\n---\nbody text\n", "utf-8")
    (folder / "fine.md").write_text("# A fine note\n\nkept only if all is fine\n", "utf-8")
    return folder


def _export(path: Path, *notes: dict[str, object]) -> Path:
    lines = [{"kind": "kioku-export", "version": 1}, *notes]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), "utf-8")
    return path


@pytest.mark.parametrize(
    ("case", "names", "says"),
    [
        ("deep_yaml", "hostile.md", "nested too deeply"),
        ("long_number", "hostile.md", "4,300 digits"),
        ("dev_zero", "/dev/zero", "not a regular file"),
        ("changed_duplicate", "dump.jsonl line 3", "dump.jsonl line 2 with another text"),
    ],
)
def test_hostile_sources_are_one_line_naming_the_file(
    tmp_path: Path, case: str, names: str, says: str
) -> None:
    """Before: a traceback (deep YAML, a 5,000-digit number), a read without end
    (/dev/zero: 1.3 -> 4.8 GB RSS in 10 s), or the first of two notes sharing an id
    kept and nothing said."""
    source: Path | str
    if case == "deep_yaml":
        source = _front_matter(tmp_path / "vault", "[" * 5000 + "]" * 5000)
    elif case == "long_number":
        source = _front_matter(tmp_path / "vault", "9" * 5000)
    elif case == "dev_zero":
        source = "/dev/zero"
    else:
        note = {"kind": "note", "id": NOTE_ID, "type": "note"}
        source = _export(
            tmp_path / "dump.jsonl", {**note, "text": "first text"}, {**note, "text": "other"}
        )
    out = _import(tmp_path, source)
    assert out.returncode != 0, out.stdout + out.stderr
    assert "Traceback" not in out.stderr
    refusal = [line for line in out.stderr.splitlines() if says in line]
    assert refusal and names in refusal[0], out.stderr
    stats = subprocess.run(
        [KIOKU, "stats"], env=kioku_env(tmp_path / "data"), capture_output=True, text=True
    )
    assert "first text" not in stats.stdout  # nothing written


def test_a_symlink_loop_in_a_folder_is_skipped_and_named(tmp_path: Path) -> None:
    """Before: a symlink loop in a Markdown folder aborted the import with a traceback."""
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "fine.md").write_text("# Loop survivor\n\nimported despite the loop\n", "utf-8")
    os.symlink("loop.md", vault / "loop.md")  # a file link to itself
    os.symlink("../vault/deeper", vault / "deeper")  # a folder link to itself
    out = _import(tmp_path, vault)
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    assert "skipped loop.md: a symlink loop" in out.stderr
    assert "imported 1 note" in out.stdout + out.stderr
