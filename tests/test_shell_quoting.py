"""shell_quoting: which expansions of a bash script bash splits into words and
globs, the lint every example of the docs passes (docs/development.md, "The docs'
examples")."""

from __future__ import annotations

import pytest

from refapi.shell_quoting import unquoted


@pytest.mark.parametrize(
    ("script", "found"),
    [
        ("curl -s $BASE$ARTICLE", [(0, "$BASE"), (0, "$ARTICLE")]),
        ("curl ${BASE}/x", [(0, "${BASE}")]),
        ("curl -X DELETE $BASE/c/$(echo \"$C\" | field id)",
         [(0, "$BASE"), (0, '$(echo "$C" | field id)')]),
        ('curl "$(echo $X)"', [(0, "$X")]),  # a substitution splits inside quotes
        ("echo `cat f`", [(0, "`...`")]),
        ("for i in $LIST; do echo \"$i\"; done", [(0, "$LIST")]),
        ("export A=$B", [(0, "$B")]),  # an argument, not an assignment
        ("curl -s \\\n  $BASE", [(1, "$BASE")]),
        ("echo $1 $@ $?", [(0, "$1"), (0, "$@"), (0, "$?")]),
        ("cat > $FILE", [(0, "$FILE")]),
        ("TOKEN=$(curl -s $BASE/api/login)", [(0, "$BASE")]),
        ("echo $((1 + 2))", [(0, "$((1 + 2))")]),
        ("(cd $D)", [(0, "$D")]),
        ("cat <<< $X", [(0, "$X")]),
    ],
    ids=[
        "concatenated", "braces", "substitution", "inside-a-quoted-substitution",
        "backquotes", "for-list", "export", "continued-line", "special",
        "redirection", "inside-an-assignment", "arithmetic", "subshell",
        "here-string",
    ],
)  # fmt: skip
def test_an_unquoted_expansion_is_found_with_its_line(script, found):
    assert unquoted(script) == found


@pytest.mark.parametrize(
    "script",
    [
        'curl -s "$BASE$ARTICLE" -H "$AUTH"',
        "TOKEN=$(curl -s \"$BASE/api/login\") AUTH=\"Bearer $TOKEN\"",
        "HEDY_ID=${HEDY_URL##*/}",
        "if true; then A=$B; fi",
        "python3 -c 'import json, sys; print($x)'",
        "echo $'a\\'b $c'",
        "echo 'it''s' # a comment's $BASE",
        "echo costs \\$5",
        "echo $ alone",
        'curl "${EXPLAIN[@]}" -d "$(python3 -c "$FORM" GET)"',
        "python3 - <<'EOF'\nprint($BASE)\nEOF\necho done",
        "cat <<-EOF\n\t$X\n\tEOF",
        'f() { g "$1"; }',
    ],
    ids=[
        "quoted", "assignments", "assignment-braces", "assignment-after-then",
        "single-quotes", "ansi-c", "comment", "escaped", "lone-dollar",
        "nested-quotes", "heredoc", "heredoc-tabs", "function",
    ],
)  # fmt: skip
def test_a_quoted_or_unsplit_expansion_is_not(script):
    assert unquoted(script) == []
