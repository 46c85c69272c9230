"""Which expansions of a bash script are left unquoted: the lint the docs' examples
pass, so that what a server sends (a ``Location``, an id) stays one word however it
is written (docs/development.md, "The docs' examples").

bash splits an unquoted ``$NAME``, ``${...}``, ``$(...)`` or backquoted expansion
into words and expands each as a file pattern: a ``Location`` of ``/v1/a -T file``
becomes three arguments of curl. Inside double quotes it stays one word, as it
does as the value of an assignment (``TOKEN=$(curl ...)``), which bash neither
splits nor globs. Single quotes, ``$'...'``, comments and here-documents' bodies
expand nothing that could be split. A command substitution is a script of its
own: ``"$(echo $X)"`` still splits ``$X``.

Hand-written, as no library of the standard one reads bash: it follows the
quoting, not the grammar, and is checked by tests/test_shell_quoting.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\[[^]]*\])?\+?=")
HEREDOC = re.compile(r"<<-?[ \t]*(['\"]?)\\?([^\s'\";&|<>()]+)\1")
ANSI_C = re.compile(r"(?:\\.|[^'\\])*'?", re.S)  # the rest of a $'...' string
SPECIAL = frozenset("@*#?-$!0123456789")  # $@, $1, ...
# Words after which a command starts again, so an assignment may follow.
RESERVED = frozenset("! { do elif else if then time until while".split())
ENDS_WORD = frozenset(" \t\n;&|()<>")
OPERATORS = frozenset(" \t#;&|()<>")  # what may start where no word does


@dataclass
class _Plain:
    """Where a scan of unquoted text is: whether a command starts (so an
    assignment may come), how deep in parentheses, the here-documents begun."""

    command: bool = True
    depth: int = 0
    heredocs: list[str] = field(default_factory=list)


def unquoted(script: str) -> list[tuple[int, str]]:
    """Each expansion bash would split and glob: its line (from 0) and its text."""
    scan = _Scan(script)
    return [(script.count("\n", 0, at), said) for at, said in scan.found]


class _Scan:
    """One pass over a script, noting in ``found`` what is split."""

    def __init__(self, script: str) -> None:
        self.text = script
        self.found: list[tuple[int, str]] = []  # offset, the expansion's first line
        self.plain(0, "")

    def plain(self, at: int, until: str) -> int:
        """Unquoted text up to ``until`` (a substitution's closing ``)`` or
        backquote), or the end; past it."""
        text, state = self.text, _Plain()
        while at < len(text):
            char = text[at]
            if char == until and not (until == ")" and state.depth):
                return at + 1
            if char == "\n":
                at = self.bodies(at + 1, state.heredocs)
                state.heredocs, state.command = [], True
            elif char in OPERATORS or text.startswith("\\\n", at):
                at = self.operator(at, state)
            else:
                assigns = state.command and ASSIGNMENT.match(text, at) is not None
                end = self.word(at, until, split=not assigns)
                state.command = assigns or (state.command and text[at:end] in RESERVED)
                at = end
        return at

    def operator(self, at: int, state: _Plain) -> int:
        """A blank, a comment, a control or redirection operator; past it."""
        text, char = self.text, self.text[at]
        if char == "#":
            return self.line_end(at)
        if char in ";&|(":
            state.command = True
        state.depth += (char == "(") - (char == ")")
        if text.startswith("<<<", at):  # a here-string, not a here-document
            return at + 3
        if heredoc := HEREDOC.match(text, at):
            state.heredocs.append(heredoc.group(2))
            return heredoc.end()
        if char in "<>" and text.startswith("(", at + 1):  # a process substitution
            return self.plain(at + 2, ")")
        return at + 2 if char == "\\" else at + 1

    def word(self, at: int, until: str, *, split: bool) -> int:
        """One word; ``split`` when bash splits its unquoted expansions."""
        text = self.text
        while at < len(text) and text[at] not in ENDS_WORD:
            char = text[at]
            if char == "`":
                if until == "`":
                    break
                if split:
                    self.found.append((at, "`...`"))
                at = self.plain(at + 1, "`")
            elif char == "\\":
                at += 2
            elif char == "'":
                end = text.find("'", at + 1)
                at = len(text) if end < 0 else end + 1
            elif char == '"':
                at = self.quoted(at + 1)
            elif char == "$":
                at = self.expansion(at, split=split)
            else:
                at += 1
        return at

    def quoted(self, at: int) -> int:
        """Inside double quotes: nothing is split but what a substitution holds."""
        text = self.text
        while at < len(text) and text[at] != '"':
            if text[at] == "\\":
                at += 2
            elif text[at] == "$":
                at = self.expansion(at, split=False)
            elif text[at] == "`":
                at = self.plain(at + 1, "`")
            else:
                at += 1
        return at + 1

    def expansion(self, at: int, *, split: bool) -> int:
        """A ``$`` and what follows it; noted when ``split``."""
        text, after = self.text, self.text[at + 1 : at + 2]
        name = NAME.match(text, at + 1)
        if text.startswith("$((", at):
            end = self.closing(at + 1, "(", ")")
        elif after == "(":
            end = self.plain(at + 2, ")")
        elif after == "{":
            end = self.closing(at + 1, "{", "}")
        elif after == "'":
            return ANSI_C.match(text, at + 2).end()  # type: ignore[union-attr]
        elif after == '"':
            return self.quoted(at + 2)
        elif name:
            end = name.end()
        elif after and after in SPECIAL:
            end = at + 2
        else:
            return at + 1  # a $ that expands nothing
        if split:
            self.found.append((at, text[at:end].split("\n")[0]))
        return end

    def closing(self, at: int, opens: str, closes: str) -> int:
        """Past the bracket that closes the one at ``at``."""
        depth, text = 0, self.text
        while at < len(text):
            depth += (text[at] == opens) - (text[at] == closes)
            at += 1
            if not depth:
                break
        return at

    def line_end(self, at: int) -> int:
        end = self.text.find("\n", at)
        return len(self.text) if end < 0 else end

    def bodies(self, at: int, delimiters: list[str]) -> int:
        """Past the here-documents begun on the line before ``at``."""
        for delimiter in delimiters:
            while at < len(self.text):
                end = self.line_end(at)
                line, at = self.text[at:end], end + 1
                if line.lstrip("\t") == delimiter:
                    break
        return at
