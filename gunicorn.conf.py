"""gunicorn settings for `refapi serve` (and so `make run`); every value can be
overridden on the command line.

The app writes one line per request itself (docs/operating.md, "Logs"), so
gunicorn's own access log is off. With REFAPI_METRICS set, the master names a new,
empty folder for prometheus-client's multiprocess files at each start, before any
worker imports it, and forgets a dead worker's gauges (docs/operating.md, "Metrics").
"""

import multiprocessing
import os

bind = os.environ.get("REFAPI_BIND", "127.0.0.1:8000")
# Sync workers, two per core: the best throughput measured by `make bench-workers`
# (docs/benchmarks.md, "The workers `make run` ships"); threaded workers were
# slower and had worse tails. This subclass answers the requests gunicorn refuses
# itself as the error object.
workers = int(os.environ.get("REFAPI_WORKERS", 2 * multiprocessing.cpu_count()))
worker_class = "refapi.web.gunicorn.SyncWorker"
timeout = int(os.environ.get("REFAPI_WORKER_TIMEOUT", "30"))
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
# as REFAPI_TRUST_PROXY says (docs/operating.md, "Behind a proxy"). gunicorn's
# defaults would believe any local client's X-Forwarded-Proto, and its SCRIPT_NAME
# and PATH_INFO header fields, on its own.
forwarded_allow_ips = ""
secure_scheme_headers: dict[str, str] = {}
forwarder_headers = ""
accesslog = None
errorlog = "-"


def on_starting(server):
    # A configuration that cannot work ends the start here, in one line, before
    # it listens or any worker boots (docs/operating.md, "When a start fails").
    from refapi.startup import check_serving, check_start

    config = check_start()
    # Addresses to bind, unless sockets are handed over (systemd's, or the old
    # master's to the new one on a USR2 upgrade, which still listens on them).
    handed = {"LISTEN_FDS", "GUNICORN_FD"} & set(os.environ)
    bound = server.LISTENERS or handed or server.cfg.reuse_port
    check_serving(config, () if bound else server.cfg.address)
    if os.environ.get("REFAPI_METRICS"):
        from refapi import metrics

        server.log.info("metrics: figures in %s", metrics.prepare_folder())


def when_ready(server):
    """Say where to look: the first start is someone's first contact (README)."""
    from refapi.config import Config
    from refapi.startup import start_lines

    listeners = [str(listener) for listener in server.LISTENERS]
    for line in start_lines(listeners, {"": Config.from_env()}):
        server.log.info(line)


def child_exit(server, worker):
    if os.environ.get("REFAPI_METRICS"):
        from refapi import metrics

        metrics.worker_exited(worker.pid)


def on_exit(server):
    if os.environ.get("REFAPI_METRICS"):
        from refapi import metrics

        metrics.remove_folder()
