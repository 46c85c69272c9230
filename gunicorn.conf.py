"""gunicorn settings for `refapi serve` (and so `make run`); every value can be
overridden on the command line.

The app writes one line per request itself (docs/operating.md, "Logs"), so
gunicorn's own access log is off. With REFAPI_METRICS set, the master names a new,
empty folder for the workers' figures at each start, and forgets a dead worker's
health gauge (docs/operating.md, "Metrics").
At each start it also makes the folder of the host's slots for slow work
(docs/operating.md, "Slow work shares the host"): both as this file is first read,
before a --preload'ed app is made.
"""

import os

from refapi.serving import gunicorn as serving

# A reload (SIGHUP) reads this file again in the same master, and what it imports
# next, and every worker it starts, comes from the release installed now
# (docs/operating.md, "Upgrading").
_reloading = serving.reloading()

from refapi.app import prepare_for_workers  # noqa: E402
from refapi.serving import gunicorn as serving  # noqa: E402
from refapi.serving import prepare_folders  # noqa: E402
from refapi.startup import check_start  # noqa: E402

# The configuration, read once: one that cannot work ends the start here, in one
# line, before any worker boots (docs/operating.md, "When a start fails"). Not
# named `config`, which is a setting of gunicorn's.
# On a reload the settings are checked again, the database not, which while
# serving is the workers' to report (503, and health says so), never a reason to
# stop: gunicorn exits when this file fails (docs/operating.md, "When a start
# fails").
refapi_config = check_start(connect=not _reloading)
if not _reloading:  # the folders the workers share, before --preload makes the app
    prepare_folders()
# The app's modules, and the maps and validators every worker's app compiles alike,
# made here once for the workers to fork with (each still makes its own app): a
# worker 4.5 MiB lighter, and quicker to boot (docs/benchmarks.md, "Made once, in
# the master"). On a reload, those of the release installed now.
prepare_for_workers(refapi_config)

bind = refapi_config.bind  # REFAPI_BIND
# Sync workers, two per core (REFAPI_WORKERS): the best throughput measured by `make
# bench-workers` (docs/benchmarks.md, "The workers `make run` ships"); threaded
# workers were slower and had worse tails, and are refused (serving/gunicorn.py
# says why). This subclass answers the requests gunicorn refuses itself as the error
# object.
workers = refapi_config.workers
threads = refapi_config.threads
worker_class = "refapi.serving.gunicorn.SyncWorker"
timeout = refapi_config.worker_timeout
keepalive = 5
# What gunicorn reads before the app runs, bounded (gunicorn's defaults, written out
# because docs/operating.md, "What gunicorn refuses itself", documents them): a
# longer request line is 414, more fields or a longer one 431 (the request line
# holds the path and query: 4 KB is room enough).
limit_request_line = 4094  # bytes of the request line, without its CRLF
limit_request_fields = 100  # header fields
limit_request_field_size = 8190  # bytes of one field: name, colon, value and CRLF
# The control socket (`gunicornc -s data/gunicorn.ctl`) lives in the server's data
# folder (REFAPI_DATA_DIR), not at gunicorn's default shared by every gunicorn of the
# user, where another server, a test run's for one, would replace it and delete it
# when it stops. So `make run-gateway` (data/gateway) leaves `make run`'s alone.
control_socket = os.path.join(
    os.environ.get("REFAPI_DATA_DIR") or "data", "gunicorn.ctl"
)
# What a proxy in front says (X-Forwarded-*) is believed by the app alone, as far
# as REFAPI_TRUST_PROXY says (docs/operating.md, "A buffering proxy in front").
# gunicorn's defaults would believe any local client's X-Forwarded-Proto, and its
# SCRIPT_NAME and PATH_INFO header fields, on its own.
forwarded_allow_ips = ""
secure_scheme_headers: dict[str, str] = {}
forwarder_headers = ""
accesslog = None
errorlog = "-"


# The master's hooks (serving/gunicorn.py): the start's checks and the folders the
# workers share, made before any boots, and removed when the server stops.
when_ready = serving.when_ready
child_exit = serving.child_exit
on_exit = serving.on_exit


def on_starting(server):
    serving.on_starting(server, refapi_config)  # the configuration read above
