"""Durable lifecycle records: audits, fixes, verifications, decisions and knowledge.

Importing the package registers the "records" schema migration with the database.
"""

from mcp_gateway.records import schema as _schema  # noqa: F401  (registers the migration)
from mcp_gateway.records.model import (
    ACTION_STATES,
    RECORD_TYPES,
    RELATIONS,
    STATUSES,
    Edge,
    HistoryEntry,
    Lifecycle,
    Record,
    RecordAdded,
    RecordGraph,
    RecordLinked,
    RecordSearchHit,
    RecordSearchResponse,
    RecordUpdated,
    RecordView,
)
from mcp_gateway.records.store import RecordStore

__all__ = [
    "ACTION_STATES",
    "RECORD_TYPES",
    "RELATIONS",
    "STATUSES",
    "Edge",
    "HistoryEntry",
    "Lifecycle",
    "Record",
    "RecordAdded",
    "RecordGraph",
    "RecordLinked",
    "RecordSearchHit",
    "RecordSearchResponse",
    "RecordStore",
    "RecordUpdated",
    "RecordView",
]
