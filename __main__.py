"""``python -m refapi reset``: put the configured database back to the seed.

Accounts and credentials stay. The reset epoch moves on, so every cursor issued
before the reset is refused (``400 INVALID_CURSOR``) by every worker at once.
"""

from __future__ import annotations

import sys

from .config import shown_url
from .startup import check_start
from .storage import StorageUnavailable


def main(argv: list[str]) -> int:
    if argv != ["reset"]:
        print("usage: python -m refapi reset", file=sys.stderr)
        return 2
    config = check_start()  # a configuration that cannot work: one line, exit 1
    try:
        store = config.open_store()
        try:
            store.reset()
        finally:
            store.close()
    except StorageUnavailable as exc:
        print(f"refapi: cannot reset now: {exc}", file=sys.stderr)
        return 1
    print(f"reset {shown_url(config.database_url)} to the seed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
