"""The project's ``gunicorn.conf.py`` as it is, plus a hook that says when each
worker is ready, for the end-to-end harness (``tests/e2e/harness.py``).

gunicorn logs "Booting worker" as soon as it forks, before the worker has loaded
the application; ``post_worker_init`` runs in the worker once it has, right before
it starts accepting connections. It makes a file named after the worker's pid in
``$E2E_READY_DIR``. The master imports the app's modules and makes what every
worker's app shares as the project's settings do (``refapi.app``,
``prepare_for_workers``), so each worker forks with them and builds its own app,
as in production.
"""

import os
import runpy
from pathlib import Path

_PROJECT = runpy.run_path(str(Path(__file__).resolve().parents[2] / "gunicorn.conf.py"))
globals().update({name: value for name, value in _PROJECT.items() if name[:2] != "__"})


def post_worker_init(worker) -> None:
    project_hook = _PROJECT.get("post_worker_init")
    if project_hook is not None:
        project_hook(worker)
    Path(os.environ["E2E_READY_DIR"], str(worker.pid)).touch()
