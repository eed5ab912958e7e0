"""Backup, move and bring memories in: ``kioku export`` and ``kioku import``.

Export writes every note (deleted ones too, flagged) and every record with its history,
links and namespace, one JSON object per line after a header line. Import reads that
format back -- and what users come from: the ``server-memory`` JSONL knowledge graph
and a folder of Markdown notes. Import is idempotent: items keep (or, for foreign
formats, derive) stable ids, so importing the same file twice adds nothing; vectors are
not exported, so whatever embedder the target runs embeds the imported text.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from ulid import ULID

from ..app import AppContext
from ..errors import InvalidInput
from ..records import queries
from ..records.model import Edge, HistoryEntry, Record
from ..render import iso
from ..types import Note, Priority
from ..validation import clean_text, one_line

FORMAT = "kioku-export"
VERSION = 1


class ImportReport(BaseModel):
    notes_added: int = 0
    notes_updated: int = 0
    records_added: int = 0
    links_added: int = 0
    skipped: int = 0
    problems: list[str] = []


def stable_id(kind: str, key: str, at: float = 0.0) -> str:
    """A ULID derived from ``key`` (and a timestamp), the same on every import."""
    digest = hashlib.blake2b(f"{kind}:{key}".encode(), digest_size=10).digest()
    return str(ULID.from_bytes(int(at * 1000).to_bytes(6, "big") + digest))


class TransferService:
    def __init__(self, app: AppContext) -> None:
        self.app = app

    # -- export ---------------------------------------------------------------------
    async def export(self) -> list[dict[str, Any]]:
        """Header, then notes (oldest first), then records with links and history."""
        db = self.app.db

        def read(conn: sqlite3.Connection) -> list[dict[str, Any]]:
            notes = [dict(r) for r in conn.execute("SELECT * FROM notes ORDER BY id")]
            history: dict[str, list[dict[str, Any]]] = {}
            for row in conn.execute(
                "SELECT note_id, changed_at, field, old_value, new_value FROM note_history "
                "ORDER BY changed_at"
            ):
                history.setdefault(row["note_id"], []).append(dict(row))
            out: list[dict[str, Any]] = []
            for note in notes:
                note.pop("embedded_model", None)
                note["deleted"] = bool(note["deleted"])
                out.append({"kind": "note", **note, "history": history.get(note["id"], [])})
            for rec in queries.select_records(conn, "1 = 1 ORDER BY pk", []):
                edges = [e for e in queries.edges_touching(conn, rec.id) if e.source == rec.id]
                out.append(
                    {
                        "kind": "record",
                        **rec.model_dump(),
                        "history": [h.model_dump() for h in queries.history(conn, rec.id)],
                        "links": [e.model_dump() for e in edges],
                    }
                )
            return out

        items = await db.run(read)
        header = {
            "kind": FORMAT,
            "version": VERSION,
            "exported_at": iso(time.time()),
            "notes": sum(1 for i in items if i["kind"] == "note"),
            "records": sum(1 for i in items if i["kind"] == "record"),
        }
        return [header, *items]

    # -- import ---------------------------------------------------------------------
    async def import_items(self, items: Sequence[dict[str, Any]]) -> ImportReport:
        """Items as ``export`` writes them (or as ``parse_*`` made them from foreign
        formats). Existing ids are skipped (or, for ``replace_text`` items, updated)."""
        report = ImportReport()
        notes = [i for i in items if i.get("kind") == "note"]
        records = [i for i in items if i.get("kind") == "record"]
        added_notes = await self._import_notes(notes, report)
        added_records = await self._import_records(records, report)
        app = self.app
        for note in added_notes:
            await app.indexer.put_lexical(note)
        await app.jobs.notes_changed(added_notes, export=bool(added_notes))
        app.notes_pending()
        if added_records:
            from .records import RecordService

            await RecordService(app).changed(added_records)
        return report

    async def _import_notes(self, items: list[dict[str, Any]], report: ImportReport) -> list[Note]:
        limit = self.app.settings.notes.max_text_bytes
        types = self.app.settings.notes.types
        wanted: list[Note] = []
        for item in items:
            try:
                note = Note(
                    id=str(item["id"]),
                    text=clean_text(str(item["text"]), "text", limit),
                    type=str(item["type"]) if item.get("type") in types else "knowledge",
                    priority=_priority(item.get("priority")),
                    domain=one_line(str(item.get("domain", "")), "domain", 64).lower(),
                    solved_query=clean_text(
                        str(item.get("solved_query", "")), "solved_query", limit, required=False
                    ),
                    namespace=str(item.get("namespace") or self.app.settings.namespace),
                    created_at=float(item.get("created_at") or time.time()),
                    updated_at=float(item.get("updated_at") or time.time()),
                    deleted=bool(item.get("deleted", False)),
                )
            except (InvalidInput, KeyError, ValueError, TypeError) as exc:
                report.problems.append(f"note {item.get('id', '?')}: {exc}")
                continue
            wanted.append(note)
        histories = {str(i["id"]): i.get("history") or [] for i in items if "id" in i}
        replace = {str(i["id"]) for i in items if i.get("replace_text")}

        def write(conn: sqlite3.Connection) -> tuple[list[Note], int, int]:
            added, inserted, updated = [], 0, 0
            for note in wanted:
                row = conn.execute("SELECT text FROM notes WHERE id = ?", (note.id,)).fetchone()
                if row is not None:
                    if note.id in replace and row["text"] != note.text:
                        now = time.time()
                        conn.execute(
                            "INSERT INTO note_history VALUES (?, ?, 'text', ?, ?)",
                            (note.id, now, row["text"], note.text),
                        )
                        conn.execute(
                            "UPDATE notes SET text = ?, updated_at = ?, embedded_model = NULL "
                            "WHERE id = ?",
                            (note.text, now, note.id),
                        )
                        note.updated_at = now
                        added.append(note)
                        updated += 1
                    continue
                data = note.model_dump(exclude={"embedded_model"})
                data["deleted"] = int(note.deleted)
                conn.execute(
                    f"INSERT INTO notes ({', '.join(data)}) VALUES ({', '.join('?' * len(data))})",
                    tuple(data.values()),
                )
                conn.executemany(
                    "INSERT INTO note_history VALUES (?, ?, ?, ?, ?)",
                    [
                        (
                            note.id,
                            h["changed_at"],
                            h["field"],
                            h.get("old_value"),
                            h.get("new_value"),
                        )
                        for h in histories.get(note.id, [])
                    ],
                )
                inserted += 1
                if not note.deleted:  # deleted notes come back restorable, unindexed
                    added.append(note)
            return added, inserted, updated

        added, inserted, updated = await self.app.db.transaction(write)
        report.notes_added, report.notes_updated = inserted, updated
        report.skipped += len(items) - inserted - updated
        fresh = await self.app.notes.get_many([n.id for n in added])
        return list(fresh.values())

    async def _import_records(self, items: list[dict[str, Any]], report: ImportReport) -> list[str]:
        parsed: list[tuple[Record, list[HistoryEntry], list[Edge]]] = []
        for item in items:
            try:
                rec = Record.model_validate(
                    {k: v for k, v in item.items() if k not in ("kind", "history", "links")}
                )
                history = [HistoryEntry.model_validate(h) for h in item.get("history") or []]
                links = [Edge.model_validate(e) for e in item.get("links") or []]
            except (ValueError, TypeError) as exc:
                report.problems.append(f"record {item.get('id', '?')}: {exc}")
                continue
            parsed.append((rec, history, links))

        def write(conn: sqlite3.Connection) -> tuple[list[str], int]:
            added: list[str] = []
            for rec, history, _ in parsed:
                if conn.execute("SELECT 1 FROM records WHERE id = ?", (rec.id,)).fetchone():
                    continue
                queries.insert_record(conn, rec)
                for h in history:
                    if h.field != "created":
                        queries.add_history(conn, rec.id, h.field, h.old_value, h.new_value, h.at)
                # later ids of this type and project continue after the imported ones
                conn.execute(
                    "INSERT INTO record_sequences(namespace, type, project, last_seq) "
                    "VALUES (?, ?, ?, ?) ON CONFLICT(namespace, type, project) DO UPDATE SET "
                    "last_seq = MAX(last_seq, excluded.last_seq)",
                    (rec.namespace, rec.type, rec.project, rec.seq),
                )
                added.append(rec.id)
            linked = 0
            for _, _, edges in parsed:
                for e in edges:
                    exists = conn.execute(
                        "SELECT 1 FROM record_edges WHERE source = ? AND relation = ? AND "
                        "target = ?",
                        (e.source, e.relation, e.target),
                    ).fetchone()
                    both = conn.execute(
                        "SELECT COUNT(*) FROM records WHERE id IN (?, ?)", (e.source, e.target)
                    ).fetchone()[0]
                    if not exists and both == 2:
                        queries.insert_edge(conn, e.source, e.relation, e.target, e.created_at)
                        linked += 1
            return added, linked

        added, linked = await self.app.db.transaction(write)
        report.records_added, report.links_added = len(added), linked
        report.skipped += len(parsed) - len(added)
        return added


def _priority(value: Any) -> Priority:
    return "high" if value == "high" else "low" if value == "low" else ""


# -- reading files (the CLI parses; the owner imports) ----------------------------------
def parse_file(path: Path) -> list[dict[str, Any]]:
    """A kioku export, a server-memory JSONL graph, or a folder of Markdown notes."""
    if path.is_dir():
        return parse_markdown_folder(path)
    try:
        lines = [json.loads(x) for x in path.read_text("utf-8").splitlines() if x.strip()]
    except (OSError, ValueError) as exc:
        raise InvalidInput(
            f"cannot read {path} as JSON lines ({exc}): give a `kioku export` file, a "
            "server-memory memory.json, or a folder of Markdown notes"
        ) from exc
    if lines and isinstance(lines[0], dict) and lines[0].get("kind") == FORMAT:
        if lines[0].get("version") != VERSION:
            raise InvalidInput(f"{path} is a kioku export of version {lines[0].get('version')}")
        return lines[1:]
    if all(isinstance(x, dict) and x.get("type") in ("entity", "relation") for x in lines):
        return parse_server_memory(lines)
    raise InvalidInput(f"{path}: not a kioku export nor a server-memory knowledge graph")


def parse_server_memory(lines: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each entity becomes one knowledge note: its name, observations and relations."""
    entities: dict[str, dict[str, Any]] = {}
    relations: dict[str, list[str]] = {}
    for line in lines:
        if line.get("type") == "entity" and line.get("name"):
            entities[str(line["name"])] = line
        elif line.get("type") == "relation" and line.get("from"):
            rel = f"- {line.get('relationType', 'relates to')} {line.get('to', '?')}"
            relations.setdefault(str(line["from"]), []).append(rel)
    out = []
    for name, entity in entities.items():
        body = [f"{name} ({entity.get('entityType', 'entity')})"]
        body += [f"- {o}" for o in entity.get("observations") or []]
        body += relations.get(name, [])
        out.append(
            {
                "kind": "note",
                "id": stable_id("server-memory", name),
                "text": "\n".join(body),
                "type": "knowledge",
                "domain": str(entity.get("entityType", ""))[:64],
                "replace_text": True,
            }
        )
    return out


