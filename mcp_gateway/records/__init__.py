"""Durable lifecycle records: audits, fixes, verifications, decisions and knowledge.

Their tables are in ``stores.schema`` (module "records").
"""

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
