"""The gunicorn settings every benchmarked server gets, refapi included."""

import os

bind = os.environ["BENCH_BIND"]
workers = int(os.environ.get("BENCH_WORKERS", "2"))
worker_class = "sync"
backlog = 2048
accesslog = None
errorlog = "-"
loglevel = "warning"
