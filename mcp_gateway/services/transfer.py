"""Backup, move and bring memories in: ``kioku export`` and ``kioku import``.

Export writes every note (deleted ones too, flagged) and every record with its history,
links and namespace, one JSON object per line after a header line. Import reads that
format back -- and what users come from: the ``server-memory`` JSONL knowledge graph
and a folder of Markdown notes (the CLI reads them, ``import_files``; the owner checks
every item with MCP's rules, ``import_check``). Import is idempotent: items keep (or, for foreign
formats, derive) stable ids, so importing the same file twice adds nothing; vectors are
not exported, so whatever embedder the target runs embeds the imported text.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from mcp_gateway.common.inputs import NoteFields
from mcp_gateway.common.render import iso
from mcp_gateway.common.types import Note
from mcp_gateway.records import queries
from mcp_gateway.records.imports import Imported
from mcp_gateway.records.model import Edge, HistoryEntry, Record
from mcp_gateway.services.app import AppContext
from mcp_gateway.services.import_check import Limits, check_items
from mcp_gateway.services.import_files import FORMAT, VERSION


class ImportReport(BaseModel):
    notes_added: int = 0
    notes_updated: int = 0
    records_added: int = 0
    links_added: int = 0
    skipped: int = 0


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
        """Items as ``export`` writes them (or as ``import_files`` made them from
        foreign formats), checked whole first (``import_check``: MCP's rules) and written
        in one transaction through the note and record stores: all of it or nothing.
        Existing ids are skipped (or, for ``replace_text`` items, their text updated)."""
        app = self.app
        checked = check_items(list(items), Limits.of(app.settings))
        now = time.time()
        notes: list[Note] = []
        history: dict[str, list[tuple[float, str, str | None, str | None]]] = {}
        replace: set[str] = set()
        records: list[Imported] = []
        for item in checked:
            if item["kind"] == "note":
                created = item["created_at"] or item["updated_at"] or now
                notes.append(
                    Note(
                        **{k: item[k] for k in _NOTE_FIELDS},
                        created_at=created,
                        updated_at=item["updated_at"] or created,
                    )
                )
                history[item["id"]] = [
                    (h["changed_at"], h["field"], h["old_value"], h["new_value"])
                    for h in item["history"]
                ]
                if item["replace_text"]:
                    replace.add(item["id"])
            else:
                rec = Record.model_validate({k: item[k] for k in Record.model_fields})
                changes = [HistoryEntry.model_validate(h) for h in item["history"]]
                links = [Edge.model_validate(e) for e in item["links"]]
                records.append((rec, changes, links))

        def write(
            conn: sqlite3.Connection,
        ) -> tuple[tuple[list[str], int, int], tuple[list[str], int]]:
            return (
                app.notes.put_imported(conn, notes, history, replace),
                app.records.put_imported(conn, records),
            )

        (fresh, inserted, updated), (added_records, linked) = await app.db.transaction(write)
        report = ImportReport(
            notes_added=inserted,
            notes_updated=updated,
            records_added=len(added_records),
            links_added=linked,
            skipped=len(notes) - inserted - updated + len(records) - len(added_records),
        )
        added_notes = list((await app.notes.get_many(fresh)).values())
        for note in added_notes:
            await app.indexer.put_lexical(note)
        await app.jobs.notes_changed(added_notes, export=bool(added_notes))
        app.notes_pending()
        app.pool_later(added_notes)
        if added_records:
            from mcp_gateway.services.records import RecordService

            await RecordService(app).changed(added_records)
        return report


_NOTE_FIELDS = ("id", *NoteFields.model_fields, "namespace", "deleted")


def render_markdown(items: Sequence[dict[str, Any]]) -> str:
    """The export as one readable document (stored text quoted: it is data)."""
    from mcp_gateway.common.render import quote

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
