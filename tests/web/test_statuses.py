"""The project's table of status phrases (web/statuses.py)."""

from __future__ import annotations

from http import HTTPStatus

from refapi.web.statuses import PHRASES, STATUS_LINES


def test_the_table_has_every_code_python_knows_and_no_other():
    assert set(PHRASES) == {status.value for status in HTTPStatus}


def test_the_phrases_are_rfc_9110_s_whatever_the_python():
    # Python 3.11 words these as RFC 7231 did; 3.13 as RFC 9110 does.
    assert PHRASES[413] == "Content Too Large"
    assert PHRASES[414] == "URI Too Long"
    assert PHRASES[416] == "Range Not Satisfiable"
    assert PHRASES[422] == "Unprocessable Content"
    assert STATUS_LINES[413] == "413 Content Too Large"
