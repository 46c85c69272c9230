"""The docs' examples: read from Markdown, run in bash, compared with what they show
(docs/development.md, "The docs' examples").

An example is a fenced block marked ``sh``, commands as a person pastes them (a
long one continued with a plain ``\\``), followed by a block marked ``output``: what
they print. A ``sh`` block with no ``output`` block after it must print nothing.
What varies is written as a placeholder: ``<id>`` a whole number, ``<time>`` an RFC
3339 timestamp or an HTTP date, ``<any>`` any text within one line. A placeholder
also matches its own text, so an XML ``<id>`` element needs no escape. Lines are
compared one by one, each without the ``\\r`` curl prints at the end of a header
line, and output without a final newline (a body, as curl prints it) is read as if
it had one.

Words after ``sh`` mark an example: ``skip`` is never run (commands for another
machine); ``server`` is never run either, and names the server a file's examples
need (``NAME=value ... make run``); ``portable``, ``writes`` and ``admin`` say what
``refapi check`` may run. A file's examples run in order in one bash, so a variable
set in one is there for the next; each must end with exit status 0. Every
expansion in a ``sh`` block is in double quotes (shell_quoting.py), and ``run``
refuses an example with one that is not: what a server sends, read into a
variable, stays one word, never curl's options or a second URL.

Standard library only: ``refapi check`` runs these on any machine with bash and curl.
"""

from __future__ import annotations

import difflib
import functools
import os
import re
import secrets
import select
import shlex
import signal
import subprocess
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from .shell_quoting import unquoted

FENCE = re.compile(r"^\s*(```+|~~~+)\s*(.*)$")
PROMPT = re.compile(r"^\s*[$>] ")
MARKS = {"skip", "server", "portable", "writes", "admin"}

TIME = (
    r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)"  # RFC 3339
    r"|(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d\d "  # RFC 9110's IMF-fixdate
    r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d\d:\d\d:\d\d GMT"
)
PLACEHOLDERS = {"<id>": r"[0-9]+", "<time>": TIME, "<any>": r".*"}
PLACEHOLDER = re.compile("(" + "|".join(PLACEHOLDERS) + ")")


