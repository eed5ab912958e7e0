"""Config mistakes caught when settings are read, each reported as one line that names
the file, key or variable to fix (never a traceback, never silently ignored):

- ``KIOKU_CONFIG`` naming a file that does not exist -> error;
- a TOML file that does not parse -> error naming the file (and the parser's line);
- an unknown section or key in a TOML file -> error naming the file and the key, with
  the closest valid key when there is one;
- an unknown ``KIOKU_*`` environment variable (``KIOKU_EMBEDDERR__PROVIDER``) -> a
  warning naming the closest valid one (a variable meant for another program that
  shares the prefix must not stop kioku);
- a value pydantic rejects -> error naming the setting and where it may come from.
"""

from __future__ import annotations

import difflib
import tomllib
import types
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from mcp_gateway.common.errors import KiokuError

ENV_PREFIX = "KIOKU_"
# read by settings.config_files(), not a setting itself
EXTRA_ENV = ("KIOKU_CONFIG",)


class ConfigError(KiokuError):
    """A configuration mistake; the message says which file, key or variable."""


def _unwrap(annotation: Any) -> Any:
    """``X | None`` -> ``X``."""
    if get_origin(annotation) in (Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        return args[0] if len(args) == 1 else annotation
    return annotation


def _model(annotation: Any) -> type[BaseModel] | None:
    annotation = _unwrap(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def _dict_values(annotation: Any) -> tuple[bool, type[BaseModel] | None]:
    """Whether the field is a dict, and the model of its values if they are models."""
    annotation = _unwrap(annotation)
    if get_origin(annotation) is dict:
        args = get_args(annotation)
        return True, _model(args[1]) if len(args) == 2 else None
    return False, None


def _closest(name: str, candidates: Sequence[str]) -> str:
    match = difflib.get_close_matches(name, candidates, n=1, cutoff=0.6)
    return f" (did you mean {match[0]!r}?)" if match else ""


def unknown_keys(model: type[BaseModel], data: Mapping[str, Any], prefix: str = "") -> list[str]:
    """Dotted names of keys in ``data`` that ``model`` does not define, with a hint."""
    found: list[str] = []
    fields = model.model_fields
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if key not in fields:
            valid = [f"{prefix}{name}" for name in fields]
            kind = "section" if isinstance(value, dict) else "key"
            found.append(f"unknown {kind} {dotted!r}{_closest(dotted, valid)}")
            continue
        annotation = fields[key].annotation
        sub = _model(annotation)
        if sub is not None and isinstance(value, dict):
            found += unknown_keys(sub, value, f"{dotted}.")
            continue
        is_dict, value_model = _dict_values(annotation)
        if is_dict and value_model is not None and isinstance(value, dict):
            for name, item in value.items():
                if isinstance(item, dict):
                    found += unknown_keys(value_model, item, f"{dotted}.{name}.")
    return found


def check_toml(path: Path, model: type[BaseModel]) -> None:
    """Parse ``path`` and reject unknown keys; ConfigError names the file."""
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"config file {path} cannot be read: {exc.strerror}") from None
    problems = unknown_keys(model, data)
    if problems:
        raise ConfigError(f"config file {path}: {'; '.join(problems)}")


def _env_names(model: type[BaseModel], prefix: str) -> Iterator[tuple[str, bool]]:
    """(NAME, open): every variable the model reads; ``open`` when deeper names under
    ``NAME__`` are valid too (dict fields such as ``KIOKU_HTTP__GRANTS__ALICE__TOKEN``)."""
    for name, field in model.model_fields.items():
        full = f"{prefix}{name.upper()}"
        sub = _model(field.annotation)
        if sub is not None:
            yield full, False
            yield from _env_names(sub, f"{full}__")
        else:
            yield full, _dict_values(field.annotation)[0]


def unknown_env(environ: Mapping[str, str], model: type[BaseModel]) -> list[str]:
    """A warning line for each ``KIOKU_*`` variable no setting reads."""
    names = dict(_env_names(model, ENV_PREFIX))
    valid = [*names, *EXTRA_ENV]
    opened = [f"{n}__" for n, is_open in names.items() if is_open]
    warnings = []
    for var in sorted(environ):
        upper = var.upper()
        if not upper.startswith(ENV_PREFIX) or upper in valid:
            continue
        if any(upper.startswith(p) for p in opened):
            continue
        match = difflib.get_close_matches(upper, valid, n=1, cutoff=0.6)
        hint = f": did you mean {match[0]}?" if match else ""
        warnings.append(f"ignoring unknown environment variable {var}{hint}")
    return warnings


def describe(exc: ValidationError, environ: Mapping[str, str], files: Sequence[Path]) -> str:
    """One line per rejected value: the setting, the value, why, and where it came from."""
    lines = []
    for err in exc.errors():
        loc = ".".join(str(part) for part in err["loc"])
        var = ENV_PREFIX + "__".join(str(part).upper() for part in err["loc"])
        if var in {k.upper() for k in environ}:
            source = f" (from {var})"
        elif files:
            source = f" (from {', '.join(str(f) for f in files)} or an override)"
        else:
            source = ""
        message = str(err["msg"]).removeprefix("Value error, ")
        # never echo what may hold a secret (tokens, keys, passwords in URLs)
        secret = any(word in loc for word in ("token", "key", "grants", "url", "password"))
        plain = not secret and not isinstance(err["input"], dict)
        shown = f" = {err['input']!r}" if plain else ""
        lines.append(f"invalid setting {loc}{shown}: {message}{source}")
    return "\n".join(lines)
