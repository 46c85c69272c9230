"""``python -m refapi.storage reset [--all]``: the name the reset had before the
``refapi`` command (cli.py), kept as an alias of it (docs/operating.md, "The refapi
command"), so there is one way to reset."""

import sys

from ..cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
