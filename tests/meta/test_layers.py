"""The house's layers (docs/development.md, "Layout"): every import goes down, and
no circle of imports, read from the source as Python would run it (imports under
``if TYPE_CHECKING:`` are for the type checker, never run, and may name a type from
above)."""

from __future__ import annotations

import ast
import graphlib
from collections import defaultdict
from pathlib import Path

import pytest

from tests.helpers import ROOT

# Bottom to top. A module may import from a lower tier only, or from its own room
# (the package or module it is part of): so two rooms of one tier never import each
# other (the lab and the handlers, say).
TIERS = (
    {"folders", "settings"},
    {"storage", "errors", "hosts", "metrics", "shell_quoting"},
    {"config", "logs", "doc_examples"},
    {"web", "first_admin"},
    {"schemas"},
    {"startup", "slots", "check"},
    {"middleware", "serving"},
    {"router"},
    {"openapi"},
    {"handlers", "lab"},
    {"routes"},
    {"app"},
    # The package's face, and the commands (python -m refapi runs cli.py).
    {"refapi", "cli", "client", "gunicorn"},
    {"__main__"},
)
NOT_THE_PACKAGE = {"tests", "bench", "tools", "examples", "docs", "build", "ui"}


def modules(root: Path = ROOT) -> dict[str, Path]:
    found = {}
    for path in root.rglob("*.py"):
        parts = path.relative_to(root).parts
        if parts[0] in NOT_THE_PACKAGE or parts[0].startswith("."):
            continue
        names = ["refapi", *Path(*parts).with_suffix("").parts]
        if names[-1] == "__init__":
            names.pop()
        found[".".join(names)] = path
    return found


def _run_imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """The imports a run executes: all but those under ``if TYPE_CHECKING:``."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def imports(root: Path = ROOT) -> dict[str, set[str]]:
    """Each module of the package, and the modules of the package it imports."""
    known = modules(root)
    graph: dict[str, set[str]] = defaultdict(set)
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in _run_imports(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[
                        : len(package.split(".")) - node.level + 1
                    ]
                    base = ".".join([*parts, *filter(None, [node.module])])
                named = [f"{base}.{alias.name}" for alias in node.names]
                # `from . import x` imports the module x, if there is one
                targets = [t for t in named if t in known] or [base]
            graph[name].update(t for t in targets if t in known and t != name)
    return graph


def room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "refapi"


def tier(name: str) -> int:
    return next(i for i, rooms in enumerate(TIERS) if name in rooms)


def test_every_room_has_a_tier():
    assert {room(module) for module in modules()} <= set().union(*TIERS)


def upward(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{module} imports {target}"
        for module, targets in graph.items()
        for target in targets
        if room(module) != room(target) and tier(room(target)) >= tier(room(module))
    )


def test_no_module_imports_one_from_its_own_tier_or_above():
    assert upward(imports()) == []


def test_no_circle_of_imports():
    graphlib.TopologicalSorter(imports()).prepare()  # CycleError names the circle


def test_the_reader_finds_an_upward_import_and_a_circle(tmp_path):
    files = {
        "web/__init__.py": "",
        "web/wsgi.py": "from typing import TYPE_CHECKING\n"
        "from ..errors import ApiError\n"
        "if TYPE_CHECKING:\n    from ..app import App\n",  # a type: allowed
        "web/body.py": "def read():\n    from ..handlers import items\n",
        "handlers/__init__.py": "",
        "handlers/items.py": "from . import todos\n",
        "handlers/todos.py": "from .items import list_items\n",
        "errors.py": "",
        "app.py": "",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    graph = imports(tmp_path)
    assert upward(graph) == ["refapi.web.body imports refapi.handlers.items"]
    assert "refapi.app" not in graph["refapi.web.wsgi"]
    with pytest.raises(graphlib.CycleError):
        graphlib.TopologicalSorter(graph).prepare()
