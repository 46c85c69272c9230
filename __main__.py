"""``python -m refapi``: the ``refapi`` command (cli.py), for when its script is not
on the PATH."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
