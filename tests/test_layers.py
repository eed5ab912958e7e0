"""The layers, read from the code's own imports (every import, lazy ones included).

The folders of ``mcp_gateway`` are the layers, top to bottom:

- doors: ``protocol`` (MCP), ``cli``, ``daemon`` (the owner process, the stdio proxy,
  the admin API), ``ui`` (the memory browser): parse, authenticate, render;
- ``services``: the use cases every door goes through (and the app they run on);
- the core, in a total order (``CORE_ORDER``): ``jobs`` over ``search`` over ``rebuild``
  over ``indexing`` over ``queue`` over ``embedders`` over ``graphs`` over ``index`` over
  ``records`` over ``stores``;
- ``common`` (types, errors, settings, the access rule), the floor.

Rules: nothing lives at the package root but ``__init__``; no import cycle; a layer
(each core folder one of its own) imports only layers below it; ``common`` imports no
other folder; no door opens a table or the index, by import or through the app (they go
through the services; one of them renders the session context); only doors speak MCP,
and the MCP door (``protocol``) imports no other door; ``mcp_gateway`` never imports
``workers``, and workers use the core, never a door or a service; the index backends sit
below what writes into them; a door hands a use case its typed input
(``common.inputs``), never loose fields.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOORS = {"protocol", "cli", "daemon", "ui"}
SERVICES = {"services"}
# The core, top to bottom: a folder imports only the folders after it (and the floor).
CORE_ORDER = (
    "jobs",  # the job bodies: embed, export, tune, re-rank
    "search",  # the query path
    "rebuild",  # the index rebuilt from the truth store
    "indexing",  # the owner's writes into the index, reconcile
    "queue",  # what queues and runs the jobs (both runners, the job contract)
    "embedders",  # the runtime embedders and their channels
    "graphs",  # the model compiler: the ONNX graphs the embedders load
    "index",  # the index backends
    "records",  # the lifecycle records' store
    "stores",  # the truth store: the database, its schema, notes, vectors
)
CORE = set(CORE_ORDER)
FLOOR = {"common"}


def folder(module: str) -> str | None:
    """The layer folder of an ``mcp_gateway`` module (None outside the package)."""
    parts = module.split(".")
    if parts[0] != "mcp_gateway":
        return None
    return parts[1] if len(parts) > 1 else ""


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


def test_the_package_root_holds_no_module() -> None:
    root = sorted(p.name for p in (ROOT / "mcp_gateway").glob("*.py"))
    assert root == ["__init__.py"]
    unknown = {
        p.name
        for p in (ROOT / "mcp_gateway").iterdir()
        if p.is_dir() and (p / "__init__.py").exists()
    } - (DOORS | SERVICES | CORE | FLOOR)
    assert unknown == set(), "a new folder: say which layer it is in"


def crossings(allowed: dict[str, set[str]]) -> dict[str, list[str]]:
    """Imports from a folder to another folder its entry in ``allowed`` does not name."""
    out: dict[str, list[str]] = {}
    for name, deps in graph().items():
        here = folder(name)
        if here not in allowed:
            continue
        bad = sorted(
            d for d in deps if (there := folder(d)) and there != here and there not in allowed[here]
        )
        if bad:
            out[name] = bad
    return out


def below(layer: str) -> set[str]:
    """The folders ``layer`` may import: those after it in the core's order, and the floor."""
    if layer in CORE:
        return set(CORE_ORDER[CORE_ORDER.index(layer) + 1 :]) | FLOOR
    return CORE | FLOOR if layer in SERVICES else set()


def upward(edges: dict[str, set[str]]) -> dict[str, list[str]]:
    """Imports from a core folder, the services or the floor into a folder not below it."""
    out: dict[str, list[str]] = {}
    for name, deps in edges.items():
        here = folder(name)
        if here not in CORE | SERVICES | FLOOR:
            continue
        bad = sorted(
            d for d in deps if (there := folder(d)) and there != here and there not in below(here)
        )
        if bad:
            out[name] = bad
    return out


def test_each_layer_imports_only_layers_below_it() -> None:
    assert upward(graph()) == {}