def parse_markdown_folder(root: Path) -> list[dict[str, Any]]:
    """Each ``*.md`` file becomes one knowledge note, keyed by its path in the folder."""
    out = []
    for path in sorted(root.rglob("*.md")):
        rel = path.relative_to(root).as_posix()
        stat = path.stat()
        out.append(
            {
                "kind": "note",
                "id": stable_id("markdown", rel),
                "text": path.read_text("utf-8", errors="replace").strip(),
                "type": "knowledge",
                "domain": path.parent.name if path.parent != root else "",
                "created_at": stat.st_mtime,
                "updated_at": stat.st_mtime,
                "replace_text": True,
            }
        )
    return out


def render_markdown(items: Sequence[dict[str, Any]]) -> str:
    """The export as one readable document (stored text quoted: it is data)."""
    from ..render import quote

    lines = ["# kioku export", ""]
    for item in items:
        if item["kind"] == "note":
            flag = " (deleted)" if item["deleted"] else ""
            lines.append(f"## {item['type']} `{item['id']}`{flag}")
            lines.append(f"{iso(item['created_at'])} · namespace {item['namespace']}")
            lines += ["", quote(item["text"]), ""]
        elif item["kind"] == "record":
            lines.append(f"## {item['id']} ({item['status']}, {item['action_state']})")
            lines += ["", quote(item["title"]), quote(item["content"]) if item["content"] else ""]
            lines += [f"- {e['relation']} {e['target']}" for e in item["links"]]
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"
