"""A record's lifecycle as an SVG picture.

Layout: every edge is drawn between an older and a newer record, so ordering records by
creation time and placing each one column right of its newest older neighbour (a
longest-path layering of that DAG) reads left to right as history: the audit, then
the fix that resolves it, then its verification; a superseded decision left of the
one in force. Arrows keep the stored direction (``FIX resolves AUDIT`` points at the
audit). Retired records (superseded, duplicates) are dimmed; the lifecycle head of the
record being viewed is outlined. Text is escaped by ``Markup.format``; styling is by
class only (no inline styles under the Content-Security-Policy).
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from markupsafe import Markup

from mcp_gateway.records.model import RELATIONS, Edge, Record, RecordGraph

NODE_W, NODE_H, GAP_X, GAP_Y, PAD = 236, 78, 90, 26, 16
# A title is HTML text in the box (a foreignObject): the browser wraps it in any script
# (English at spaces, Japanese anywhere, Thai at its word breaks) and clamps it to two
# lines with an ellipsis, in whatever font it has; the box's tooltip holds it whole.
# (Cut to a number of columns here, a line of wide Latin letters drew past the box.)
TITLE_INSET, TITLE_TOP, TITLE_H = 10, 24, 32


@dataclass(frozen=True, slots=True)
class Placed:
    record: Record
    x: float
    y: float


def retired_ids(edges: list[Edge]) -> set[str]:
    out = {e.target for e in edges if e.relation == "supersedes"}
    return out | {e.source for e in edges if e.relation == "duplicates"}


def layout(graph: RecordGraph) -> dict[str, Placed]:
    order = sorted(graph.records.values(), key=lambda r: (r.created_at, r.id))
    rank = {r.id: i for i, r in enumerate(order)}
    neighbours: dict[str, list[str]] = {r.id: [] for r in order}
    for e in graph.edges:
        if e.source in rank and e.target in rank:
            neighbours[e.source].append(e.target)
            neighbours[e.target].append(e.source)
    column: dict[str, int] = {}
    for rec in order:
        older = [column[n] for n in neighbours[rec.id] if rank[n] < rank[rec.id]]
        column[rec.id] = max(older, default=-1) + 1
    rows: dict[int, int] = {}
    placed: dict[str, Placed] = {}
    for rec in order:
        col = column[rec.id]
        row = rows.get(col, 0)
        rows[col] = row + 1
        placed[rec.id] = Placed(rec, PAD + col * (NODE_W + GAP_X), PAD + row * (NODE_H + GAP_Y))
    return placed


def _clip(text: str, width: int) -> str:
    """Cut to ``width`` columns (wide CJK characters count two)."""
    out: list[tuple[str, int]] = []
    used = 0
    for ch in " ".join(text.split()):
        w = 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
        if used + w > width:
            while out and used + 1 > width:  # room for the ellipsis
                used -= out.pop()[1]
            return "".join(c for c, _ in out).rstrip() + "…"
        out.append((ch, w))
        used += w
    return "".join(c for c, _ in out)


def _edge_path(a: Placed, b: Placed) -> tuple[str, float, float]:
    """A curve from node ``a`` to node ``b`` and the point for its label."""
    if abs(a.x - b.x) < 1:  # same column: bow out to the right
        x = a.x + NODE_W
        y1, y2 = a.y + NODE_H / 2, b.y + NODE_H / 2
        bow = x + 40
        return f"M{x},{y1} C{bow},{y1} {bow},{y2} {x + 4},{y2}", bow - 8, (y1 + y2) / 2
    forward = b.x > a.x
    x1 = a.x + NODE_W if forward else a.x
    x2 = b.x - 4 if forward else b.x + NODE_W + 4
    y1, y2 = a.y + NODE_H / 2, b.y + NODE_H / 2
    mid = (x1 + x2) / 2
    return f"M{x1},{y1} C{mid},{y1} {mid},{y2} {x2},{y2}", mid, (y1 + y2) / 2 - 4


def render(graph: RecordGraph, *, focus: str, head: str, base: str = "/ui") -> Markup:
    placed = layout(graph)
    if not placed:
        return Markup("")
    width = max(p.x for p in placed.values()) + NODE_W + PAD + 40
    height = max(p.y for p in placed.values()) + NODE_H + PAD
    retired = retired_ids(graph.edges)
    parts = [
        Markup(
            '<svg class="graph" viewBox="0 0 {w:.0f} {h:.0f}" width="{w:.0f}" height="{h:.0f}" '
            'role="img" aria-label="lifecycle of {focus}"><defs>'
        ).format(w=width, h=height, focus=focus)
    ]
    for rel in RELATIONS:
        parts.append(
            Markup(
                '<marker id="arrow-{r}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
                'markerHeight="7" orient="auto-start-reverse">'
                '<path class="arrow rel-{r}" d="M0,0 L10,5 L0,10 z"/></marker>'
            ).format(r=rel)
        )
    parts.append(Markup("</defs>"))
    for e in graph.edges:
        if e.source not in placed or e.target not in placed:
            continue
        path, lx, ly = _edge_path(placed[e.source], placed[e.target])
        parts.append(
            Markup(
                '<g class="edge rel-{r}"><title>{s} {r} {t}</title>'
                '<path d="{d}" marker-end="url(#arrow-{r})"/>'
                '<text x="{lx:.0f}" y="{ly:.0f}">{r}</text></g>'
            ).format(r=e.relation, s=e.source, t=e.target, d=path, lx=lx, ly=ly)
        )
    for rid, p in placed.items():
        rec = p.record
        classes = ["node", f"t-{rec.type}", "retired" if rid in retired else "current"]
        if rid == head:
            classes.append("head")
        if rid == focus:
            classes.append("focus")
        # the type is the id's first word and the box's colour: the footer's room (42
        # columns) goes to the state, so "current head" is never cut
        state = f"{rec.status} · {rec.action_state}"
        if rid in retired:
            state += " · retired"
        elif rid == head:
            state += " · current head"
        parts.append(
            Markup(
                '<a href="{href}" class="{cls}"><title>{rid}: {title}</title>'
                '<rect x="{x:.0f}" y="{y:.0f}" width="{w}" height="{h}" rx="6"/>'
                '<text class="rid" x="{tx:.0f}" y="{y1:.0f}">{rid}</text>'
                '<foreignObject x="{tx:.0f}" y="{y2:.0f}" width="{tw}" height="{th}">'
                '<div xmlns="http://www.w3.org/1999/xhtml" class="rtitle">{title}</div>'
                "</foreignObject>"
                '<text class="rstate" x="{tx:.0f}" y="{y3:.0f}">{state}</text></a>'
            ).format(
                href=f"{base}/records/{rid}",
                cls=" ".join(classes),
                rid=rid,
                title=rec.title,
                state=_clip(state, 42),
                x=p.x,
                y=p.y,
                w=NODE_W,
                h=NODE_H,
                tx=p.x + TITLE_INSET,
                y1=p.y + 18,
                y2=p.y + TITLE_TOP,
                tw=NODE_W - 2 * TITLE_INSET,
                th=TITLE_H,
                y3=p.y + 69,
            )
        )
    parts.append(Markup("</svg>"))
    return Markup("").join(parts)
