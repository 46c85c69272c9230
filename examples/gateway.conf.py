"""gunicorn settings for the gateway (``make run-gateway``): the project's own
(``gunicorn.conf.py``), but its start lines name the gateway's URLs, ``/prod/docs``
and ``/dev/docs``, and each instance's first admin's password file, in the folder
of its own under ``REFAPI_DATA_DIR`` (``examples/gateway.py``)."""

import runpy
from pathlib import Path

_PROJECT = runpy.run_path(str(Path(__file__).resolve().parents[1] / "gunicorn.conf.py"))
globals().update({name: value for name, value in _PROJECT.items() if name[:2] != "__"})


def when_ready(server):
    from examples.gateway import instance_configs
    from refapi.config import Config
    from refapi.serving import prepare_databases
    from refapi.startup import start_lines

    configs = instance_configs(Config.from_env())
    prepare_databases(configs.values())  # before the first worker boots
    listeners = [str(listener) for listener in server.LISTENERS]
    for line in start_lines(listeners, configs):
        server.log.info(line)
