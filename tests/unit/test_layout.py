"""The folders are layers a reader can trust (docs/architecture.md, Layers): no import cycles,
no module too long to read in one sitting, every layer importing only the layers its row of
the table names (the same table as the document's), the storage areas stacked, and no module
reaching the package's siblings by a bare top-level name."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.support.source import ROOT, product_modules

MAX_LINES = 360
MAX_TOOL_LINES = 150  # a tool module is an adapter (docs/architecture.md, Use cases)
# Which layer may import which (a layer's own modules may import each other). Lowest first;
# docs/architecture.md holds the same table (test_the_documented_table_is_this_table).
LAYERS: dict[str, set[str]] = {
    "errors": set(),
    "config": set(),
    "lru": set(),
    "admission": set(),
    "bounded_json": set(),
    "logs": {"errors"},
    "embedding": {"config", "errors", "lru"},
    "storage": {"config", "errors", "bounded_json"},
    "storage.postgres": {"config", "errors", "storage", "embedding"},
    "metrics": {"errors", "storage", "storage.postgres"},
    "github": {"config", "lru", "bounded_json"},
    "curator": {"config", "errors", "storage", "bounded_json"},
    "runtime": {"config", "errors", "admission", "metrics", "embedding", "storage",
                "storage.postgres", "github"},
    "usecases": {"errors", "admission", "storage", "runtime", "github", "curator"},
    "web": {"errors", "storage", "runtime"},
    "gateway": {"config", "errors", "logs", "admission", "metrics", "storage", "runtime",
                "bounded_json"},
    "tools": {"errors", "storage", "runtime", "usecases", "metrics", "curator", "bounded_json"},
    "oauth": {"config", "errors", "storage", "runtime", "web"},
    "admin": {"config", "errors", "storage", "storage.postgres", "embedding", "runtime", "web",
              "tools"},
    "app": {"config", "errors", "logs", "embedding", "storage", "storage.postgres", "metrics",
            "github", "runtime", "gateway", "tools", "oauth", "admin"},
    # Not installed: the benchmarks use the product as a user would, never the tests.
    "bench": {"config", "errors", "logs", "lru", "admission", "bounded_json", "embedding",
              "storage", "storage.postgres", "metrics", "github", "curator", "runtime",
              "usecases", "web", "gateway", "tools", "oauth", "admin", "app"},
}
# storage/postgres/: the engine at the top of the folder (core, scope, queries, rows, ...),
# then the areas, each importing only the engine and the areas before it. `backend.py` is the
# one engine module above them all: it composes every area's store into PostgresBackend.
AREAS = ["memories", "retrieval", "work", "operator"]
COMPOSER = "storage.postgres.backend"
TOP_LEVEL = set(LAYERS) - {"bench", "storage.postgres"}


def _bench_modules() -> dict[str, Path]:
    return {f"bench.{p.stem}": p for p in (ROOT / "bench").glob("*.py")}


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The memhub modules `name` imports (TYPE_CHECKING imports included: a cycle through them
    still makes the code harder to follow), and `tests` when it reaches into the tests."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = ".".join([*base, *(node.module.split(".") if node.module else [])])
            elif node.module and node.module.startswith("memhub."):
                target = node.module.removeprefix("memhub.")
            elif node.module and node.module.split(".")[0] in ("tests", "bench"):
                target = node.module
                if target.startswith("tests"):
                    out.add("tests")
                    continue
            else:
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}" if target else alias.name
                out.add(sub if sub in modules else target)
    return {m for m in out if (m in modules or m == "tests") and m != name}


def _graph() -> dict[str, set[str]]:
    modules = {**product_modules(), **_bench_modules()}
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _layer(module: str) -> str:
    parts = module.split(".")
    if parts[:2] == ["storage", "postgres"]:
        return "storage.postgres"
    return parts[0]


def _area(module: str) -> str | None:
    """The storage area of a storage/postgres module, None for the engine."""
    parts = module.split(".")
    return parts[2] if parts[:2] == ["storage", "postgres"] and len(parts) > 3 else None


def test_no_import_cycles():
    graph = _graph()
    cycles = []
    state: dict[str, int] = {}  # 1: on the path, 2: done

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert cycles == []


def test_every_layer_is_in_the_table():
    assert sorted({_layer(m) for m in _graph()} - set(LAYERS)) == []


def test_each_layer_imports_only_what_its_row_allows():
    wrong = []
    for module, imported in _graph().items():
        layer = _layer(module)
        for target in imported:
            other = _layer(target)
            if other != layer and other not in LAYERS[layer]:
                wrong.append(f"{module} -> {target}")
    assert wrong == []


def test_the_table_has_no_cycle_between_layers():
    """Each layer's row names only layers above it in the table: a lower layer never imports
    an upper one."""
    order = list(LAYERS)
    upward = [f"{layer} -> {other}" for layer, allowed in LAYERS.items() for other in allowed
              if order.index(other) > order.index(layer)]
    assert upward == []


def test_storage_areas_import_only_the_engine_and_lower_areas():
    wrong = []
    for module, imported in _graph().items():
        area = _area(module)
        if _layer(module) != "storage.postgres" or module == COMPOSER:
            continue
        for target in imported:
            other = _area(target)
            if _layer(target) != "storage.postgres" or other is None or other == area:
                continue
            if area is None or AREAS.index(other) > AREAS.index(area):
                wrong.append(f"{module} -> {target}")
    assert wrong == []


def test_no_product_module_is_over_the_line_limit():
    long = {name: n for name, path in product_modules().items()
            if (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert long == {}


def test_tool_modules_are_adapters_short_enough_to_read_at_a_glance():
    long = {name: n for name, path in product_modules().items()
            if name.startswith("tools.")
            and (n := len(path.read_text().splitlines())) > MAX_TOOL_LINES}
    assert long == {}


def test_modules_import_their_siblings_relatively():
    """A bare `import config` would load a second copy of a module (or another distribution's
    `config`) instead of memhub's."""
    bare = []
    for name, path in product_modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                head = node.module.split(".")[0]
            elif isinstance(node, ast.Import):
                head = node.names[0].name.split(".")[0]
            else:
                continue
            if head in TOP_LEVEL or head == "memhub":
                bare.append(f"{name}: {head}")
    assert bare == []


def _documented_table() -> dict[str, set[str]]:
    """docs/architecture.md's layer table: {layer: what it may import}."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    table: dict[str, set[str]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith("`") or cells[0].startswith("`-"):
            continue
        layer = cells[0].strip("`").removesuffix(".py").removesuffix("/").replace("/", ".")
        allowed = set(re.findall(r"`([a-z_./]+)`", cells[2]))
        table[layer] = {a.removesuffix(".py").removesuffix("/").replace("/", ".")
                        for a in allowed}
    return table


def test_the_documented_table_is_this_table():
    assert _documented_table() == LAYERS
