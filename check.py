"""``refapi check URL``: the documented examples, run against a running deployment
(docs/operating.md, "Checking a deployment").

The examples are those of the README and the guides, shipped in the package, that
are marked for it (doc_examples.py has the format): ``portable`` ones read and run
by default; ``writes`` ones, with ``--writes``, register users, whose emails
(``name@example.com``) and the one password they use are replaced by random ones,
and every user so made is deleted at the end; ``admin`` ones, only with an admin's
Bearer token in ``REFAPI_CHECK_TOKEN``, which they find in ``$ADMIN``. They run
through bash and curl with ``$BASE`` set to the URL, each file's in one bash, in an
empty folder: nothing local is read, no credential but the one given.

Each example's status, the headers it shows and its body are compared as
``make test`` compares them; one line an example, then the differences, and exit 1
if there is any, so a deployment's CI can run it.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import tempfile
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import replace
from importlib import resources
from pathlib import Path

from . import doc_examples

PASSWORD = "correct-horse-battery-9"  # the one password the writes examples use
EMAIL = re.compile(r"\b([a-z]+)@example\.com\b")
TOOLS = ("bash", "curl", "python3")  # python3: a few examples read JSON with it


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


def call(method: str, url: str, body: object = None, token: str = "") -> tuple:
    """One request: its status and its JSON body (None when it has none)."""
    request = urllib.request.Request(url, method=method)
    if body is not None:
        request.add_header("Content-Type", "application/json")
        request.data = json.dumps(body).encode()
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:  # noqa: S310
            status, data = answer.status, answer.read()
    except urllib.error.HTTPError as refused:
        status, data = refused.code, refused.read()
    return status, json.loads(data) if data else None


def delete_users(base: str, names: Names) -> list[str]:
    """Log in as each user the run registered and delete it; what failed."""
    failed = []
    for email in names.emails.values():
        body = {"email": email, "password": names.password}
        status, login = call("POST", f"{base}/api/login", body)
        if status == 401:
            continue  # never registered: its example did not run, or differed
        if status != 200:
            failed.append(f"{email}: the login answered {status}")
            continue
        user, token = login["user"]["id"], login["token"]
        status, _ = call("DELETE", f"{base}/api/users/{user}", token=token)
        if status != 204:
            failed.append(f"{email}: DELETE answered {status}")
    return failed


def check(
    base: str,
    *,
    writes: bool = False,
    token: str = "",
    texts: Mapping[str, str] | None = None,
) -> int:
    """Run the chosen examples against ``base``; print a line each; 0 or 1."""
    base = base.rstrip("/")
    names = Names()
    different: list[str] = []
    with tempfile.TemporaryDirectory(prefix="refapi-check-") as folder:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": folder}
        env |= {"BASE": base, "ADMIN": token}
        for name, text in (documents() if texts is None else texts).items():
            examples = [
                replace(example, commands=names(example.commands),
                        output=names(example.output))
                for example in doc_examples.examples_of(text, name)
                if chosen(example.marks, writes=writes, admin=bool(token))
            ]  # fmt: skip
            for ran in doc_examples.run(examples, cwd=Path(folder), env=env):
                said = ran.difference()
                print(f"{'differs' if said else 'ok':8}{ran.example.name}", flush=True)
                if said:
                    different.append(f"{ran.example.name}:\n{said}")
    for failure in delete_users(base, names):
        different.append(f"deleting a user the check made: {failure}")
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
