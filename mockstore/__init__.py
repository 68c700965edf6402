"""mockstore: a high-fidelity mock server of the Pet Store service.

``import mockstore`` stays cheap (pytest imports it through the plugin entry point in
every run, used or not): the public names below are loaded on first use.

- ``mockstore.MockServer``: a real server in a background thread, for any Python code.
- ``mockstore.Control`` / ``mockstore.AsyncControl``: the typed control API clients
  (``ControlError``, ``VerificationError``; answers in ``mockstore.clients.types``).
- ``mockstore.create_app()``: the ASGI app, for in-process use with ``httpx.ASGITransport``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    __version__: str
    from mockstore.app import create_app
    from mockstore.clients.async_control import AsyncControl
    from mockstore.clients.control import Control
    from mockstore.clients.types import ControlError, VerificationError
    from mockstore.server import MockServer

__all__ = [
    "AsyncControl",
    "Control",
    "ControlError",
    "MockServer",
    "VerificationError",
    "__version__",
    "create_app",
]

_LAZY = {
    "__version__": "mockstore.version",
    "AsyncControl": "mockstore.clients.async_control",
    "Control": "mockstore.clients.control",
    "ControlError": "mockstore.clients.types",
    "MockServer": "mockstore.server",
    "VerificationError": "mockstore.clients.types",
    "create_app": "mockstore.app",
}


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'mockstore' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
