"""The README is the front door: its commands, the CI script, the client configs and
compose.yaml must agree with each other and with the CLI."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

from mcp_gateway.cli.main import _parser

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")


def test_ci_runs_the_readme_test_command_then_the_slow_set() -> None:
    assert "make test " in README
    steps = [
        line.strip()
        for line in (REPO / ".ci" / "run").read_text().splitlines()
        if line.strip().startswith("make ")
    ]
    assert steps == ["make test", "make test-slow"]
    makefile = (REPO / "Makefile").read_text()
    assert re.search(r'^\t.*\$\(PYTEST\) (\$\(WORKERS\) )?-m "not slow"', makefile, re.M)
    assert re.search(r"^\t.*\$\(PYTEST\) -m slow", makefile, re.M)


def test_readme_cli_commands_exist() -> None:
    sub = next(a for a in _parser()._actions if a.dest == "command")
    commands = set(sub.choices)  # type: ignore[arg-type]
    mentioned = set(re.findall(r"`kioku ([a-z]+)", README)) - {"serve"}
    assert mentioned and mentioned <= commands, mentioned - commands


def test_compose_token_variable_matches_the_readme() -> None:
    compose = (REPO / "compose.yaml").read_text()
    assert "${KIOKU_TOKEN:?" in compose and "KIOKU_TOKEN=" in README
    compose_sentence = README[README.index("The home server (`compose.yaml`)") :][:400]
    assert "KIOKU_TOKEN" in compose_sentence


def test_client_configs_use_an_absolute_path_and_the_script_is_executable() -> None:
    clients = REPO / "config" / "clients"
    for path in clients.glob("*.json"):
        servers = json.loads(path.read_text())
        entry = next(iter((servers.get("servers") or servers["mcpServers"]).values()))
        assert entry["command"].startswith("/") and entry["args"] == ["serve"], path
    script = clients / "claude-code.sh"
    assert os.access(script, os.X_OK)
    mode = subprocess.run(
        ["git", "ls-files", "-s", str(script)], cwd=REPO, capture_output=True, text=True
    ).stdout
    assert not mode or mode.startswith("100755"), mode


def test_readme_client_snippets_match_config_clients() -> None:
    """Before: the Claude Desktop/Cursor snippet lacked the `env` that the ready-made
    files in config/clients carry. Each JSON snippet in the README must equal the file
    for its client (same top-level key)."""
    snippets = [json.loads(b) for b in re.findall(r"```json\n(.*?)```", README, re.S)]
    files = {
        path.name: json.loads(path.read_text())
        for path in (REPO / "config" / "clients").glob("*.json")
    }
    by_key = {"servers": files["vscode-mcp.json"], "mcpServers": files["claude-desktop.json"]}
    assert files["cursor-mcp.json"] == files["claude-desktop.json"]
    clients = [s for s in snippets if "servers" in s or "mcpServers" in s]
    assert {next(iter(s)) for s in clients} == set(by_key)
    for snippet in clients:
        assert snippet == by_key[next(iter(snippet))], snippet