def test_the_check_sees_an_upward_import() -> None:
    # a planted import of each kind: a core folder reaching up the order, the floor
    # reaching the core, the core reaching the services
    edges = {
        "mcp_gateway.stores.db": {"mcp_gateway.records.model", "mcp_gateway.common.errors"},
        "mcp_gateway.index.qdrant": {"mcp_gateway.search.ranking"},
        "mcp_gateway.queue.base": {"mcp_gateway.jobs.tasks", "mcp_gateway.stores.db"},
        "mcp_gateway.common.types": {"mcp_gateway.stores.db"},
        "mcp_gateway.search.service": {"mcp_gateway.services.app", "mcp_gateway.index.base"},
        "mcp_gateway.jobs.tasks": {"mcp_gateway.search.neardup", "mcp_gateway.queue.run"},
    }
    assert upward(edges) == {
        "mcp_gateway.stores.db": ["mcp_gateway.records.model"],
        "mcp_gateway.index.qdrant": ["mcp_gateway.search.ranking"],
        "mcp_gateway.queue.base": ["mcp_gateway.jobs.tasks"],
        "mcp_gateway.common.types": ["mcp_gateway.stores.db"],
        "mcp_gateway.search.service": ["mcp_gateway.services.app"],
    }


def test_doors_reach_the_core_through_known_paths() -> None:
    # a door may use services, the core and the floor, and the doors it hands off to
    allowed = {f: DOORS | SERVICES | CORE | FLOOR for f in DOORS}
    assert crossings(allowed) == {}


def test_no_door_opens_a_table_or_the_index() -> None:
    """Doors read and write through the services (one scope check, one owner per
    table): no door imports a store or the index."""
    offenders = {
        name: sorted(d for d in deps if folder(d) in {"stores", "index", "indexing", "rebuild"})
        for name, deps in graph().items()
        if folder(name) in DOORS
    }
    assert {k: v for k, v in offenders.items() if v} == {}


# What the open app holds below the services: a door that reaches one of these through
# ``app.<name>`` (or ``services.app.<name>``) opens a store without importing it.
APP_INTERNALS = {
    "db", "notes", "records", "vectors", "index", "activity", "embedder", "indexer",
    "search", "thresholds", "applier", "job_context", "writes", "follower", "prefetcher",
}  # fmt: skip


def app_reaches(tree: ast.AST) -> list[str]:
    """``app.notes``-like attribute reads: the app's stores reached from outside the
    services."""
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and node.attr in APP_INTERNALS):
            continue
        owner = node.value
        name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
        if name == "app":
            found.append(f"line {node.lineno}: app.{node.attr}")
    return found


def test_no_door_reaches_a_store_through_the_app() -> None:
    bad = {
        name: reaches
        for name, path in modules().items()
        if folder(name) in DOORS and (reaches := app_reaches(ast.parse(path.read_text("utf-8"))))
    }
    assert bad == {}


def test_the_check_sees_a_store_reached_through_the_app() -> None:
    tree = ast.parse("app.activity.read_sync(0)\nservices.app.notes.get('x')\napp.settings")
    assert app_reaches(tree) == ["line 1: app.activity", "line 2: app.notes"]
    assert app_reaches(ast.parse("services.notes.get(scope, 'x')")) == []


def test_one_use_case_renders_the_session_context() -> None:
    """``services.context`` is the only way out of the core to the session context, so
    the MCP resource, the browser and the exported file show one rendering."""
    users = {
        name
        for name, deps in graph().items()
        if "mcp_gateway.jobs.session_context" in deps and folder(name) not in {"jobs", None}
    }
    assert users == {"mcp_gateway.services.context"}


