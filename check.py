"""``refapi check URL``: the documented examples, run against a running deployment
(docs/operating.md, "Checking a deployment").

The examples are those of the README and the guides, shipped in the package, that
are marked for it (doc_examples.py has the format): ``portable`` ones read and run
by default; ``writes`` ones, with ``--writes``, register a user, whose email
(``name@example.com``) and the one password they use are replaced by random ones,
and every user so made is deleted at the end; ``admin`` ones, only with an admin's
Bearer token in ``REFAPI_CHECK_TOKEN``, which they find in ``$ADMIN``. They run
through bash and curl with ``$BASE`` set to the URL, each file's in one bash.

It is safe to point at any server, a hostile one too: every expansion in the
examples is quoted (doc_examples.py refuses one that is not), so what a server
sends stays one word; bash runs without globbing, in an empty folder of the
check's own, with nothing of the caller's environment but ``PATH``; and a
``.curlrc`` of that folder keeps every curl to the URL's origin (its scheme only,
no redirect followed, no proxy, every connection to its host and port), so no
other host hears a request, the token least of all. Nothing local is read.
What it prints of a server's text is made printable (``printable``): control
characters escaped, at most ``MAX_SHOWN`` characters of it a difference or a line.
Each request of its own (``call``: the first, and the clean-up's) is done in
``DEADLINE`` seconds, its answer's head and body read however slowly they come.

Each example's status, the headers it shows and its body are compared as
``make test`` compares them; one line an example, then the differences, and exit 1
if there is any, so a deployment's CI can run it; exit 2 when it cannot run.
"""

from __future__ import annotations

import functools
import http.client
import io
import json
import os
import re
import secrets
import shutil
import socket
import tempfile
import time
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from . import doc_examples

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

PASSWORD = "correct-horse-battery-9"  # the one password the writes examples use
EMAIL = re.compile(r"\b([a-z]+)@example\.com\b")
TOOLS = ("bash", "curl", "python3")  # python3: a few examples read JSON with it
HOST = re.compile(r"[A-Za-z0-9.-]+|[0-9A-Fa-f:.]+")  # a name, IPv4 or IPv6
PATIENCE = 30.0  # seconds the clean-up waits out a 429 (the "auth" bucket's)
MAX_BODY = 1 << 20  # what the check reads of an answer of its own requests
# Seconds each request of the check's own takes at most, head and body: its first,
# GET URL/, and the clean-up's (docs/operating.md, "Checking a deployment").
DEADLINE = 10.0
# A Retry-After the clean-up may wait out: delay-seconds (RFC 9110, section 10.2.3),
# ASCII digits only (int() reads "²" too, and refuses 5000 of them).
DELAY = re.compile(r"[0-9]{1,4}")
# The most it prints of what a server made one example or request say (the docs'
# longest output is under 1 KiB): 36 examples' worth stays a terminal's reading
# (docs/operating.md, "Checking a deployment").
MAX_SHOWN = 8192
# What a request of the check's own may fail with: refused, no such host, timed
# out, TLS, or an answer that is not HTTP.
FAILED = (OSError, http.client.HTTPException)
CURLRC = """\
# Written by refapi check (docs/operating.md, "Checking a deployment"): every curl
# of the examples reaches {origin} alone: its scheme only, no redirect
# followed, no proxy, each connection made to its host and port, whatever host a
# URL names; and none takes over 15 s or 1 MiB of a body it is told the size of.
max-time = 15
max-filesize = 1048576
proto = "={scheme}"
proto-redir = "={scheme}"
max-redirs = 0
noproxy = "*"
connect-to = "::{host}:{port}"
"""


# No globbing; and each command of the examples holds at most 512 MiB: a server's
# endless body piped into an example's python3 (json.load) grew it by gigabytes in
# curl's 15 s, as curl 7.88 bounds no body of a size it is not told.
PRELUDE = "set -f\nulimit -v 524288\n"


