"""refapi as `make bench` serves it: the whole stack, configured by the environment.

Its request log (docs/operating.md, "Logs") is off unless ``BENCH_REQUEST_LOG=on``:
the bare baseline and the peers log nothing, so the main comparison leaves it out,
and a server of its own measures refapi with it on. Off is what a host that
configures logging itself can choose (the level of ``refapi.request``).
"""

from __future__ import annotations

import os

import common

from refapi import create_app

if os.environ.get("BENCH_REQUEST_LOG") != "on":
    common.request_log_off()

application = create_app()
