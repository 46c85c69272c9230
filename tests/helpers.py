"""Assertions shared by the in-process tests, the lock for what a test writes into
the checkout itself, and the certificates of a test's TLS servers."""

from __future__ import annotations

import contextlib
import copy
import fcntl
import hashlib
import os
import random
import runpy
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any
from unittest import mock
from wsgiref.validate import validator

import pytest
from jsonschema.protocols import Validator
from referencing import Registry
from referencing.jsonschema import DRAFT202012
from werkzeug.test import Client

from refapi import routes, schemas
from refapi.lab import routes as lab_routes
from refapi.schemas import authority
from refapi.serving import gunicorn as serving
from tests.conftest import skip_or_fail

JSON_TYPE = "application/json; charset=utf-8"
# Every row an instance serves with the lab on: the core's table and the lab's.
SERVED = (*routes.ROUTES, *lab_routes.ROUTES)
ROOT = Path(__file__).resolve().parents[1]


def refused_bodies(against_schema: bytes, limit: int) -> list[Any]:
    """A body of each kind the router refuses, as ``pytest.param``s of
    (Content-Type, body): one its schema refuses (``against_schema``), one that is
    no JSON, one of another media type, one over the row's ``limit`` bytes."""
    json_type = "application/json"
    return [
        pytest.param(json_type, against_schema, id="against-its-schema"),
        pytest.param(json_type, b"{", id="not-json"),
        pytest.param("text/plain", b"x", id="another-media-type"),
        pytest.param(json_type, b" " * (limit + 1), id="too-large"),
    ]


@contextlib.contextmanager
def building_in_the_checkout() -> Iterator[None]:
    """Held while a test builds in the checkout itself (setuptools' build/, make's
    dist/image/): the workers of a parallel run, and another run in the same
    checkout, take turns there instead of building over each other. A lock file per
    checkout in the system's temporary folder, never in the checkout."""
    name = hashlib.sha1(str(ROOT).encode()).hexdigest()[:12]
    path = Path(tempfile.gettempdir()) / f"refapi-tests-{name}-build.lock"
    with open(path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        yield


# What a server certificate says of itself: the names it serves (``{names}``,
# subjectAltName's syntax: "DNS:up.example" or "IP:127.0.0.1, DNS:localhost"), and
# that it is a server's, signed by the CA beside it.
LEAF_EXTENSIONS = """\
subjectAltName = {names}
basicConstraints = CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
"""


PORT_LOCKS = Path("/tmp/refapi-test-ports")


def held_port() -> tuple[int, IO[str]]:
    """A free port for a server that binds its own socket (Granian, PostgreSQL),
    and the open lock file that holds it for the server's life: closed, it frees
    the port. Under the kernel's ephemeral range, which no port-0 bind or outgoing
    connection is given, and asked of the lock files every suite on the machine
    asks first, so two suites at once never pick the same one."""
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    PORT_LOCKS.mkdir(exist_ok=True)
    ports = list(range(max(1024, low - 12000), low))
    random.shuffle(ports)
    for port in ports:
        lock = open(PORT_LOCKS / str(port), "w")  # noqa: SIM115  # the server holds it
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            with socket.socket() as probe:  # nothing else listens there
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                probe.bind(("127.0.0.1", port))
        except OSError:
            lock.close()
            continue
        return port, lock
    raise RuntimeError("no free port under the ephemeral range")


def gunicorn_settings() -> dict[str, Any]:
    """The project's ``gunicorn.conf.py`` read as gunicorn reads it at a start: its
    settings. Each time as a first read: a second read in a process is a reload,
    which forgets refapi's modules (serving/gunicorn.py, ``reloading``), and a
    test's process must keep them; the folders it names stay out of this
    process's environment."""
    with (
        mock.patch.dict(os.environ),
        mock.patch.object(serving, "_settings_read", False),
    ):
        return runpy.run_path(str(ROOT / "gunicorn.conf.py"))


def make_certificates(folder: Path, names: str) -> Path:
    """In ``folder``, a CA (``ca.pem``) and a server certificate it signed for
    ``names`` only (``leaf.pem``, its key ``leaf.key``), made with the ``openssl``
    command; a skip (a failure in CI) without it. Valid for two days."""
    if shutil.which("openssl") is None:
        skip_or_fail("the openssl command is not installed")

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=folder, check=True, capture_output=True)

    key = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    openssl("req", "-x509", *key, "-keyout", "ca.key", "-out", "ca.pem",
            "-days", "2", "-subj", "/CN=refapi test CA",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            "-addext", "subjectKeyIdentifier=hash")  # fmt: skip
    openssl("req", *key, "-keyout", "leaf.key", "-out", "leaf.csr",
            "-subj", "/CN=refapi test server")  # fmt: skip
    (folder / "leaf.ext").write_text(LEAF_EXTENSIONS.format(names=names))
    openssl("x509", "-req", "-in", "leaf.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", "leaf.pem", "-days", "2",
            "-extfile", "leaf.ext")  # fmt: skip
    return folder


