"""Reading what ``kioku import`` is given: a kioku export, a ``server-memory`` JSONL
knowledge graph, or a folder of Markdown notes (an Obsidian vault, a basic-memory
folder). The CLI reads the files; the owner only ever sees items (``import_check``).

Every item carries ``where`` (``PATH line N``, or a file's path in the folder), so a
refusal names its place. A Markdown folder import stays inside the folder: a link
(file or directory) that leads outside it is skipped with a warning, and folders whose
name starts with ``.`` (``.obsidian``, ``.trash``, ``.git``) are not read.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ulid import ULID

from mcp_gateway.common.errors import InvalidInput
from mcp_gateway.common.validation import visible
from mcp_gateway.services.import_check import Limits, place
from mcp_gateway.services.markdown_notes import domain_of, markdown_note

FORMAT = "kioku-export"
VERSION = 1
# What one import reads at most, checked before reading: an export file's bytes (a
# 100,000-note export is ~100 MB) and a Markdown folder's files. ``/dev/zero`` was read
# without end (4.8 GB of memory in 10 s, issue 47); a device or FIFO is refused unread.
MAX_FILE_BYTES = 1024 * 1024 * 1024
MAX_FOLDER_FILES = 100_000


@dataclass
class Parsed:
    items: list[dict[str, Any]]
    warnings: list[str] = field(default_factory=list)


def stable_id(kind: str, key: str, at: float = 0.0) -> str:
    """A ULID derived from ``key`` (and a timestamp), the same on every import."""
    raw = f"{kind}:{key}".encode("utf-8", "surrogatepass")
    digest = hashlib.blake2b(raw, digest_size=10).digest()
    return str(ULID.from_bytes(int(at * 1000).to_bytes(6, "big") + digest))


def parse_file(path: Path, limits: Limits) -> Parsed:
    """A kioku export, a server-memory JSONL graph, or a folder of Markdown notes."""
    if path.is_dir():
        return parse_markdown_folder(path, limits)
    lines = _json_lines(path)
    shown = place(str(path))
    first = lines[0][1] if lines else None
    if isinstance(first, dict) and first.get("kind") == FORMAT:
        if first.get("version") != VERSION:
            raise InvalidInput(f"{shown} is a kioku export of version {first.get('version')!r}")
        bad = [n for n, x in lines[1:] if not isinstance(x, dict)]
        if bad:
            raise InvalidInput(
                f"{shown} line {bad[0]}: not a JSON object (a note or a record); nothing imported"
            )
        return Parsed([{**x, "where": f"{path} line {n}"} for n, x in lines[1:]])
    graph = ("entity", "relation")
    if lines and all(isinstance(x, dict) and x.get("type") in graph for _, x in lines):
        return Parsed(parse_server_memory(lines, path))
    raise InvalidInput(
        f"{shown}: not a kioku export nor a server-memory knowledge graph: give a "
        "`kioku export` file, a server-memory memory.json, or a folder of Markdown notes"
    )


def _json_lines(path: Path) -> list[tuple[int, Any]]:
    """(line number, value) of each non-blank line."""
    shown = place(str(path))
    try:
        data = _read_file(path, MAX_FILE_BYTES)
    except OSError as exc:
        raise InvalidInput(
            f"cannot read {shown} ({exc.strerror}): give a `kioku export` file, a "
            "server-memory memory.json, or a folder of Markdown notes"
        ) from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InvalidInput(f"cannot read {shown} line {line}: not UTF-8 text") from None
    out = []
    for n, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            out.append((n, json.loads(raw)))
        except ValueError as exc:
            msg = getattr(exc, "msg", "not JSON")
            raise InvalidInput(
                f"cannot read {shown} line {n} as JSON ({msg}): give a `kioku export` file, "
                "a server-memory memory.json, or a folder of Markdown notes"
            ) from None
        except RecursionError:
            raise InvalidInput(f"cannot read {shown} line {n}: JSON nested too deeply") from None
    return out


def parse_server_memory(lines: Iterable[tuple[int, Any]], path: Path) -> list[dict[str, Any]]:
    """Each entity becomes one knowledge note: its name, observations and relations."""
    entities: dict[str, tuple[int, dict[str, Any]]] = {}
    relations: dict[str, list[str]] = {}
    for n, line in lines:
        if line.get("type") == "entity" and line.get("name"):
            entities[str(line["name"])] = (n, line)
        elif line.get("type") == "relation" and line.get("from"):
            rel = f"- {line.get('relationType', 'relates to')} {line.get('to', '?')}"
            relations.setdefault(str(line["from"]), []).append(rel)
    out = []
    for name, (n, entity) in entities.items():
        body = [f"{name} ({entity.get('entityType', 'entity')})"]
        observations = entity.get("observations") or []
        body += [f"- {o}" for o in (observations if isinstance(observations, list) else [])]
        body += relations.get(name, [])
        out.append(
            {
                "kind": "note",
                "where": f"{path} line {n}",
                "id": stable_id("server-memory", name),
                "text": "\n".join(body),
                "type": "knowledge",
                "domain": domain_of(str(entity.get("entityType", ""))),
                "replace_text": True,
            }
        )
    return out


# -- Markdown folders -------------------------------------------------------------------
def parse_markdown_folder(root: Path, limits: Limits) -> Parsed:
    """Each ``*.md`` file becomes one note, keyed by its path in the folder
    (``markdown_notes`` reads its front matter and wiki links)."""
    out = Parsed([])
    # a file is read whole only below this size (front matter and links come off later)
    most = max(limits.note_bytes * 2, 65_536)
    for path, rel in _markdown_files(root, out.warnings):
        try:
            size = path.stat().st_size
            if size > most:
                raise InvalidInput(
                    f"{size} bytes, over the {limits.note_bytes}-byte limit of a note: split "
                    "it into several files"
                )
            text = _read_inside(path).decode("utf-8", errors="replace")
            note, warning = markdown_note(text, limits.note_types)
        except OSError as exc:
            out.warnings.append(f"skipped {place(rel)}: cannot read it ({exc.strerror})")
            continue
        except InvalidInput as exc:
            raise InvalidInput(f"{place(rel)}: {exc}; nothing imported") from None
        if warning:
            out.warnings.append(f"{place(rel)}: {warning}")
        if not visible(note["text"]):  # a blank page or a template: nothing to remember
            out.warnings.append(f"skipped {place(rel)}: no text")
            continue
        stat = path.stat()
        folder = Path(rel).parent.name
        out.items.append(
            {
                "kind": "note",
                "where": rel,
                "id": stable_id("markdown", rel),
                **note,
                "domain": note.get("domain") or domain_of(folder),
                "created_at": stat.st_mtime,
                "updated_at": stat.st_mtime,
                "replace_text": True,
            }
        )
    return out


def _markdown_files(root: Path, warnings: list[str]) -> list[tuple[Path, str]]:
    """(path to read, path in the folder) of each ``*.md`` file inside ``root``."""
    top = root.resolve()
    found: list[tuple[Path, str]] = []
    for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
        here = Path(dirpath)
        for name in list(dirnames):
            if name.startswith("."):
                dirnames.remove(name)
            elif (here / name).is_symlink():  # os.walk does not enter it; say so if it leads out
                lead = _resolved(here / name)
                if lead is None:
                    rel = place(_rel(here / name, top))
                    warnings.append(f"skipped {rel}: a symlink loop")
                elif not lead.is_relative_to(top):
                    rel = place(_rel(here / name, top))
                    warnings.append(f"skipped {rel}: a link to outside the folder")
        for name in sorted(filenames):
            if not name.lower().endswith(".md"):
                continue
            path = here / name
            rel = _rel(path, top)
            target = _resolved(path)
            if len(found) >= MAX_FOLDER_FILES:
                raise InvalidInput(
                    f"over {MAX_FOLDER_FILES:,} Markdown files in {place(str(root))}: import "
                    "its folders one at a time; nothing imported"
                )
            if target is None:
                warnings.append(f"skipped {place(rel)}: a symlink loop")
            elif not target.is_relative_to(top):
                warnings.append(f"skipped {place(rel)}: a link to outside the folder")
            elif not target.is_file():
                warnings.append(f"skipped {place(rel)}: not a regular file")
            else:
                try:
                    rel.encode("utf-8")
                except UnicodeEncodeError:
                    warnings.append(f"skipped {place(rel)}: its name is not UTF-8")
                    continue
                found.append((target, rel))
    return sorted(found, key=lambda pair: pair[1])


def _read_file(path: Path, limit: int) -> bytes:
    """A regular file's bytes, refused unread when it is anything else or over ``limit``
    (``InvalidInput`` naming it); opened without blocking, so a FIFO cannot hang us."""
    shown = place(str(path))
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise InvalidInput(
                f"{shown} is not a regular file: give a `kioku export` file, a "
                "server-memory memory.json, or a folder of Markdown notes"
            )
        if info.st_size > limit:
            raise InvalidInput(
                f"{shown} is {info.st_size:,} bytes, over the {limit:,}-byte limit of one "
                "import: split it (kioku export --namespace, or by lines)"
            )
        data = fh.read(limit + 1)
    if len(data) > limit:  # it grew while we read
        raise InvalidInput(f"{shown} is over the {limit:,}-byte limit of one import: split it")
    return data


def _resolved(path: Path) -> Path | None:
    """Where ``path`` leads, or None for a symlink loop or an unreadable link."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # RuntimeError: "Symlink loop" (Python 3.11)
        return None


def _rel(path: Path, top: Path) -> str:
    return path.relative_to(top).as_posix()


def _read_inside(path: Path) -> bytes:
    """The file's bytes, refusing a link swapped in after the walk checked the path."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as fh:
        return fh.read()
