"""What an install of kioku weighs, by distribution: a fresh virtual environment, ``pip
install`` of this checkout (``--extras``: e.g. ``dev``; none: the embedded default's
runtime), then the size of every installed distribution's files.

    python bench/install_size.py [--extras dev] [--keep DIR]

Needs the package index pip is configured with. Prints MB per distribution, largest
first, and the total (pip and setuptools, the venv's own, are listed apart).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENV_OWN = {"pip", "setuptools", "wheel"}

SIZES = r"""
import importlib.metadata as md, json, os
out = {}
for d in md.distributions():
    total = 0
    for f in d.files or []:
        try:
            total += os.path.getsize(d.locate_file(f))
        except OSError:
            pass
    out[d.metadata["Name"]] = total
print(json.dumps(out))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--extras", default="")
    parser.add_argument("--keep", type=Path, default=None, help="build the venv here, keep it")
    args = parser.parse_args()
    venv = args.keep or Path(tempfile.mkdtemp(prefix="kioku-install-")) / "venv"
    try:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        target = f".[{args.extras}]" if args.extras else "."
        subprocess.run(
            [str(venv / "bin" / "pip"), "install", "--quiet", target], check=True, cwd=ROOT
        )
        done = subprocess.run(
            [str(venv / "bin" / "python"), "-c", SIZES], check=True, capture_output=True
        )
        sizes: dict[str, int] = json.loads(done.stdout)
    finally:
        if args.keep is None:
            shutil.rmtree(venv.parent, ignore_errors=True)
    own = {n: s for n, s in sizes.items() if n.lower() in VENV_OWN}
    runtime = {n: s for n, s in sizes.items() if n.lower() not in VENV_OWN}
    print(f"pip install {target}: {len(runtime)} distributions")
    for name, size in sorted(runtime.items(), key=lambda kv: -kv[1]):
        print(f"{size / 1e6:8.1f} MB  {name}")
    print(f"{sum(runtime.values()) / 1e6:8.1f} MB  total (kioku and what it pulls in)")
    print(f"{sum(own.values()) / 1e6:8.1f} MB  the venv's own {sorted(own)}")


if __name__ == "__main__":
    main()
