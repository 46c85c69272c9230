"""doc_examples: how the docs' examples are read, matched and run (the format:
docs/development.md, "The docs' examples"). The docs themselves run against a live
server in tests/e2e/test_doc_examples.py."""

from __future__ import annotations

import shutil
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from refapi.doc_examples import (
    MAX_PRINTED,
    Example,
    Unquoted,
    difference,
    examples_of,
    mistakes_of,
    run,
)
from tests.conftest import skip_or_fail


@pytest.mark.parametrize(
    ("shown", "printed"),
    [
        ('{"id":<id>}', '{"id":42}'),
        ("created <time>", "created 2026-11-21T13:45:00Z"),
        ("created <time>", "created 2026-11-21T13:45:00.123+01:00"),
        ("Date: <time>", "Date: Sat, 21 Nov 2026 13:45:00 GMT"),
        ('"token":"<any>"', '"token":"a b c"'),
        ("<article><id><id></id>", "<article><id>7</id>"),  # XML's <id> is itself
        ("HTTP/1.1 200 OK\nVary: Accept", "HTTP/1.1 200 OK\r\nVary: Accept\r\n"),
        ("a body", "a body"),  # curl prints a body without a final newline
        ("a.c [x]", "a.c [x]"),  # the rest is literal, never a pattern
    ],
    ids=[
        "id", "rfc3339", "rfc3339-offset", "http-date", "any", "xml-id", "cr",
        "no-final-newline", "literal",
    ],
)  # fmt: skip
def test_a_placeholder_matches_what_varies(shown, printed):
    assert difference(shown + "\n", printed) == ""


@pytest.mark.parametrize(
    ("shown", "printed"),
    [
        ('{"id":<id>}', '{"id":"7"}'),
        ("created <time>", "created yesterday"),
        ("<any>", "one\ntwo"),  # within one line only
        ("a.c", "abc"),
        ("200", ""),
        ("", "an unexpected line"),
        ("a\n\n", "a"),  # a blank line shown must be printed
    ],
    ids=["id", "time", "any-one-line", "dot", "nothing", "more", "blank-line"],
)
def test_what_differs_is_a_difference(shown, printed):
    assert difference(shown, printed) != ""


def test_a_difference_names_only_the_lines_that_differ():
    shown = 'Location: /v1/articles/<id>\n{"id":<id>,"title":"Hello"}\n'
    printed = 'Location: /v1/articles/3\n{"id":3,"title":"Bye"}\n'
    assert difference(shown, printed).splitlines()[3:] == [
        " Location: /v1/articles/<id>",
        '-{"id":<id>,"title":"Hello"}',
        '+{"id":3,"title":"Bye"}',
    ]


DOC = """\
# A guide

```sh server
REFAPI_RATE_LIMIT_CAPACITY=5 make run
```

```sh skip
export BASE=http://127.0.0.1:8000
```

```sh portable
curl -s "$BASE/healthz"; \\
  echo
```

```output
ok
```

```python
print("not run")
```

- a list item:

  ```sh writes
  TOKEN=secret
  ```
"""


def test_the_examples_are_the_sh_blocks_that_run_with_what_they_show():
    assert examples_of(DOC, "g.md") == [
        Example("g.md", 11, 'curl -s "$BASE/healthz"; \\\n  echo\n', "ok\n",
                frozenset({"portable"})),
        Example("g.md", 26, "TOKEN=secret\n", "", frozenset({"writes"})),
    ]  # fmt: skip


PROMPT = "a prompt ($ or >) in a sh block does not paste"
ALONE = "an output block not after a sh block that runs"
UNQUOTED = "is not quoted (in double quotes, what it holds stays one word)"


@pytest.mark.parametrize(
    ("text", "mistake"),
    [
        (
            "```console\n  $ true\n```\n",
            "line 1: a console block; write sh, then output",
        ),
        ("```sh\n$ true\n```\n", f"line 1: {PROMPT}"),
        ("```sh\ntrue \\\n> false\n```\n", f"line 1: {PROMPT}"),
        ("```sh later\ntrue\n```\n", "line 1: unknown marks ['later']"),
        ("```output\nok\n```\n", f"line 1: {ALONE}"),
        ("```sh skip\nmake run\n```\n\n```output\nok\n```\n", f"line 5: {ALONE}"),
        ('```sh skip\ntrue\ncurl "$BASE"$A\n```\n', f"line 3: $A {UNQUOTED}"),
    ],
    ids=[
        "console",
        "prompt",
        "continuation",
        "mark",
        "output-alone",
        "output-of-skip",
        "unquoted",
    ],
)
def test_a_block_that_would_not_paste_or_not_run_is_a_mistake(text, mistake):
    assert mistakes_of(text) == [mistake]


def test_the_guides_format_has_no_mistake():
    assert mistakes_of(DOC) == []


@pytest.fixture
def bash():
    if shutil.which("bash") is None:
        skip_or_fail("the examples run in bash")


def test_examples_run_in_order_in_one_shell(bash, tmp_path):
    examples = examples_of(
        "```sh\nNAME=refapi\n```\n\n```sh\necho \"$NAME\"; printf 'no newline'\n```\n"
        "\n```output\nrefapi\nno newline\n```\n",
        "g.md",
    )
    ran = run(examples, cwd=tmp_path, env={"PATH": "/usr/bin:/bin"})
    assert [(r.printed, r.status, r.difference()) for r in ran] == [
        ("", 0, ""),
        ("refapi\nno newline", 0, ""),
    ]


