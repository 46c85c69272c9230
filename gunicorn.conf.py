"""gunicorn settings for `make run`; every value can be overridden on the command line.

The access log line ends with the request id the app put on the response, so one
grep finds a request in both the access log and the app's error log.
"""

import multiprocessing
import os

bind = os.environ.get("REFAPI_BIND", "127.0.0.1:8000")
# Sync workers, two per core: the best throughput measured by `make bench-workers`
# (README, "Benchmarks"); threaded workers were slower and had worse tails.
workers = int(os.environ.get("REFAPI_WORKERS", 2 * multiprocessing.cpu_count()))
worker_class = "sync"
timeout = int(os.environ.get("REFAPI_WORKER_TIMEOUT", "30"))
keepalive = 5
accesslog = "-"
errorlog = "-"
access_log_format = (
    '%(h)s "%(r)s" %(s)s %(b)s %(M)sms pid=%(p)s request_id=%({x-request-id}o)s'
)
