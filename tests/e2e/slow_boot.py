"""An app for the harness's own test: every worker but the first to load it takes
``SLOW_BOOT_SECONDS`` longer, as a worker forked last on a busy machine does."""

from __future__ import annotations

import os
import time

from refapi import create_app as create_refapi
from refapi.app import App

SLOW_BOOT_SECONDS = 2.0


def create_app() -> App:
    try:
        # O_EXCL: exactly one worker makes the marker (its path is the test's).
        os.close(os.open(os.environ["SLOW_BOOT_MARKER"], os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        time.sleep(SLOW_BOOT_SECONDS)
    return create_refapi()