def fresh_interpreter(script: str) -> str:
    """What ``script`` writes to standard error when a new Python runs it: for
    what a process imports, which this one, holding the whole suite's, cannot show."""
    run = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    return run.stderr


def assert_error(response, status: int, code: str) -> None:
    """The error object (docs/api.md, "Errors"), with the status and code expected."""
    assert response.status_int == status
    assert response.headers["Content-Type"] == JSON_TYPE
    assert response.json["code"] == code
    assert set(response.json) == {"code", "message", "details"}


def as_sent(app, path: str, headers: Mapping[str, str] | None = None, method="GET"):
    """``method path`` of a WebTest app's WSGI app, the answer as sent: WebTest
    decodes a gzip or deflate body itself and refuses br (the lab's coded bodies,
    docs/lab.md, "Bodies"), so Werkzeug's client reads it, through wsgiref's
    validator as WebTest's lint would."""
    client = Client(validator(app.app))
    return client.open(path, method=method, headers=dict(headers or {}), buffered=True)


def call(app, method, path, headers, **kwargs):
    """``method path`` with ``headers``; the answer whatever its status."""
    return app.request(
        path, method=method, headers=headers, expect_errors=True, **kwargs
    )


def send_accepting(app, method: str, path: str, accept: str):
    """``method path`` with ``Accept: accept``, and a small article body when the
    method takes one; the answer whatever its status."""
    body = b'{"title": "T"}' if method in ("POST", "PATCH") else b""
    return app.request(
        path,
        method=method,
        headers={"Accept": accept},
        body=body,
        content_type="application/json" if body else None,
        expect_errors=True,
    )


def varies_on(response) -> set[str]:
    """The request headers named by every ``Vary`` field of the response."""
    fields = ",".join(response.headers.getall("Vary"))
    return {name.strip().lower() for name in fields.split(",") if name.strip()}


def response_validator(name: str, options: Mapping[str, Any]) -> Validator:
    """A validator of ``schemas/<name>.json`` as the service's own validator reads
    it (configured enums filled in from ``options``, a ``Config``'s fields), with its
    references to the folder's other documents (``{"$ref": "article.json"}``)
    resolved. Numbers to check should be read as ``Decimal``, as bodies are."""
    folder = Path(schemas.__file__).parent
    registry: Registry = Registry().with_resources(
        (path.name, DRAFT202012.create_resource(schemas.configured(path.stem, options)))
        for path in folder.glob("*.json")
    )
    return authority.Validator(schemas.configured(name, options), registry=registry)


class FreshStartAfter:
    """The store under test, with a fresh start (``refapi reset --all``) run through
    ``resetting``, another store on the same database, right after each call of
    its method ``name``: a race of that read with a fresh start, every time."""

    def __init__(self, name: str, store, resetting) -> None:
        self._name, self._store, self._resetting = name, store, resetting

    def __getattr__(self, name: str):
        found = getattr(self._store, name)
        if name != self._name:
            return found

        def then_reset(*args, **kwargs):
            result = found(*args, **kwargs)
            self._resetting.reset(everything=True)
            return result

        return then_reset


def operations_inline(document: dict) -> dict:
    """The OpenAPI ``document`` with each operation's shared responses and
    parameters (components it refers to, openapi/shared.py) written out in place,
    as an operation's reader sees them; the rest, header and schema references
    included, as served."""
    shared = {
        "#/components/" + kind + "/" + name: value
        for kind in ("responses", "parameters")
        for name, value in document["components"].get(kind, {}).items()
    }

    def inline(value: Any) -> Any:
        if isinstance(value, dict) and value.get("$ref") in shared:
            return copy.deepcopy(shared[value["$ref"]])
        return value

    written = copy.deepcopy(document)
    for item in written["paths"].values():
        for operation in item.values():
            answers = operation["responses"]
            operation["responses"] = {k: inline(v) for k, v in answers.items()}
            if "parameters" in operation:
                operation["parameters"] = list(map(inline, operation["parameters"]))
    return written
