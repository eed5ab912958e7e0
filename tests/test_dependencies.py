"""Every module kioku imports is the standard library's, kioku's own, or a distribution
that pyproject.toml declares: a package that arrives only because another one depends
on it can vanish at that package's next release."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# kioku's packages, the offline training (training/), and the bench scripts tests load
# from bench/ by path
OWN = {"mcp_gateway", "workers", "training", "tests"} | {
    path.stem for folder in ("bench", "bench/quality") for path in (ROOT / folder).glob("*.py")
}


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared(extra: str | None = None) -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    specs = list(project["dependencies"])
    if extra:
        specs += project["optional-dependencies"][extra]
    return {_normal(re.split(r"[\s<>=!~;\[]", spec, maxsplit=1)[0]) for spec in specs}


def _top_level_imports(folders: list[str]) -> dict[str, str]:
    """Top-level module name -> one file importing it (lazy imports included)."""
    found: dict[str, str] = {}
    for folder in folders:
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text("utf-8"))):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    found.setdefault(name.split(".")[0], str(path.relative_to(ROOT)))
    return found


# optional backends: (module, its extra); only that module may import the extra's packages
OPTIONAL = {
    "mcp_gateway/stores/pg.py": "postgres",
    "mcp_gateway/index/qdrant.py": "qdrant",
    "mcp_gateway/embedders/minilm.py": "minilm",
}


def _undeclared(folders: list[str], declared: set[str]) -> list[str]:
    dists = packages_distributions()
    missing = []
    for top, where in sorted(_top_level_imports(folders).items()):
        if top in sys.stdlib_module_names or top in OWN or top == "__future__":
            continue
        # an optional backend's extra counts for that module's imports only
        allowed = declared | _declared(OPTIONAL[where]) if where in OPTIONAL else declared
        owners = {_normal(d) for d in dists.get(top, [])}
        if not owners:
            missing.append(f"{top} (imported by {where}) is installed by no distribution")
        elif not owners & allowed:
            missing.append(f"{top} (imported by {where}) comes from {sorted(owners)}, undeclared")
    return missing


def test_every_import_of_the_package_is_a_declared_dependency() -> None:
    assert _undeclared(["mcp_gateway", "workers"], _declared()) == []


def test_every_import_of_the_tests_is_declared_for_dev() -> None:
    assert _undeclared(["tests"], _declared("dev")) == []


def test_the_embedded_default_needs_no_optional_driver(tmp_path: Path) -> None:
    """Opening a SQLite store (the whole app's imports) loads no PostgreSQL driver and no
    Qdrant client (both are extras)."""
    code = (
        "import sys, pathlib\n"
        "import mcp_gateway.services.app, workers.settings\n"
        "from mcp_gateway.stores.db import Database\n"
        f"db = Database(pathlib.Path({str(tmp_path)!r}) / 'k.sqlite3'); db.open_sync()\n"
        "assert not [m for m in sys.modules if m.startswith('psycopg')], 'driver loaded'\n"
        "assert not [m for m in sys.modules if m.startswith('qdrant_client')], 'client loaded'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, timeout=120)


def test_the_embedded_owner_loads_neither_arq_nor_redis(tmp_path: Path) -> None:
    """The owner's modules and an opened app with its in-process job runner import
    neither arq nor redis (~7 MB resident with the JWT modules redis brings; bench/LOG.md,
    round 25, "footprint: the channel-less base"): only a Redis queue needs them."""
    code = (
        "import sys, asyncio, pathlib\n"
        "import mcp_gateway.daemon.owner\n"
        "from mcp_gateway.common.access import settings_scope\n"
        "from mcp_gateway.common.inputs import NoteFields\n"
        "from mcp_gateway.common.settings import KiokuSettings\n"
        "from mcp_gateway.services import Services\n"
        "from mcp_gateway.services.app import open_app\n"
        "async def main():\n"
        f"    s = KiokuSettings(data_dir=pathlib.Path({str(tmp_path)!r}))\n"
        "    async with open_app(s) as app:\n"
        "        await Services.over(app).notes.add(settings_scope(s), NoteFields(text='a'))\n"
        "        await app.settle()\n"
        "asyncio.run(main())\n"
        "print(sorted(m for m in ('arq', 'redis', 'jwt') if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, timeout=300, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_a_qdrant_server_without_its_extra_says_how_to_install_it(tmp_path: Path) -> None:
    """qdrant-client is the `qdrant` extra: configured without it, opening the index
    names the extra (here the package is hidden from the import system)."""
    code = (
        "import sys, asyncio, pathlib\n"
        "sys.modules['qdrant_client'] = None  # not installed\n"
        "from mcp_gateway.common.errors import StoreUnavailable\n"
        "from mcp_gateway.common.settings import KiokuSettings\n"
        "from mcp_gateway.index.base import IndexSpec\n"
        "from mcp_gateway.index.catalog import open_index\n"
        f"s = KiokuSettings(data_dir=pathlib.Path({str(tmp_path)!r}), "
        "qdrant_url='http://127.0.0.1:9')\n"
        "try:\n"
        "    asyncio.run(open_index(s, IndexSpec('c', 384, 'm')))\n"
        "except StoreUnavailable as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, timeout=120, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "pip install 'kioku[qdrant]'" in done.stdout
