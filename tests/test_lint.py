"""The house style, checked where CI runs: ``make lint``'s three checks as one slow test.

CI runs the test suites only (``.ci/run``), so a style or type error that ``make lint``
would catch used to land unseen. The linters are pinned in the ``dev`` extra, so a new
release's rules cannot fail a clean checkout that passed here.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    "command",
    [
        ["ruff", "check", "."],
        ["ruff", "format", "--check", "."],
        ["mypy"],
    ],
    ids=["ruff-check", "ruff-format", "mypy"],
)
def test_lint_passes(command: list[str]) -> None:
    done = subprocess.run(
        [str(BIN / command[0]), *command[1:]],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, f"`{' '.join(command)}` failed:\n{done.stdout}{done.stderr}"
