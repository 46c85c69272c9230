"""The CSV catalogue over gunicorn: an attachment whose every row names a route."""

from __future__ import annotations

import csv
import io

import pytest

from tests.helpers import SERVED

pytestmark = pytest.mark.e2e


def test_the_catalogue_downloads_over_http(server, pool):
    response = pool.request("GET", server.url("/api/download_csv.php"))
    assert response.status == 200
    assert response.headers["Content-Type"] == "text/csv; charset=utf-8"
    assert response.headers["Content-Disposition"] == (
        'attachment; filename="endpoints.csv"'
    )
    rows = list(csv.reader(io.StringIO(response.data.decode(), newline="")))
    assert rows[0] == [
        "name", "endpoint", "method",
        "required parameters", "optional parameters", "sample response",
    ]  # fmt: skip
    listed = [(r.method, r.path) for r in SERVED if r.catalogued]
    assert [(row[2], row[1]) for row in rows[1:]] == listed
