"""Serving: what runs the app on a server, one module a server. ``gunicorn.py``:
its worker, which answers the requests gunicorn refuses itself as the error object
and puts a deadline on each request, and the master's hooks, which
``gunicorn.conf.py`` hands to gunicorn.

It may import the configuration and the start's checks (``config``, ``startup``),
the error family, the logs, the metrics, the slots and the web helpers; never a
handler, the route table, the router, the app or the lab, which stand above it
(which is why the answer to a refusal is a web helper, ``web/refusals.py``: the
explainer shows it too, whichever server runs the app).
"""
