"""The report card over real servers (lab/grade; docs/lab.md, "A report card for
clients"), on gunicorn and on Granian, the second origin the server itself by
another name (``localhost`` beside ``127.0.0.1``): requests, driven as
examples/grade_requests.py does each task, passes every check; refapi's own client
(examples/grade_refapi_client.py) passes every check that applies to it and fails
none; the download's connection really drops part way, on both servers, and the
server's log says nothing of it but the request's line."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
import requests

from examples import grade_refapi_client, grade_requests
from tests.e2e.conftest import shared
from tests.e2e.harness import SERVERS, GunicornServer

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module", params=SERVERS)
def grade_host(request, tmp_path_factory, shared_servers) -> Iterator[GunicornServer]:
    yield from shared(
        tmp_path_factory, shared_servers, workers=2, server=request.param,
        env={"REFAPI_LAB_GRADE_ORIGIN": "http://localhost:{port}"},
    )  # fmt: skip


def _statuses(checks: list[dict[str, str]]) -> dict[str, str]:
    return {check["check"]: check["status"] for check in checks}


def test_requests_doing_each_task_as_a_careful_client_passes_every_check(grade_host):
    checks = grade_requests.run_card(grade_host.base_url)
    assert _statuses(checks) == dict.fromkeys(grade_requests.DO, "passed"), checks
    did = {check["check"]: check["did"] for check in checks}
    assert did["cross-origin-authorization"] == (
        "dropped Authorization on the redirect to the other origin"
    )
    assert did["redirect-limit"] == "stopped after 30 redirects"


def test_refapi_s_client_passes_every_check_that_applies_to_it(grade_host):
    statuses = _statuses(grade_refapi_client.run_card(grade_host.base_url))
    assert "failed" not in statuses.values(), statuses
    passed = {name for name, status in statuses.items() if status == "passed"}
    assert passed == {"retry-after-429", "retry-after-503", "accept"}


def test_the_download_s_connection_drops_part_way_and_the_log_stays_quiet(grade_host):
    base = grade_host.base_url
    run = requests.post(f"{base}/lab/grade", timeout=10).json()
    url = f"{run['score']}/download"
    host, port = grade_host.base_url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(f"GET {url.removeprefix(base)} HTTP/1.1\r\nHost: {host}\r\n\r\n"
                     .encode())  # fmt: skip
        got = b""
        while chunk := sock.recv(65536):
            got += chunk  # until the server closes the connection
    head, _, body = got.partition(b"\r\n\r\n")
    assert b"content-length: 8192" in head.lower()
    assert 0 < len(body) <= 4096  # the first part, and then the end
    rest = requests.get(url, headers={"Range": f"bytes={len(body)}-"}, timeout=10)
    assert rest.status_code == 206
    assert len(body) + len(rest.content) == 8192
    assert grade_host.log_failures() == []
    assert "CutShort" not in grade_host.log()
