"""The note of a client's suite run against two servers: its tests by endpoint group,
the first path each asks httpbin for, read from the test's source, and how many
passed against each (tests/clients/test_requests_suite.py; docs/lab.md, "Checked by
clients' own suites")."""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path


def endpoint_groups(source: Path) -> dict[str, str]:
    """Each test function of the suite (``tests/x.py::Class::test_y``) to the first
    path segment it asks httpbin for (``get`` for ``httpbin("get?x=1")``), read
    from its source: ``(no httpbin)`` if it never calls ``httpbin`` or
    ``httpbin_secure``, ``(computed)`` if every path it asks for is computed."""
    groups = {}
    for path in sorted((source / "tests").glob("test_*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for test, function in _test_functions(tree.body, f"tests/{path.name}"):
            groups[test] = _first_path(function)
    return groups


def _test_functions(
    body: list[ast.stmt], where: str
) -> Iterator[tuple[str, ast.FunctionDef]]:
    """Each test function in ``body`` (its classes' too), by its node id."""
    for node in body:
        if isinstance(node, ast.ClassDef):
            yield from _test_functions(node.body, f"{where}::{node.name}")
        elif isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
            yield f"{where}::{node.name}", node


def _first_path(function: ast.FunctionDef) -> str:
    """The group of the first path ``function`` asks for that is written out."""
    calls = sorted(
        (node for node in ast.walk(function)
         if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
         and node.func.id in ("httpbin", "httpbin_secure")),
        key=lambda call: (call.lineno, call.col_offset),
    )  # fmt: skip
    for call in calls:
        if not call.args:
            return "(base URL)"
        text = _leading_text(call.args[0])
        if text is not None:
            return re.split(r"[/?#]", text.lstrip("/"))[0] or "(base URL)"
    return "(computed)" if calls else "(no httpbin)"


def _leading_text(node: ast.expr) -> str | None:
    """The literal text a path argument starts with: ``"get"``, ``f"get{x}"``,
    ``"redirect-to?%s" % query``; None for a path computed whole."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        node = node.left
    if isinstance(node, ast.JoinedStr) and node.values:
        node = node.values[0]
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def passing(ran: dict[str, dict[str, str]]) -> set[str]:
    """The tests of a run that passed: setup, call and teardown."""
    return {test for test, found in ran.items() if found["outcome"] == "passed"}


def note(
    title: str,
    outcomes: dict[str, dict[str, dict[str, str]]],
    groups: dict[str, str],
    refused: dict[str, str],
) -> str:
    """In Markdown: by endpoint group, how many tests passed against each server of
    ``outcomes`` (the reference first); then each test that passed against the
    reference and not against the other, and why (the rule, for one ``refused``)."""
    (reference, ran), (other, other_ran) = outcomes.items()
    passed = [passing(ran), passing(other_ran)]
    group_of = {test: groups.get(test.partition("[")[0], "(no httpbin)")
                for test in ran}  # fmt: skip
    tests = Counter(group_of.values())
    lines = [f"# {title}", "",
             f"| endpoint group | tests | pass on {reference} | pass on {other} |",
             "|---|---:|---:|---:|"]  # fmt: skip
    for group in sorted(tests, key=_in_order):
        on = [sum(group_of.get(test) == group for test in side) for side in passed]
        lines.append(f"| {group} | {tests[group]} | {on[0]} | {on[1]} |")
    lines += [f"| all | {len(group_of)} | {len(passed[0])} | {len(passed[1])} |",
              "", f"Passing against {reference}, not against {other}:", ""]  # fmt: skip
    lost = passed[0] - passed[1]
    for test in sorted(lost, key=lambda test: (_in_order(group_of[test]), test)):
        found = other_ran.get(test, {"outcome": "not run"})
        why = found.get("why") or found["outcome"]
        if test in refused:
            why = f"refused: {refused[test]}"
        lines.append(f"- {group_of[test]}: `{test}`: {why}")
    return "\n".join(lines) + "\n"


def _in_order(group: str) -> tuple[bool, str]:
    """Endpoints by name, then the groups that are none: ``(no httpbin)``..."""
    return group.startswith("("), group
