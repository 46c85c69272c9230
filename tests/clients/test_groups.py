"""The note's endpoint groups, read from a client's test source, and its counts
(tests/clients/groups.py)."""

from __future__ import annotations

import textwrap

from tests.clients.groups import endpoint_groups, note, passing

SOURCE = """
import pytest

def test_no_server():
    assert 1


def test_one_path(httpbin):
    requests.get(httpbin("status", "418"))
    requests.get(httpbin("get"))


class TestSome:
    def test_computed_then_written(self, httpbin, method):
        requests.request(method, httpbin(method.lower()))
        requests.get(httpbin("/redirect-to?url=get"))

    def test_formatted(self, httpbin_secure):
        requests.get(httpbin_secure("cookies/set?%s" % "a=1"))

    def test_root(self, httpbin):
        requests.get(httpbin())

    class TestNested:
        def test_f_string(self, httpbin):
            requests.get(httpbin(f"bytes/{20}"))

    def test_computed(self, httpbin, path):
        requests.get(httpbin(path))

    def helper(self, httpbin):
        requests.get(httpbin("post"))
"""


def test_a_test_is_grouped_by_the_first_path_it_writes_out(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text(textwrap.dedent(SOURCE))
    assert endpoint_groups(tmp_path) == {
        "tests/test_x.py::test_no_server": "(no httpbin)",
        "tests/test_x.py::test_one_path": "status",
        "tests/test_x.py::TestSome::test_computed_then_written": "redirect-to",
        "tests/test_x.py::TestSome::test_formatted": "cookies",
        "tests/test_x.py::TestSome::test_root": "(base URL)",
        "tests/test_x.py::TestSome::TestNested::test_f_string": "bytes",
        "tests/test_x.py::TestSome::test_computed": "(computed)",
    }


def test_the_note_counts_what_passed_on_each_side_by_group():
    tests = ("t.py::test_a[1]", "t.py::test_a[2]", "t.py::test_b", "t.py::test_c")
    reference = {test: {"outcome": "passed", "why": ""} for test in tests}
    other = {
        **reference,
        "t.py::test_a[2]": {"outcome": "failed", "why": "assert 404 == 200"},
        "t.py::test_b": {"outcome": "failed", "why": "KeyError: 'x'"},
        "t.py::test_c": {"outcome": "skipped", "why": ""},
    }
    groups = {"t.py::test_a": "get", "t.py::test_b": "cookies"}
    outcomes = {"one": reference, "two": other}
    text = note("Title", outcomes, groups, {"t.py::test_b": "a rule"})
    assert passing(other) == {"t.py::test_a[1]"}
    assert text.splitlines() == [
        "# Title",
        "",
        "| endpoint group | tests | pass on one | pass on two |",
        "|---|---:|---:|---:|",
        "| cookies | 1 | 1 | 0 |",
        "| get | 2 | 2 | 1 |",
        "| (no httpbin) | 1 | 1 | 0 |",
        "| all | 4 | 4 | 1 |",
        "",
        "Passing against one, not against two:",
        "",
        "- cookies: `t.py::test_b`: refused: a rule",
        "- get: `t.py::test_a[2]`: assert 404 == 200",
        "- (no httpbin): `t.py::test_c`: skipped",
    ]