@dataclass(frozen=True)
class Example:
    """One ``sh`` block of a file and the ``output`` block after it."""

    file: str
    line: int  # the line of its opening fence, counted from 1
    commands: str
    output: str  # "" when it shows none: it must print nothing
    marks: frozenset[str]

    @property
    def name(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class Block:
    line: int
    info: list[str]
    text: str

    @property
    def runs(self) -> bool:
        return self.info[:1] == ["sh"] and not {"skip", "server"} & set(self.info)


def blocks_of(text: str) -> list[Block]:
    """Every fenced block of a Markdown text, with its info string's words."""
    found: list[Block] = []
    fence, start, indent = "", 0, ""
    info: list[str] = []
    body: list[str] = []
    for number, line in enumerate(text.splitlines(), 1):
        opened = FENCE.match(line)
        closes = opened and opened.group(1).startswith(fence) and not opened.group(2)
        if not fence and opened:
            fence, start, info = opened.group(1), number, opened.group(2).split()
            body = []
            indent = line[: len(line) - len(line.lstrip())]  # a fence in a list item
        elif fence and closes:
            found.append(Block(start, info, "".join(body)))
            fence = ""
        elif fence:
            body.append(line.removeprefix(indent) + "\n")
    return found


def examples_of(text: str, file: str) -> list[Example]:
    """The file's examples in order, the skipped ones left out."""
    examples, blocks = [], blocks_of(text)
    for i, block in enumerate(blocks):
        if not block.runs:
            continue
        after = blocks[i + 1] if i + 1 < len(blocks) else None
        shown = after.text if after and after.info[:1] == ["output"] else ""
        marks = frozenset(block.info[1:])
        examples.append(Example(file, block.line, block.text, shown, marks))
    return examples


def mistakes_of(text: str) -> list[str]:
    """What would make an example unpastable or unchecked, a line each."""
    mistakes, previous = [], None
    for block in blocks_of(text):
        kind, marks = block.info[:1], set(block.info[1:])
        where = f"line {block.line}"
        if kind == ["console"]:
            mistakes.append(f"{where}: a console block; write sh, then output")
        if kind == ["sh"] and marks - MARKS:
            mistakes.append(f"{where}: unknown marks {sorted(marks - MARKS)}")
        if kind == ["sh"] and any(
            PROMPT.match(line) for line in block.text.splitlines()
        ):
            mistakes.append(f"{where}: a prompt ($ or >) in a sh block does not paste")
        if kind == ["output"] and not (previous and previous.runs):
            mistakes.append(f"{where}: an output block not after a sh block that runs")
        if kind == ["sh"]:
            mistakes += unquoted_in(block.text, "line ", block.line + 1)
        previous = block
    return mistakes


def unquoted_in(commands: str, where: str, first: int) -> list[str]:
    """Each expansion bash would split into words and glob, ``where`` and the line
    (``first`` the commands' first): a server's text in one would become curl
    options or a second URL."""
    return [
        f"{where}{first + line}: {said} is not quoted (in double quotes, what it "
        "holds stays one word)"
        for line, said in unquoted(commands)
    ]


def server_of(text: str) -> tuple[dict[str, str], str] | None:
    """The settings and the make target of the file's ``sh server`` block, if any."""
    for block in blocks_of(text):
        if block.info[:1] == ["sh"] and "server" in block.info:
            words = shlex.split(block.text.replace("\\\n", " "), comments=True)
            at = words.index("make")
            settings = dict(word.split("=", 1) for word in words[:at])
            return settings, words[at + 1]
    return None


@functools.lru_cache(maxsize=4096)
def pattern(shown: str) -> re.Pattern[str]:
    """The regular expression an output line stands for."""
    parts = PLACEHOLDER.split(shown)
    return re.compile(
        "".join(
            f"(?:{re.escape(part)}|{PLACEHOLDERS[part]})"
            if part in PLACEHOLDERS
            else re.escape(part)
            for part in parts
        )
    )


def lines_of(output: str) -> list[str]:
    """Output as lines: a final newline or none alike, each line's ``\\r`` off."""
    if not output:
        return []
    return [line.removesuffix("\r") for line in output.removesuffix("\n").split("\n")]


def difference(shown: str, printed: str) -> str:
    """A unified diff of what an example shows and what it printed, or ''."""
    expected, actual = lines_of(shown), lines_of(printed)
    if len(expected) == len(actual) and all(
        pattern(e).fullmatch(a) for e, a in zip(expected, actual, strict=True)
    ):
        return ""
    # A line that matches its placeholder line is shown as that line, so the diff
    # names only what differs.
    seen = [
        expected[i] if i < len(expected) and pattern(expected[i]).fullmatch(line)
        else next((e for e in expected if pattern(e).fullmatch(line)), line)
        for i, line in enumerate(actual)
    ]  # fmt: skip
    diff = difflib.unified_diff(expected, seen, "shown", "printed", lineterm="", n=2)
    return "\n".join(diff)


class Unquoted(ValueError):
    """Examples with an expansion bash would split: each named, a line each."""


def refuse_unquoted(examples: Iterable[Example]) -> None:
    """``Unquoted`` naming each unquoted expansion of the examples, if any."""
    refused = [
        said
        for example in examples
        for said in unquoted_in(example.commands, f"{example.file}:", example.line + 1)
    ]
    if refused:
        raise Unquoted("\n".join(refused))


@dataclass(frozen=True)
class Ran:
    example: Example
    printed: str | None  # None: it never ran (the shell stopped, or took too long)
    status: int

    def difference(self) -> str:
        """What differs from the doc, in words and a diff, or ''."""
        if self.printed is None:
            return "did not finish: the shell stopped, or ran out of time"
        said = difference(self.example.output, self.printed)
        if self.status:
            said = f"exit status {self.status}\n{said}".rstrip()
        return said


# The most the examples may print in all: a server that answers a curl with an
# endless body stops there (it grew `refapi check` until memory ran out).
MAX_PRINTED = 16 * 1024 * 1024


def _printed(shell: subprocess.Popen[bytes], timeout: float) -> tuple[bytes, bool]:
    """What ``shell`` prints until it ends, at most ``MAX_PRINTED`` bytes within
    ``timeout`` seconds, and whether it ended: past either bound, what came so
    far."""
    if shell.stdout is None:  # no pipe asked: nothing to read
        return b"", True
    fd = shell.stdout.fileno()
    chunks: list[bytes] = []
    size, deadline = 0, time.monotonic() + timeout
    while size <= MAX_PRINTED:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            break
        chunk = os.read(fd, 65536)
        if not chunk:  # the end: the shell and every command it started are done
            return b"".join(chunks), True
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)[:MAX_PRINTED], False


def run(
    examples: Iterable[Example],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float = 300,
    prelude: str = "",
) -> list[Ran]:
    """Run examples in order in one bash; stdout and stderr are their output.
    Refuses (``Unquoted``) to run any if one has an unquoted expansion."""
    examples = list(examples)
    refuse_unquoted(examples)
    end = f"refapi-example-end-{secrets.token_hex(8)}"
    script = prelude + "".join(
        f"{example.commands}\nprintf '\\n{end} %s\\n' \"$?\"\n" for example in examples
    )
    with subprocess.Popen(
        ["bash", "--noprofile", "--norc", "-c", script],
        cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, start_new_session=True,
    ) as shell:  # fmt: skip
        out, ended = b"", False
        try:
            out, ended = _printed(shell, timeout)
        finally:  # past a bound, or interrupted (Ctrl-C): its commands end too
            if not ended:
                os.killpg(shell.pid, signal.SIGKILL)  # a command's children too
            shell.wait()
    parts = out.decode(errors="replace").split(f"\n{end} ")
    ran, printed = [], parts[0]
    for example, part in zip(examples, parts[1:], strict=False):
        status, _, rest = part.partition("\n")
        ran.append(Ran(example, printed, int(status)))
        printed = rest
    ran += [Ran(example, None, 0) for example in examples[len(ran) :]]
    return ran
