"""refapi: the reference REST API service, a minimalist WSGI application.

``create_app(config)`` builds an instance; importing this package has no side
effects (nothing is read, created or connected until ``create_app`` runs), so a host
can embed it and gunicorn can serve ``'refapi:create_app()'``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["App", "Config", "__version__", "create_app"]

if TYPE_CHECKING:
    from .app import App, create_app
    from .config import VERSION as __version__
    from .config import Config


def __getattr__(name: str) -> Any:
    # The package's face is resolved on first use (PEP 562): a test runner that
    # imports this file by its folder's name (pytest does, for the root package,
    # and the folder may be named anything, "ci-123" included) runs no relative
    # import and loads nothing of the project with it.
    if name in ("App", "create_app"):
        from . import app

        return getattr(app, name)
    if name in ("Config", "__version__"):
        from . import config

        return config.Config if name == "Config" else config.VERSION
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
