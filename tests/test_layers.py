"""The layers, read from the code's own imports (every import, lazy ones included).

- no import cycle between any two modules;
- ``mcp_gateway`` never imports ``workers`` (workers use the core, not the reverse);
- the core (stores, index, embedders, search, export, jobs, services) imports nothing
  from the MCP SDK: only the MCP door modules do;
- workers use the core and the jobs, never a door (MCP tools, CLI, owner, UI);
- the index backends (``mcp_gateway.index``) are a floor below what writes into them:
  they import neither ``indexing`` nor ``rebuild`` nor anything that uses those.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The doors that speak MCP; everything else in mcp_gateway is core or another door.
MCP_DOORS = {
    "mcp_gateway.protocol.server",
    "mcp_gateway.protocol.note_tools",
    "mcp_gateway.protocol.record_tools",
    "mcp_gateway.protocol.toolkit",
    "mcp_gateway.protocol.workspace_tools",
    "mcp_gateway.protocol.http_auth",
    "mcp_gateway.protocol.session_socket",
}
DOORS = MCP_DOORS | {
    "mcp_gateway.daemon.owner",
    "mcp_gateway.cli",
    "mcp_gateway.cli.records",
    "mcp_gateway.cli.commands",
    "mcp_gateway.cli.client",
    "mcp_gateway.daemon.admin",
    "mcp_gateway.daemon.stdio_proxy",
    "mcp_gateway.daemon.local_gateway",
}


def modules() -> dict[str, Path]:
    found = {}
    for path in [*ROOT.glob("mcp_gateway/**/*.py"), *ROOT.glob("workers/**/*.py")]:
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        found[name.removesuffix(".__init__")] = path
    return found


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """Every module ``name`` imports (top-level, lazy and TYPE_CHECKING alike)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            for alias in node.names:
                # `from pkg import module` imports the module; `from pkg import name`, pkg
                submodule = f"{target}.{alias.name}"
                out.add(submodule if submodule in known else target)
    return out


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports(name, path, known) for name, path in known.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v] & edges.keys():
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in edges:
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle() -> None:
    assert cycles(graph()) == []


def test_gateway_never_imports_workers() -> None:
    offenders = {
        name: sorted(d for d in deps if d == "workers" or d.startswith("workers."))
        for name, deps in graph().items()
        if name.startswith("mcp_gateway")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_core_imports_no_mcp() -> None:
    offenders = {
        name: sorted(d for d in deps if d == "mcp" or d.startswith("mcp."))
        for name, deps in graph().items()
        if name.startswith("mcp_gateway")
        and name not in MCP_DOORS
        and not name.startswith("mcp_gateway.ui")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_workers_use_no_door() -> None:
    offenders = {
        name: sorted(d for d in deps if d in DOORS or d.startswith("mcp_gateway.ui"))
        for name, deps in graph().items()
        if name.startswith("workers")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_index_backends_sit_below_their_writers() -> None:
    edges = graph()
    writers = {"mcp_gateway.indexing.indexer", "mcp_gateway.rebuild"}
    above = {n for n in edges if n in writers or any(n.startswith(w + ".") for w in writers)}
    offenders = {
        name: sorted(deps & above)
        for name, deps in edges.items()
        if name.startswith("mcp_gateway.index.")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_the_check_sees_a_cycle() -> None:
    # the detector itself is tested, so a green run means something
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
