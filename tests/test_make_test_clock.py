"""``make test`` prints the suite's CPU seconds beside its wall time (issue 48): the CPU
(user + system of pytest and every process it waited for) is what grows with the
project; the wall time on a shared machine mostly measures the load.

The real Makefile recipe runs, with a stand-in for pytest that spends a known CPU time
in a child process of its own (as the suite's ``kioku`` commands and servers do), and
stamps that make the set-up recipe a no-op.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# ~1.5 s of CPU in a grandchild of the recipe, the stand-in's own child
BURN = (
    "import subprocess, sys; subprocess.run([sys.executable, '-c', "
    "'import time\\nt = time.process_time()\\nwhile time.process_time() - t < 1.5: pass'])"
)


def test_make_test_prints_cpu_seconds_beside_wall_time(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(sys.executable)
    for stamp in (".installed", ".installed-dev"):
        (venv / stamp).touch()  # newer than pyproject.toml: nothing to install
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL")}
    done = subprocess.run(
        ["make", "test", f"VENV={venv}", f"PYTEST={sys.executable} -c {BURN!r}"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    line = done.stdout.strip().splitlines()[-1]
    found = re.match(r"make test: wall time (\d+) s, CPU (\d+) s \(user \d+ \+ sys \d+", line)
    assert found, line
    assert int(found.group(2)) >= 1, line  # the grandchild's CPU is counted
