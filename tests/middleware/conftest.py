"""Fixtures that only the middleware tests use."""

from __future__ import annotations

import pytest

from tests.conftest import ADMIN, bearer


@pytest.fixture
def token(make_app) -> dict[str, str]:
    """The first admin's Bearer token, from a login through the whole app."""
    return bearer(make_app(anonymous=True), ADMIN["email"], ADMIN["password"])
