"""The folders are layers a reader can trust (docs/architecture.md): no import cycles, no module
too long to read in one sitting, the lower layers never importing the upper ones, and no module
reaching the package's siblings by a bare top-level name."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.source import product_modules

MAX_LINES = 400
# Which layer may import which (a folder's own modules may import each other).
LOWER = {
    "errors": set(),
    "config": set(),
    "logs": {"errors"},
    "embedding": {"config", "errors"},
    "storage": {"errors", "config"},  # storage/ (the boundary) without storage/postgres/
    "storage.postgres": {"errors", "config", "storage", "embedding"},
}
TOP_LEVEL = {"app", "config", "errors", "logs", "runtime", "admin", "embedding", "gateway",
             "oauth", "storage", "tools"}


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The memhub modules `name` imports (TYPE_CHECKING imports included: a cycle through them
    still makes the code harder to follow)."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = ".".join([*base, *(node.module.split(".") if node.module else [])])
            elif node.module and node.module.startswith("memhub."):
                target = node.module.removeprefix("memhub.")
            else:
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}" if target else alias.name
                out.add(sub if sub in modules else target)
    return {m for m in out if m in modules and m != name}


def _graph() -> dict[str, set[str]]:
    modules = product_modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _layer(module: str) -> str:
    parts = module.split(".")
    if parts[:2] == ["storage", "postgres"]:
        return "storage.postgres"
    return parts[0]


def test_no_import_cycles():
    graph = _graph()
    cycles = []
    state: dict[str, int] = {}  # 1: on the path, 2: done

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert cycles == []


def test_lower_layers_never_import_upper_ones():
    wrong = []
    for module, imported in _graph().items():
        layer = _layer(module)
        if layer not in LOWER:
            continue
        for target in imported:
            other = _layer(target)
            if other != layer and other not in LOWER[layer]:
                wrong.append(f"{module} -> {target}")
    assert wrong == []


def test_no_product_module_is_over_the_line_limit():
    long = {name: n for name, path in product_modules().items()
            if (n := len(path.read_text().splitlines())) > MAX_LINES}
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
