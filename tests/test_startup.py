"""Start-up: the first admin, made by a start that finds none (startup.py)."""

from __future__ import annotations

import logging

from refapi import create_app
from refapi.config import Config
from tests.conftest import TEST_AUTH


def test_a_data_folder_that_cannot_be_written_leaves_no_admin_and_says_why(
    tmp_path, database_url, store, clock, caplog
):
    blocked = tmp_path / "data"
    blocked.write_text("a file where the data folder should be")
    config = Config(
        database_url=database_url,
        secret_key=b"k",
        password_hash=TEST_AUTH["password_hash"],
        data_dir=str(blocked),
    )
    with caplog.at_level(logging.WARNING, logger="refapi"):
        create_app(config, store=store, clock=clock)
    assert not store.has_admin()
    [error] = [r for r in caplog.records if r.levelno == logging.ERROR]
    message = error.getMessage()
    assert str(blocked / "admin-password.txt") in message
    assert "REFAPI_ADMIN_EMAIL" in message
    assert list(tmp_path.glob("**/.admin-password.txt.*")) == []
