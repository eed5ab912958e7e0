"""What a job may use: the truth store, the embedder and the activity log -- never the
index. The owner of the index applies what jobs write (``applier``), so the same job
runs inside the gateway (in-process runner) or in a ``kioku worker`` process that never
opens the embedded index.

Every job takes one ``JobRun`` (``run``) holding its ``JobContext``; under arq the
``JobContext`` sits in arq's ``dict`` ctx under ``KEY``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.embedders.base import Embedder
from mcp_gateway.embedders.channels import ChannelEmbedder
from mcp_gateway.records import RecordStore
from mcp_gateway.stores.activity import ActivityLog
from mcp_gateway.stores.db import Database
from mcp_gateway.stores.notes import NoteStore
from mcp_gateway.stores.vectors import VectorStore

KEY = "kioku"


def _nothing() -> None:
    return None


@dataclass(slots=True)
class JobContext:
    settings: KiokuSettings
    db: Database
    notes: NoteStore
    records: RecordStore
    vectors: VectorStore
    embedder: Embedder
    activity: ActivityLog
    # the namespaces exports and tuning serve (the process's own scope)
    namespaces: tuple[str, ...]
    # owner-side hooks: wake the applier, drop cached thresholds (no-ops in workers,
    # where the owner notices by polling the truth store)
    vectors_written: Callable[[], None] = field(default=_nothing)
    thresholds_changed: Callable[[], None] = field(default=_nothing)
    # set when the process is stopping: embedding starts no further batch (what was
    # acknowledged is in the truth store; reconcile queues it again at the next start)
    stopping: threading.Event = field(default_factory=threading.Event)
    # further dense channels (embedder.channels): embedded before the main model
    channels: tuple[ChannelEmbedder, ...] = ()
