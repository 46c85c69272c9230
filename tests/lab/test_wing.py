"""The lab is a wing of its own (lab/__init__.py): nothing of the core imports it but
the front door that mounts it, and it imports of the core only what its docstring
lists. Read from the source's import statements, type-only ones included."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "lab"
# What the lab may import of the core, and all of each: the middleware, the error
# family, the configuration, the router's Route and the rate-limit buckets
# (router.route), and the JSON Schemas it names its bodies by.
ALLOWED = ("middleware", "errors", "config", "router.route", "schemas")
# Of the web helpers, these modules alone (the package, ``web``, re-exports the
# requests and answers of ``web.wsgi``, and is how the field table is reached).
WEB_HELPERS = frozenset({
    "web",  # Request, Response, json_response; the field table, http_fields
    "web.wsgi",  # requests and answers
    "web.body",  # bodies read and parsed
    "web.environ",  # the declared environ keys
    "web.keys",  # the Via pseudonym, the signing keys (CSRF, Digest nonces)
    "web.auth",  # the session cookie's name, a secret's digest, the CSRF check
    "web.conditional",  # entity tags and If-None-Match
    "web.negotiation",  # the media types it answers in
    "web.statuses",  # the reason phrases
    "web.refusals",  # what a server refuses before the app, for the explainer
    "web.origin",  # the host and origin a request was sent to
})  # fmt: skip
TYPES_ONLY = ("slots", "storage")


def imported(path: Path) -> list[tuple[str, bool]]:
    """The refapi modules ``path`` imports (dotted, from the package's root), each
    with whether the import is for type checking only."""
    tree = ast.parse(path.read_text())
    package = path.relative_to(ROOT).parent.parts
    typing_only = {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
        for statement in block.body
        for node in ast.walk(statement)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = list(package[: len(package) - node.level + 1])
            module = ".".join([*base, *(node.module or "").split(".")]).strip(".")
            names = (
                [module]
                if node.module
                else [f"{module}.{a.name}".strip(".") for a in node.names]
            )
            found += [(name, id(node) in typing_only) for name in names]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
            "refapi."
        ):
            found.append((node.module.removeprefix("refapi."), id(node) in typing_only))
    return found


def core_files() -> list[Path]:
    skipped = {"tests", "bench", "tools", "build", "examples", "lab", "docs", "ui"}
    return [
        path
        for path in ROOT.rglob("*.py")
        if path.relative_to(ROOT).parts[0] not in skipped
        and not path.relative_to(ROOT).parts[0].startswith(".")
    ]


def test_nothing_of_the_core_imports_the_lab_but_the_front_door():
    importers = sorted(
        str(path.relative_to(ROOT))
        for path in core_files()
        if any(name.split(".")[0] == "lab" for name, _ in imported(path))
    )
    assert importers == ["app.py"]


def test_the_lab_imports_of_the_core_only_what_it_may():
    for path in LAB.glob("*.py"):
        for name, for_types in imported(path):
            if name.startswith("lab") or name == "":
                continue
            allowed = (
                name.startswith(ALLOWED)
                or name in WEB_HELPERS
                or (for_types and name.startswith(TYPES_ONLY))
            )
            assert allowed, f"{path.relative_to(ROOT)} imports {name}"


def test_the_reader_of_imports_sees_what_the_lab_imports():
    # The test above could pass by reading nothing: it reads what this holds.
    names = dict(imported(LAB / "explain.py"))
    assert names["middleware.authenticate"] is False
    assert names["slots"] is True