@dataclass(frozen=True)
class Origin:
    """Where the check's requests may go: a URL's scheme, host and port."""

    scheme: str
    host: str  # an IPv6 address in brackets, as a URL and curl write it
    port: int

    @classmethod
    def of(cls, url: str) -> Origin:
        """http(s)://host[:port][/path], nothing else (ValueError)."""
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname or ""
        if (
            parts.scheme not in ("http", "https")
            or not HOST.fullmatch(host)
            or "@" in parts.netloc
            or parts.query
            or parts.fragment
            or any(char.isspace() or not char.isprintable() for char in url)
        ):
            raise ValueError(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        return cls(parts.scheme, f"[{host}]" if ":" in host else host, port)

    def curlrc(self) -> str:
        origin = f"{self.scheme}://{self.host}:{self.port}"
        return CURLRC.format(origin=origin, **vars(self))


def printable(text: str, *, lines: bool = False) -> str:
    """What a server sent, as a terminal shows it harmlessly: each character that
    is not printable (ESC, BEL, CR, C1...) escaped as Python writes it (``\\x1b``),
    but newline and tab when ``lines``, and at most ``MAX_SHOWN`` of them."""
    kept = "\n\t" if lines else ""
    shown = "".join(
        char if char.isprintable() or char in kept else repr(char)[1:-1]
        for char in text[:MAX_SHOWN]
    )
    cut = len(text) - MAX_SHOWN
    return f"{shown}... ({cut} more characters not shown)" if cut > 0 else shown


def documents() -> dict[str, str]:
    """The README and the guides, as the package ships them."""
    root = resources.files("refapi")
    docs = sorted(f"docs/{item.name}" for item in root.joinpath("docs").iterdir())
    names = ["README.md", *(name for name in docs if name.endswith(".md"))]
    return {name: root.joinpath(name).read_text(encoding="utf-8") for name in names}


def chosen(marks: frozenset[str], *, writes: bool, admin: bool) -> bool:
    """Whether an example of these marks runs (an unmarked one never does)."""
    if not marks & {"portable", "writes", "admin"}:
        return False
    return (writes or "writes" not in marks) and (admin or "admin" not in marks)


class Names:
    """Random emails and a random password in place of the documented ones."""

    def __init__(self) -> None:
        self.password = f"check-{secrets.token_hex(12)}"
        self.emails: dict[str, str] = {}

    def __call__(self, text: str) -> str:
        text = EMAIL.sub(self.email, text)
        return text.replace(PASSWORD, self.password)

    def email(self, found: re.Match[str]) -> str:
        name = found.group(1)
        fresh = f"{name}-{secrets.token_hex(6)}@example.com"
        return self.emails.setdefault(name, fresh)


class _Paced(io.RawIOBase):
    """An answer's socket, each read given what is left of its request's time: a
    socket's timeout bounds one read, and a server sending a byte a second makes
    each read short, and the answer hours long."""

    def __init__(self, sock: socket.socket, raw: io.RawIOBase, deadline: float):
        super().__init__()
        self.sock, self.raw, self.deadline = sock, raw, deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: WriteableBuffer) -> int | None:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("timed out")
        self.sock.settimeout(left)
        return self.raw.readinto(buffer)

    def close(self) -> None:
        self.raw.close()  # the socket's file: the socket closes with the last
        super().close()


class _Answer(http.client.HTTPResponse):
    """An answer read, its head too, by its request's ``deadline``."""

    def __init__(self, sock: socket.socket, *, method: str, deadline: float):
        super().__init__(sock, method=method)
        self.fp = io.BufferedReader(_Paced(sock, self.fp.detach(), deadline))


def call(
    method: str, url: str, body: object = None, token: str = "", patience: float = 0
) -> tuple:
    """One request, done in ``DEADLINE`` seconds or TimeoutError: its status and
    its JSON body (None when it has none Python reads). A 429 is waited out while
    its Retry-After fits in ``patience`` seconds. http.client follows no redirect
    and takes no proxy: the request goes where its URL says, as the curls do."""
    parts = urllib.parse.urlsplit(url)
    kind = (
        http.client.HTTPSConnection if parts.scheme == "https"
        else http.client.HTTPConnection
    )  # fmt: skip
    deadline = time.monotonic() + DEADLINE
    connection = kind(parts.netloc, timeout=DEADLINE)  # connecting, sending
    # Its answer, head and body, by the deadline (a class's stand-in, for mypy).
    connection.response_class = functools.partial(_Answer, deadline=deadline)  # type: ignore[assignment]
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    data = None
    if body is not None:
        headers["Content-Type"] = "application/json"
        data = json.dumps(body).encode()
    try:
        target = parts._replace(scheme="", netloc="").geturl() or "/"
        connection.request(method, target, data, headers)
        with connection.getresponse() as answer:
            status, data = answer.status, answer.read(MAX_BODY)
            wait = answer.getheader("Retry-After", "")
    finally:
        connection.close()
    if status == 429 and DELAY.fullmatch(wait) and int(wait) <= patience:
        time.sleep(int(wait))
        # A second at least: a server's "0" asks again a few times, not forever.
        return call(method, url, body, token, patience - max(int(wait), 1))
    try:
        return status, json.loads(data) if data else None
    except (ValueError, RecursionError):  # nested deeper than Python's limit
        return status, None


def unreachable(base: str) -> str:
    """Why nothing at ``base`` answers HTTP, or '' when something does."""
    try:
        call("GET", f"{base}/")
    except OSError as failed:  # refused, no such host, timed out, TLS
        return str(failed.strerror or failed)
    except http.client.HTTPException as failed:  # an answer, but not HTTP
        return f"not HTTP ({type(failed).__name__}: {str(failed)[:80]!r})"
    return ""


