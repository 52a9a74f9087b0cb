"""Every named SQL block a module asks for exists, and every block is asked for somewhere: a
renamed block fails here, not at the first request that runs it, and a block no code reads
does not linger in storage/postgres/sql/."""

from __future__ import annotations

import ast
import re

from memhub.storage.postgres.queries import QUERIES
from tests.support.source import product_modules

# The helpers that take a block's name (storage/postgres/queries.py, rows.py): the name is
# q's first argument and the others' second.
NAME_FIRST = {"q"}
NAME_SECOND = {"one", "many", "one_row"}
BLOCK_NAME = re.compile(r"[a-z0-9_]+\.[a-z0-9_]+")


def _callee(node: ast.Call) -> str | None:
    if isinstance(node.func, ast.Name):
        return node.func.id
    if isinstance(node.func, ast.Attribute):
        return node.func.attr
    return None


def _asked_for() -> tuple[set[str], set[str], list[str]]:
    """(names passed to the helpers or held in a *_BLOCKS table, every string constant shaped
    like a block name, calls whose block name is computed)."""
    asked: set[str] = set()
    mentioned: set[str] = set()
    computed: list[str] = []
    for module, path in product_modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and BLOCK_NAME.fullmatch(node.value):
                mentioned.add(node.value)
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict) and any(
                    isinstance(t, ast.Name) and t.id.endswith("_BLOCKS") for t in node.targets):
                asked |= {v.value for v in node.value.values if isinstance(v, ast.Constant)}
            if not isinstance(node, ast.Call):
                continue
            callee = _callee(node)
            index = 0 if callee in NAME_FIRST else 1 if callee in NAME_SECOND else None
            if index is None or len(node.args) <= index:
                continue
            arg = node.args[index]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                asked.add(arg.value)
            elif isinstance(arg, ast.JoinedStr):
                computed.append(f"{module}: {ast.unparse(arg)}")
    return asked, mentioned, computed


def test_every_block_a_module_asks_for_exists():
    asked, _, _ = _asked_for()
    assert sorted(asked - set(QUERIES)) == []


def test_no_block_name_is_built_at_run_time():
    """A computed name (an f-string) hides which blocks are read: name them in a table."""
    assert _asked_for()[2] == []


def test_every_block_is_read_by_some_module():
    _, mentioned, _ = _asked_for()
    assert sorted(set(QUERIES) - mentioned) == []
