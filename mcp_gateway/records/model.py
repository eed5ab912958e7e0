"""Pydantic models for durable lifecycle records: what the store returns and the tools show."""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import BaseModel, Field

RecordType = Literal["audit", "fix", "verification", "decision", "knowledge"]
Status = Literal["open", "accepted", "resolved", "rejected"]
ActionState = Literal["actionable", "deferred", "blocked", "nonactionable", "done"]
Relation = Literal["references", "resolves", "verifies", "supersedes", "contradicts", "duplicates"]

RECORD_TYPES: tuple[str, ...] = get_args(RecordType)
STATUSES: tuple[str, ...] = get_args(Status)
ACTION_STATES: tuple[str, ...] = get_args(ActionState)
RELATIONS: tuple[str, ...] = get_args(Relation)

# Statuses that close the work: setting one sets action_state to "done" unless the
# same call sets action_state explicitly.
CLOSING_STATUSES: frozenset[str] = frozenset({"resolved", "accepted"})
# Relations whose edges mean "the source/target is replaced by another record".
REPLACING_RELATIONS: frozenset[str] = frozenset({"supersedes", "duplicates"})


class Record(BaseModel):
    id: str = Field(description="stable citable id, e.g. AUDIT-MEM-001")
    type: RecordType
    project: str
    seq: int
    title: str
    content: str = ""
    status: Status = "open"
    action_state: ActionState = "actionable"
    created_at: float = Field(description="epoch seconds (UTC)")
    updated_at: float = Field(description="epoch seconds (UTC)")
    namespace: str = "default"


class Edge(BaseModel):
    source: str
    relation: Relation
    target: str
    created_at: float


class HistoryEntry(BaseModel):
    record_id: str
    field: str = Field(description='"created", "link", or the changed field name')
    old_value: str | None = None
    new_value: str | None = None
    at: float


class Lifecycle(BaseModel):
    """Derived relations: whether the record is current truth and what surrounds it."""

    current: bool = Field(description="false when superseded or a duplicate")
    head: str = Field(description="the current record this one resolves to (itself if current)")
    head_path: list[str] = Field(default_factory=list, description="ids from this record to head")
    superseded_by: list[str] = Field(default_factory=list)
    supersedes: list[str] = Field(default_factory=list)
    duplicates: list[str] = Field(default_factory=list, description="the canonical record(s)")
    duplicated_by: list[str] = Field(default_factory=list)
    resolves: list[str] = Field(default_factory=list)
    resolved_by: list[str] = Field(
        default_factory=list,
        description="fixes that resolve this record; its own status is not changed by them",
    )
    fix_verifications: dict[str, list[str]] = Field(
        default_factory=dict, description="for each id in resolved_by: the records verifying it"
    )
    verifies: list[str] = Field(default_factory=list)
    verified_by: list[str] = Field(default_factory=list)
    contradicts: list[str] = Field(default_factory=list)
    contradicted_by: list[str] = Field(default_factory=list)
    references: list[str] = Field(default_factory=list)
    referenced_by: list[str] = Field(default_factory=list)


class RecordView(BaseModel):
    record: Record
    lifecycle: Lifecycle
    edges: list[Edge] = Field(default_factory=list, description="every edge touching the record")
    history: list[HistoryEntry] = Field(default_factory=list, description="oldest first")


class RecordAdded(BaseModel):
    record: Record
    links: list[Edge] = Field(default_factory=list)
    # "already_stored": an exact repeat of ``record`` (same type, title, content and
    # namespace); nothing new was stored but the links it lacked
    status: Literal["stored", "already_stored"] = "stored"


class RecordLinked(BaseModel):
    edge: Edge


class RecordUpdated(BaseModel):
    record: Record
    changed: bool
    changes: list[HistoryEntry] = Field(default_factory=list)


class RecordSearchHit(BaseModel):
    id: str
    type: RecordType
    status: Status
    action_state: ActionState
    title: str
    current: bool
    matched_id: str = Field(
        description="the record whose text matched (differs from id when "
        "current_only resolved an old version to its head)"
    )
    score: float = Field(description="higher is better")
    created_at: float


class RecordSearchResponse(BaseModel):
    query: str
    type: str = ""
    current_only: bool = False
    hits: list[RecordSearchHit] = Field(default_factory=list)


class RecordGraph(BaseModel):
    """The connected lifecycle neighbourhood of one record (for ``records graph``)."""

    root: str
    records: dict[str, Record]
    edges: list[Edge]
    truncated: bool = False
