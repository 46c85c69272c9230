"""The project's ``gunicorn.conf.py`` as it is, plus a hook that says when each
worker is ready, for the end-to-end harness (``tests/e2e/harness.py``); and the
app's modules imported in the master.

gunicorn logs "Booting worker" as soon as it forks, before the worker has loaded
the application; ``post_worker_init`` runs in the worker once it has, right before
it starts accepting connections. It makes a file named after the worker's pid in
``$E2E_READY_DIR``.

The master imports ``refapi.app`` (what importing the app imports, and no more: no
app is built, no database opened), so each worker forks with the modules loaded
instead of importing them again: a four-worker boot costs a fifth less CPU, and
the suite boots some 150. Each worker still builds its own app, as in a production
start. A test about a production start's own timing, each worker importing the
app after its fork, sets ``E2E_IMPORT_PER_WORKER`` (docs/development.md, "Tests").
"""

import os
import runpy
from pathlib import Path

_PROJECT = runpy.run_path(str(Path(__file__).resolve().parents[2] / "gunicorn.conf.py"))
globals().update({name: value for name, value in _PROJECT.items() if name[:2] != "__"})

if not os.environ.get("E2E_IMPORT_PER_WORKER"):
    import refapi.app  # noqa: F401
    from refapi import routes, schemas
    from refapi.config import Config
    from refapi.lab import routes as lab_routes
    from refapi.router import served
    from refapi.router.route import url_map

    # What every worker's app would make first and shares once made (module-level
    # caches: the route tables' compiled maps, the body schemas' validators), made
    # here for the configuration the workers read: a four-worker boot 0.4 s less
    # CPU. A configuration that cannot work is the workers' to report.
    try:
        _config = Config.from_env()
    except ValueError:
        pass
    else:
        for _table in (served(t, _config) for t in (routes.ROUTES, lab_routes.ROUTES)):
            for _route in _table:
                if _route.schema:
                    schemas.load(_route.schema, vars(_config))
            url_map(_table)


def post_worker_init(worker) -> None:
    project_hook = _PROJECT.get("post_worker_init")
    if project_hook is not None:
        project_hook(worker)
    Path(os.environ["E2E_READY_DIR"], str(worker.pid)).touch()
