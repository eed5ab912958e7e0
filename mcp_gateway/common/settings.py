"""Typed settings, one section per subsystem (``sections``), read once at the entry point.

Sources, lowest precedence first: the defaults (``sections`` and the top-level fields
below, mirrored in ``config/kioku.toml``), a TOML config file (``KIOKU_CONFIG`` or
``<user config dir>/kioku/kioku.toml``), then environment variables with the ``KIOKU_``
prefix (nested with ``__``, e.g. ``KIOKU_SEARCH__RRF_K=20``). Library code receives these
objects; it never reads the environment itself.
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import platformdirs
from pydantic import Field, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from mcp_gateway.common import redact
from mcp_gateway.common.config_check import ConfigError, check_toml, describe, unknown_env
from mcp_gateway.common.sections import (
    EmbedderSettings,
    ExportSettings,
    HttpSettings,
    IndexSettings,
    LocalGatewaySettings,
    NoteSettings,
    QueueSettings,
    SearchSettings,
)

log = logging.getLogger("kioku.config")

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir("kioku", appauthor=False))


class KiokuSettings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="KIOKU_",
        env_nested_delimiter="__",
        extra="ignore",
        # a typo in one grant must not print its token (or any other secret) in the error
        hide_input_in_errors=True,
    )

    data_dir: Path = Field(default_factory=default_data_dir)
    namespace: str = "default"
    # namespaces also searched (after the own one), e.g. ["team"]
    read_namespaces: list[str] = Field(default_factory=list)
    project: str = "MEM"
    qdrant_url: str | None = None
    redis_url: str | None = None
    # the shared truth store, postgresql://user@host/db (needs the `postgres` extra);
    # None: SQLite in data_dir, the embedded default. ``sqlite:////abs/path`` shares one
    # SQLite file between processes on one host (WAL; never over a network filesystem).
    database_url: str | None = None
    log_level: str = "INFO"

    embedder: EmbedderSettings = Field(default_factory=EmbedderSettings)
    index: IndexSettings = Field(default_factory=IndexSettings)
    notes: NoteSettings = Field(default_factory=NoteSettings)
    search: SearchSettings = Field(default_factory=SearchSettings)
    http: HttpSettings = Field(default_factory=HttpSettings)
    export: ExportSettings = Field(default_factory=ExportSettings)
    queue: QueueSettings = Field(default_factory=QueueSettings)
    local_gateway: LocalGatewaySettings = Field(default_factory=LocalGatewaySettings)

    @field_validator("data_dir")
    @classmethod
    def _data_dir(cls, value: Path) -> Path:
        path = value.expanduser()
        if path.exists() and not path.is_dir():
            raise ValueError(f"{path} is a file, not a directory: point data_dir at a directory")
        return path

    @field_validator("database_url")
    @classmethod
    def _database_url(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        url = value.strip()
        if not url.startswith(("postgresql://", "postgres://", "sqlite:///")):
            raise ValueError(
                "database_url must be a postgresql://user@host:port/dbname URL "
                "(or sqlite:////abs/path for processes sharing one host)"
            )
        if url.startswith("sqlite:"):
            return url
        problem = redact.url_problem(url)  # never quoted back: it may hold a password
        if problem is not None:
            raise ValueError(
                f"not a usable postgresql://user@host:port/dbname URL: {problem}; fix the URL"
            )
        if not _installed("psycopg"):
            raise ValueError(
                "a PostgreSQL URL needs the postgres extra: pip install 'kioku[postgres]' "
                "(or unset it to use SQLite in the data dir)"
            )
        return url

    @field_validator("log_level")
    @classmethod
    def _log_level(cls, value: str) -> str:
        level = value.strip().upper()
        if level not in LOG_LEVELS:
            raise ValueError(f"unknown log level {value!r}: use one of {', '.join(LOG_LEVELS)}")
        return level

    @field_validator("project")
    @classmethod
    def _project_code(cls, value: str) -> str:
        code = value.strip().upper()
        if not code.isascii() or not code.replace("_", "").isalnum() or len(code) > 16:
            raise ValueError("project must be a short code of letters/digits, e.g. MEM")
        return code

    @property
    def db_path(self) -> Path:
        if self.database_url and self.database_url.startswith("sqlite://"):
            # SQLAlchemy's form: sqlite:////abs/path (absolute), sqlite:///rel/path
            return Path(self.database_url.removeprefix("sqlite:///")).expanduser()
        return self.data_dir / "kioku.sqlite3"

    @property
    def shared_store(self) -> bool:
        """True when other gateways may write the same truth store: this one then
        follows the change feed and takes leases for periodic work."""
        return bool(self.database_url)

    @property
    def shared_index(self) -> bool:
        """True when every gateway of the deployment opens the same collection on a
        Qdrant server: one of them at a time writes it (``indexing.shared``)."""
        return self.shared_store and bool(self.qdrant_url)

    @property
    def database(self) -> Path | str:
        """What ``stores.db.Database`` opens: the PostgreSQL URL, else the SQLite file."""
        if self.database_url and not self.database_url.startswith("sqlite://"):
            return self.database_url
        return self.db_path

    @property
    def index_path(self) -> Path:
        return self.data_dir / "index"

    @property
    def activity_log_path(self) -> Path:
        return self.data_dir / "logs" / "activity.jsonl"

    @property
    def session_context_path(self) -> Path:
        return self.data_dir / "session_context.md"

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml_files = _config_files()
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        if toml_files:
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=toml_files))
        return tuple(sources)


def _installed(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


def _config_files() -> list[Path]:
    return [p for p in config_files(os.environ) if p.is_file()]


def config_files(environ: Mapping[str, str]) -> list[Path]:
    """The TOML files settings are read from (existing or not). The one place the
    environment is consulted outside pydantic-settings itself: it chooses the file."""
    explicit = environ.get("KIOKU_CONFIG")
    if explicit:
        return [Path(explicit).expanduser()]
    return [Path(platformdirs.user_config_dir("kioku", appauthor=False)) / "kioku.toml"]


def load_settings(**overrides: Any) -> KiokuSettings:
    """Read settings once (entry points only); ``overrides`` win over every source.

    Raises ``ConfigError`` with one line per mistake (see ``config_check``); logs a
    warning for each unknown ``KIOKU_*`` variable."""
    environ = os.environ
    files = config_files(environ)
    explicit = environ.get("KIOKU_CONFIG")
    if explicit and not files[0].is_file():
        raise ConfigError(f"KIOKU_CONFIG={explicit}: no such file")
    files = [p for p in files if p.is_file()]
    for path in files:
        check_toml(path, KiokuSettings)
    for warning in unknown_env(environ, KiokuSettings):
        log.warning("%s", warning)
    try:
        return KiokuSettings(**overrides)
    except ValidationError as exc:
        raise ConfigError(describe(exc, environ, files)) from None