def delete_users(base: str, names: Names) -> list[str]:
    """Log in as each user the run registered and delete it; what failed, a line
    each, whatever it was."""
    failed = []
    for email in names.emails.values():
        body = {"email": email, "password": names.password}
        try:
            failed += delete_user(base, email, body)
        except FAILED as error:
            reason = getattr(error, "strerror", None) or error
            failed.append(f"{email}: {printable(str(reason))}")
        except Exception as error:  # any other: the run's differences outlive it
            failed.append(f"{email}: {type(error).__name__}: {printable(str(error))}")
    return failed


def delete_user(base: str, email: str, body: dict[str, str]) -> list[str]:
    """Log in as one user and delete it: [] or what failed."""
    status, login = call("POST", f"{base}/api/login", body, patience=PATIENCE)
    if status == 401:
        return []  # never registered: its example did not run, or differed
    try:
        user, token = str(login["user"]["id"]), str(login["token"])
    except (KeyError, TypeError):
        return [f"{email}: the login answered {status}"]
    url = f"{base}/api/users/{urllib.parse.quote(user, safe='')}"
    status, _ = call("DELETE", url, token=token)
    return [] if status == 204 else [f"{email}: DELETE answered {status}"]


def shell_environment(folder: Path, base: str, token: str) -> dict[str, str]:
    """The examples' environment: ``PATH``'s absolute folders, ``HOME`` the
    check's own with the ``.curlrc`` that keeps curl to ``base``'s origin."""
    home = folder / "home"
    home.mkdir()
    (home / ".curlrc").write_text(Origin.of(base).curlrc())
    path = os.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep)
    return {
        "PATH": os.pathsep.join(entry for entry in path if os.path.isabs(entry)),
        "HOME": str(home),
        "CURL_HOME": str(home),
        "BASE": base,
        "ADMIN": token,
    }


def cannot_run(url: str, examples: list[doc_examples.Example]) -> str:
    """Why the check cannot start (exit 2), or ''; ``url`` as it was given."""
    try:
        Origin.of(url)
    except ValueError:
        return (
            f"{printable(url)} is not a URL it can check: http(s)://host[:port][/path]"
        )
    try:
        doc_examples.refuse_unquoted(examples)
    except doc_examples.Unquoted as refused:
        return f"an example is not safe to run, none was:\n{refused}"
    if reason := unreachable(url.rstrip("/")):
        return f"cannot reach {url}: {printable(reason)}"
    return ""


def run_all(
    files: Mapping[str, list], env: Mapping[str, str], work: Path, different: list
) -> None:
    """Each file's examples in a bash of its own, without globbing, a line an
    example; each difference added to ``different`` as it is found, so none is
    lost to an interruption."""
    for examples in files.values():
        for ran in doc_examples.run(examples, cwd=work, env=env, prelude=PRELUDE):
            said = ran.difference()
            print(f"{'differs' if said else 'ok':8}{ran.example.name}", flush=True)
            if said:
                different.append(f"{ran.example.name}:\n{printable(said, lines=True)}")


def check(
    base: str,
    *,
    writes: bool = False,
    token: str = "",
    texts: Mapping[str, str] | None = None,
) -> int:
    """Run the chosen examples against ``base``; print a line each; 0, 1 or 2."""
    names = Names()
    files = {
        name: [
            replace(example, commands=names(example.commands),
                    output=names(example.output))
            for example in doc_examples.examples_of(text, name)
            if chosen(example.marks, writes=writes, admin=bool(token))
        ]
        for name, text in (documents() if texts is None else texts).items()
    }  # fmt: skip
    every = [example for examples in files.values() for example in examples]
    if reason := cannot_run(base, every):
        print(f"refapi check: {reason}")
        return 2
    base = base.rstrip("/")
    different: list[str] = []
    try:
        with tempfile.TemporaryDirectory(prefix="refapi-check-") as folder:
            env = shell_environment(Path(folder), base, token)
            work = Path(folder, "work")
            work.mkdir()  # the examples' working folder: empty
            try:
                run_all(files, env, work, different)
            finally:  # even when interrupted: no user left behind
                different += [
                    f"deleting a user the check made: {failure}"
                    for failure in delete_users(base, names)
                ]
    finally:  # even when interrupted (Ctrl-C), every difference found is said
        for said in different:
            print(f"\n{said}")
    return 1 if different else 0


def main(url: str, *, writes: bool) -> int:
    """``refapi check``: 2 if a tool the examples type is missing."""
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        print(f"refapi check: the examples need {', '.join(missing)}")
        return 2
    return check(url, writes=writes, token=os.environ.get("REFAPI_CHECK_TOKEN", ""))
