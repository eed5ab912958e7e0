"""MCP tools for durable lifecycle records: record_add, record_link, record_show,
record_search and record_update.

Each tool returns readable text (stored record text quoted with ``> ``) plus the same
facts as structured content. The use cases live in ``services.records``.
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult

from mcp_gateway.common.inputs import RecordChanges, RecordFields
from mcp_gateway.protocol.session_scope import project_or
from mcp_gateway.protocol.tool_schemas import (
    ActionState,
    Limit,
    Link,
    OptionalLink,
    Project,
    RecordId,
    RecordType,
    RecordTypeFilter,
    Relation,
    Status,
)
from mcp_gateway.protocol.toolkit import result, scope_of, services_from, tool_errors
from mcp_gateway.protocol.workspace_tools import session_project
from mcp_gateway.records import render
from mcp_gateway.records.model import (
    RecordAdded,
    RecordLinked,
    RecordSearchResponse,
    RecordUpdated,
    RecordView,
)


def register_record_tools(mcp: MCPServer) -> None:
    @mcp.tool()
    @tool_errors
    async def record_add(
        type: RecordType,
        title: str,
        ctx: Context,
        content: str = "",
        status: Status = "open",
        action_state: ActionState = "actionable",
        link: OptionalLink = "",
        links: list[Link] = [],  # noqa: B006  (schema default; never mutated)
        project: Project = "",
    ) -> Annotated[CallToolResult, RecordAdded]:
        """Use for durable lifecycle facts, not routine progress (save daily progress as a
        checkpoint instead). Returns a stable citable id such as AUDIT-MEM-001.

        Types: audit (a problem found), fix (a change that resolves an audit),
        verification (proof that a fix works), decision, knowledge.
        Typical chain, three records joined by edges, none overwritten:
          1. record_add(type="audit", title="...") -> AUDIT-MEM-001
          2. record_add(type="fix", title="...", link="resolves:AUDIT-MEM-001") -> FIX-MEM-001
          3. record_add(type="verification", title="...", link="verifies:FIX-MEM-001")
        Link syntax: RELATION:TARGET_ID, RELATION one of references, resolves, verifies,
        supersedes, contradicts, duplicates; the new record is the source. Use `link` for one
        edge or `links` for several; all edges and the record are created together or not
        at all (an unknown target creates nothing). To replace an old decision, add the new
        one with link="supersedes:DECISION-MEM-001".
        status: open (default), accepted, resolved, rejected. action_state: actionable
        (default), deferred, blocked, nonactionable, done; a record created resolved or
        accepted with the default action_state starts as done. Open work (session context)
        is the current actionable audits and fixes, less a verified fix and the audits it
        resolves (see record_update).
        project: short code for the id (letters/digits/_ up to 16); leave empty: the
        server derives it from your workspace folder (or its settings).
        An exact repeat of a current record (same type, title and content) is not stored
        twice: you get its id back (status "already_stored"), with the links it lacked.
        """
        services = services_from(ctx)
        all_links = [*([link] if link.strip() else []), *links]
        default = project_or(services.app.settings.project)
        project = project.strip() or await session_project(ctx, default)
        fields = RecordFields(
            type=type,
            title=title,
            content=content,
            status=status,
            action_state=action_state,
            links=tuple(all_links),
            project=project,
        )
        out: RecordAdded = await services.records.add(scope_of(ctx), fields)
        return result(render.render_added(out.record, out.links, out.status), out)

    @mcp.tool()
    @tool_errors
    async def record_link(
        source: RecordId, relation: Relation, target: RecordId, ctx: Context
    ) -> Annotated[CallToolResult, RecordLinked]:
        """Add one edge between two existing records, without creating a record: source
        RELATION target, e.g. ("FIX-MEM-002", "resolves", "AUDIT-MEM-001") or two records
        found to contradict each other. Relations: references, resolves, verifies,
        supersedes (source replaces target), contradicts, duplicates (source is a duplicate
        of the canonical target). Refused: self-links, an edge that already exists, and
        supersedes/duplicates cycles. Edges are never removed; they are history.
        """
        out: RecordLinked = await services_from(ctx).records.link(
            scope_of(ctx), source=source, relation=relation, target=target
        )
        return result(render.render_edge(out.edge), out)

    @mcp.tool()
    @tool_errors
    async def record_show(id: RecordId, ctx: Context) -> Annotated[CallToolResult, RecordView]:
        """Use before relying on a known durable record: returns the record with all its
        lifecycle relations and its full change history, so that a superseded, duplicate or
        contradicted record is not mistaken for current truth.

        lifecycle.current is false when another record supersedes it or it duplicates a
        canonical record; lifecycle.head is then the record to rely on. resolved_by lists
        fixes that resolve it (with the verifications of each fix). A resolving fix does
        NOT change this record's own status: truth fields change only through
        record_update, so history is never rewritten implicitly; read resolved_by.
        """
        view: RecordView = await services_from(ctx).records.show(scope_of(ctx), id)
        return result(render.render_view(view), view)

    @mcp.tool()
    @tool_errors
    async def record_search(
        query: str,
        ctx: Context,
        type: RecordTypeFilter = "",
        current_only: bool = False,
        limit: Limit = 10,
    ) -> Annotated[CallToolResult, RecordSearchResponse]:
        """Find durable records when the id is unknown, by meaning and by rare words, in
        any language (English, Japanese, Thai; a question in one finds a record in
        another), best match first; only records close to the query or holding one of
        its rare words or names come back, so an empty answer means none is about it.
        type filters by record type. current_only=true resolves every hit to its
        lifecycle head, drops non-current records and lists each head once, so the old
        wording of a superseded decision still finds the decision in force now.
        limit: 1 to 100. Call record_show before relying on an important result.
        """
        response: RecordSearchResponse = await services_from(ctx).records.search(
            scope_of(ctx), query=query, type=type, current_only=current_only, limit=limit
        )
        return result(render.render_hits(query, response.hits, current_only), response)

    @mcp.tool()
    @tool_errors
    async def record_update(
        id: RecordId,
        ctx: Context,
        title: str | None = None,
        content: str | None = None,
        status: Status | None = None,
        action_state: ActionState | None = None,
    ) -> Annotated[CallToolResult, RecordUpdated]:
        """Change a record's truth fields (title, content, status: open, accepted, resolved,
        rejected) and/or its action_state (actionable, deferred, blocked, nonactionable,
        done). Give only the fields to change. Every change is kept in the record's history
        with old and new value; giving the current value changes and records nothing.
        Setting status to resolved or accepted also sets action_state to done, unless this
        call sets action_state too. action_state can change alone (e.g. status stays open
        but the work is deferred). To replace a record's meaning, prefer a new record with
        link="supersedes:ID".
        How they combine in "Open work" (session_context.md): current audits and fixes
        whose action_state is actionable, except a fix that a verification verifies (one
        not rejected) and an audit that such a verified fix resolves: the edges settle
        them without an update. Edges never change the stored status or action_state.
        """
        changes = RecordChanges(
            title=title, content=content, status=status, action_state=action_state
        )
        out: RecordUpdated = await services_from(ctx).records.update(scope_of(ctx), id, changes)
        return result(render.render_updated(out), out)
