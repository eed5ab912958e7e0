"""compose.yaml and the Dockerfile must match the CLI and the settings (no Docker here)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel

from mcp_gateway.cli.main import _parser
from mcp_gateway.common.settings import KiokuSettings

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data = yaml.safe_load((ROOT / "compose.yaml").read_text())
    assert isinstance(data, dict)
    return data


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, Any]:
    return dict(compose["services"])


def ours(services: dict[str, Any]) -> dict[str, Any]:
    return {n: s for n, s in services.items() if str(s.get("image", "")).startswith("kioku")}


def dockerfile_cmd() -> tuple[list[str], list[str]]:
    text = (ROOT / "Dockerfile").read_text()
    entry = re.search(r"^ENTRYPOINT (\[.*\])$", text, re.M)
    cmd = re.search(r"^CMD (\[.*\])$", text, re.M)
    assert entry and cmd
    return yaml.safe_load(entry.group(1)), yaml.safe_load(cmd.group(1))


GATEWAYS = ("gateway-1", "gateway-2")


def test_expected_services_with_health_checks_and_restart(services: dict[str, Any]) -> None:
    expected = {"postgres", "redis", "qdrant", "ollama", "ollama-pull", "proxy", "worker"}
    assert expected | set(GATEWAYS) <= set(services)
    for name, svc in services.items():
        if name == "ollama-pull":
            assert svc["restart"] == "no"
            continue
        assert svc["restart"] == "unless-stopped", name
        assert svc["healthcheck"]["test"][0] == "CMD", name
    assert services["worker"]["deploy"]["replicas"] == 2
    assert services["qdrant"]["image"].startswith("qdrant/qdrant")
    assert services["ollama"]["image"].startswith("ollama/ollama")
    assert services["ollama-pull"]["command"] == ["pull", "nomic-embed-text"]


def test_volumes_persist_index_models_and_data(compose: dict[str, Any], services) -> None:
    declared = set(compose["volumes"])
    for name, mount in [
        ("qdrant", "/qdrant/storage"),
        ("ollama", "/root/.ollama"),
        ("postgres", "/var/lib/postgresql/data"),
        ("gateway-1", "/data"),
        ("gateway-2", "/data"),
        ("worker", "/data"),
    ]:
        vols = services[name]["volumes"]
        assert any(v.endswith(":" + mount) and v.split(":")[0] in declared for v in vols), name
    # each gateway its own data dir (its gateway id, so its cursors); the workers none
    # of a gateway's
    mounts = {n: {v.split(":")[0] for v in services[n]["volumes"]} for n in [*GATEWAYS, "worker"]}
    assert not mounts["gateway-1"] & mounts["gateway-2"]
    assert not (mounts["gateway-1"] | mounts["gateway-2"]) & mounts["worker"]


def test_every_command_parses_with_the_cli(services: dict[str, Any]) -> None:
    entry, cmd = dockerfile_cmd()
    assert entry == ["kioku"]
    parser = _parser()
    parser.parse_args(cmd)
    for name, svc in ours(services).items():
        args = parser.parse_args(svc["command"])
        assert args.command in {"serve", "worker"}, name
    check = services["worker"]["healthcheck"]["test"][1:]
    assert check[0] == "kioku"
    assert parser.parse_args(check[1:]).check is True


def _field_exists(model: type[BaseModel], path: list[str]) -> bool:
    field = model.model_fields.get(path[0])
    if field is None:
        return False
    if len(path) == 1:
        return True
    sub = field.annotation
    return isinstance(sub, type) and issubclass(sub, BaseModel) and _field_exists(sub, path[1:])


def _environment(svc: dict[str, Any]) -> dict[str, str]:
    env = {k: str(v) for k, v in svc["environment"].items()}
    # ${VAR:?message} is compose interpolation: stand a value in for the test
    return {k: re.sub(r"\$\{[^}]+\}", "test-token", v) for k, v in env.items()}


def test_every_env_var_is_a_setting_and_is_applied(services, monkeypatch, tmp_path) -> None:
    for name, svc in ours(services).items():
        env = _environment(svc)
        monkeypatch.setenv("KIOKU_CONFIG", str(tmp_path / "none.toml"))
        for key, value in env.items():
            assert key.startswith("KIOKU_"), key
            path = key[len("KIOKU_") :].lower().split("__")
            assert _field_exists(KiokuSettings, path), f"{name}: {key} is not a setting"
            monkeypatch.setenv(key, value)
        settings = KiokuSettings()
        assert settings.shared_store
        assert str(settings.database).startswith("postgresql://kioku:")
        assert settings.redis_url == "redis://redis:6379/0"
        assert settings.qdrant_url == "http://qdrant:6333"
        assert settings.embedder.provider == "ollama"
        assert str(settings.data_dir) == "/data"
        for key in env:
            monkeypatch.delenv(key)


def test_ports_match_the_gateway_command_and_image(services: dict[str, Any]) -> None:
    ports = set()
    for name in GATEWAYS:
        gateway = services[name]
        args = _parser().parse_args(gateway["command"])
        assert args.http and args.host == "0.0.0.0"
        assert "ports" not in gateway, "clients reach the gateways through the proxy"
        assert str(args.port) in " ".join(gateway["healthcheck"]["test"])
        assert "KIOKU_HTTP__TOKEN" in gateway["environment"]
        ports.add(args.port)
    (port,) = ports
    assert f"EXPOSE {port}" in (ROOT / "Dockerfile").read_text()
    assert services["proxy"]["ports"] == [f"{port}:{port}"]


def test_the_proxy_sends_each_session_to_one_gateway(compose: dict[str, Any], services) -> None:
    proxy = services["proxy"]
    (config,) = proxy["configs"]
    text = compose["configs"][config["source"]]["content"]
    port = _parser().parse_args(services["gateway-1"]["command"]).port
    assert f"bind :{port}" in text
    for name in GATEWAYS:
        assert f"server {name} {name}:{port} check" in text
        assert proxy["depends_on"][name]
    # an MCP session lives in the gateway that opened it: requests carrying its id must
    # go back there (stored from the response, matched on each request)
    assert "stick store-response res.hdr(mcp-session-id)" in text
    assert "stick on req.hdr(mcp-session-id)" in text
    # the image the gateways run can open PostgreSQL and the Qdrant server (compose's
    # KIOKU_QDRANT_URL): both are extras
    assert 'pip install ".[postgres,qdrant]"' in (ROOT / "Dockerfile").read_text()


def test_services_reach_each_other_by_the_urls_in_the_environment(services) -> None:
    env = _environment(services["worker"])
    for url, service in [
        (env["KIOKU_DATABASE_URL"], "postgres"),
        (env["KIOKU_REDIS_URL"], "redis"),
        (env["KIOKU_QDRANT_URL"], "qdrant"),
        (env["KIOKU_EMBEDDER__OLLAMA_HOST"], "ollama"),
    ]:
        assert f"//{service}:" in url or f"@{service}:" in url
        assert service in services["worker"]["depends_on"] or service == "ollama"
    assert services["worker"]["depends_on"]["ollama-pull"]["condition"] == (
        "service_completed_successfully"
    )