def test_the_mcp_door_imports_no_other_door() -> None:
    """``protocol`` (the MCP server, its tools, bearer auth) is what the processes in
    ``daemon`` serve; it never reaches back into them, the CLI or the browser."""
    offenders = {
        name: sorted(d for d in deps if folder(d) in DOORS - {"protocol"})
        for name, deps in graph().items()
        if folder(name) == "protocol"
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_the_browser_imports_no_process_door() -> None:
    """``ui`` (the memory browser) is what the daemon and ``kioku serve`` mount; it never
    reaches back into them or the CLI (``kioku ui`` is a CLI command, ``cli.ui_launch``)."""
    offenders = {
        name: sorted(d for d in deps if folder(d) in {"daemon", "cli"})
        for name, deps in graph().items()
        if folder(name) == "ui"
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def mutual_folders(edges: dict[str, set[str]]) -> set[tuple[str, str]]:
    pairs = {
        (a, b)
        for name, deps in edges.items()
        for d in deps
        if (a := folder(name)) and (b := folder(d)) and a != b and name.startswith("mcp_gateway")
    }
    return {(a, b) for a, b in pairs if (b, a) in pairs and a < b}


def test_no_two_folders_import_each_other() -> None:
    """A folder is a room: two that import each other are one room in two places (the
    daemon and the browser did; search and indexing did)."""
    assert mutual_folders(graph()) == set()


def test_the_check_sees_folders_importing_each_other() -> None:
    edges = {
        "mcp_gateway.ui.web": {"mcp_gateway.daemon.x"},
        "mcp_gateway.daemon.x": {"mcp_gateway.ui"},
    }
    assert mutual_folders(edges) == {("daemon", "ui")}


def test_gateway_never_imports_workers() -> None:
    offenders = {
        name: sorted(d for d in deps if d == "workers" or d.startswith("workers."))
        for name, deps in graph().items()
        if name.startswith("mcp_gateway")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_only_doors_speak_mcp() -> None:
    offenders = {
        name: sorted(d for d in deps if d.split(".")[0] in ("mcp", "mcp_types"))
        for name, deps in graph().items()
        if folder(name) is not None and folder(name) not in DOORS
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_workers_use_no_door_and_no_service() -> None:
    offenders = {
        name: sorted(d for d in deps if folder(d) in DOORS | SERVICES)
        for name, deps in graph().items()
        if name.startswith("workers")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_index_backends_sit_below_their_writers() -> None:
    edges = graph()
    offenders = {
        name: sorted(d for d in deps if folder(d) in {"indexing", "rebuild"})
        for name, deps in edges.items()
        if folder(name) == "index"
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_the_check_sees_a_cycle() -> None:
    # the detector itself is tested, so a green run means something
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


# The use cases and store writes that take a typed input (``common.inputs``), by the
# attribute they are reached through, and the fields of that input.
TYPED_USE_CASES = {
    ("notes", "add"): {"text", "type", "priority", "domain", "solved_query"},
    ("notes", "add_or_existing"): {"text", "type", "priority", "domain", "solved_query"},
    ("notes", "update"): {"text", "type", "priority", "domain", "solved_query"},
    ("notes", "search"): {"query", "type", "domain", "top", "priority", "alternatives"},
    ("records", "add"): {"type", "title", "content", "status", "action_state", "links"},
    ("records", "add_or_existing"): {"type", "title", "content", "status", "action_state", "links"},
    ("records", "update"): {"title", "content", "status", "action_state"},
}


def loose_field_calls(tree: ast.AST) -> list[str]:
    """Calls like ``services.notes.add(scope, text=...)``: a typed use case handed loose
    fields instead of its model."""
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        owner = node.func.value
        name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
        fields = TYPED_USE_CASES.get((name, node.func.attr), set())
        loose = sorted(fields & {k.arg for k in node.keywords if k.arg})
        if loose:
            found.append(f"line {node.lineno}: {name}.{node.func.attr}({', '.join(loose)}=...)")
    return found


def test_typed_inputs_go_from_the_doors_to_the_stores() -> None:
    """A door builds the input's model (``common.inputs``) and hands that over, and the
    services hand the same model to the stores (``NoteStore``, ``RecordStore``), so the
    field list is written once; only the MCP tool signatures (the schema clients see)
    and the CLI's options name the fields again."""
    bad = {
        name: calls
        for name, path in modules().items()
        if (calls := loose_field_calls(ast.parse(path.read_text("utf-8"))))
    }
    assert bad == {}


def test_the_check_sees_loose_fields() -> None:
    tree = ast.parse(
        "await services.notes.add(scope, text='x')\nawait self.records.update(s, i, title='t')"
    )
    assert len(loose_field_calls(tree)) == 2
    assert (
        loose_field_calls(ast.parse("await services.notes.add(scope, NoteFields(text='x'))")) == []
    )
    # a store reached through the app
    assert len(loose_field_calls(ast.parse("await app.notes.add_or_existing(text='x')"))) == 1
    assert len(loose_field_calls(ast.parse("await app.records.update(i, title='t')"))) == 1