def test_an_example_that_fails_or_stops_the_shell_says_so(bash, tmp_path):
    examples = examples_of(
        "```sh\nfalse\n```\n\n```sh\nexit 3\n```\n\n```sh\ntrue\n```\n", "g.md"
    )
    ran = run(examples, cwd=tmp_path, env={"PATH": "/usr/bin:/bin"})
    assert [r.difference() for r in ran] == [
        "exit status 1",
        "did not finish: the shell stopped, or ran out of time",
        "did not finish: the shell stopped, or ran out of time",
    ]


def test_an_example_with_an_unquoted_expansion_is_refused_and_none_runs(bash, tmp_path):
    examples = examples_of(
        "```sh\ntouch ran\n```\n\n```sh\ncurl -s $BASE$ARTICLE\n```\n", "g.md"
    )
    with pytest.raises(Unquoted) as refused:
        run(examples, cwd=tmp_path, env={"PATH": "/usr/bin:/bin"})
    assert str(refused.value).splitlines() == [
        f"g.md:6: $BASE {UNQUOTED}",
        f"g.md:6: $ARTICLE {UNQUOTED}",
    ]
    assert list(tmp_path.iterdir()) == []


def test_what_the_examples_print_is_bounded_and_the_commands_stopped(bash, tmp_path):
    # A hostile server's endless body grew refapi check until memory ran out: what
    # is read stops at MAX_PRINTED, and the command printing is stopped there.
    # (64 MiB here, so that the test itself stays bounded if the bound is lost.)
    examples = examples_of(
        "```sh\nhead -c 67108864 /dev/zero | tr '\\0' x\n```\n\n```sh\ntrue\n```\n",
        "g.md",
    )
    started = time.monotonic()
    ran = run(examples, cwd=tmp_path, env={"PATH": "/usr/bin:/bin"})
    assert ran[0].printed is None or len(ran[0].printed) <= MAX_PRINTED
    assert [r.printed for r in ran][1:] == [None]  # the shell stopped there
    assert time.monotonic() - started < 30


def test_an_interrupted_run_stops_its_commands_too(bash, tmp_path):
    # refapi check cleans up after a Ctrl-C: the examples' curls must stop first.
    # The command prints more than a pipe holds (64 KiB) before it starts sleep, so
    # the pid is written only once run() is reading its output: waiting for it, in
    # the try that stops the commands, where a Ctrl-C meets it.
    examples = examples_of(
        '```sh\nprintf "%0200000d" 0; sleep 90 & echo "$!" > pid; wait\n```\n', "g.md"
    )
    pid = tmp_path / "pid"
    main = threading.main_thread().ident
    assert main is not None
    started = time.monotonic()
    seen: list[str] = []  # what the interrupting thread did, and when

    def interrupt() -> None:  # once the command runs
        # Bounded by the command's sleep, not by a guess at how fast a loaded
        # machine starts it: two suites at once took over the 10 s this once had.
        if not wait_for(lambda: pid.exists() and pid.read_text().strip(), 80):
            seen.append(f"no pid after {time.monotonic() - started:.1f} s")
            return
        # To the main thread, as a terminal's Ctrl-C reaches refapi check's only
        # thread: a SIGINT sent to the process may be taken by this thread, and
        # then the main thread's wait for output is not interrupted (Python runs
        # the handler there, but only when it next runs), not until sleep ends.
        signal.pthread_kill(main, signal.SIGINT)
        seen.append(f"SIGINT sent at {time.monotonic() - started:.1f} s")

    # The process as refapi check's is: a Ctrl-C raises KeyboardInterrupt in its
    # main thread, whatever an earlier test in this worker process left.
    handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    mask = signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])
    try:
        threading.Thread(target=interrupt, daemon=True).start()
        try:
            run(examples, cwd=tmp_path, env={"PATH": "/usr/bin:/bin"}, timeout=85)
        except KeyboardInterrupt:
            pass
        else:
            pytest.fail(f"run() was not interrupted: {seen}")
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        signal.signal(signal.SIGINT, handler)
    until(lambda: dead(int(pid.read_text())))


def wait_for(done: Callable[[], object], seconds: float) -> bool:
    """Whether ``done`` came true within ``seconds`` (polled)."""
    deadline = time.monotonic() + seconds
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def dead(pid: int) -> bool:
    """Gone, or a zombie (killed, not yet reaped by its new parent)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] in ("Z", "X")
    except FileNotFoundError:
        return True


def until(done: Callable[[], object], seconds: float = 10) -> None:
    """Wait for ``done`` (a process dying is not instant under load)."""
    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline, "not done in time"
        time.sleep(0.01)


def test_an_example_that_takes_too_long_is_stopped(bash, tmp_path):
    examples = examples_of("```sh\necho started; sleep 30\n```\n", "g.md")
    (ran,) = run(examples, cwd=tmp_path, env={"PATH": "/usr/bin:/bin"}, timeout=0.5)
    assert ran.printed is None
