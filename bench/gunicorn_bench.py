"""The gunicorn settings every benchmarked server gets, refapi included."""

import os

bind = os.environ["BENCH_BIND"]
workers = int(os.environ.get("BENCH_WORKERS", "2"))
worker_class = os.environ.get("BENCH_WORKER_CLASS", "sync")
threads = int(os.environ.get("BENCH_THREADS", "1"))
backlog = 2048
accesslog = None
errorlog = "-"
loglevel = "warning"
# Every benchmarked server is a gunicorn of its own: none takes the user's default
# control socket (~/.gunicorn), which they would race to make.
control_socket_disable = True
