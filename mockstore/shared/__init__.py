"""The mock's state in Redis, so several processes or replicas behave as one mock.

``mockstore serve --state redis://HOST:PORT/DB`` (``MOCKSTORE_STATE``, and
``MockServer(state=...)``): see ``backend`` for what is kept where, and
``scripts`` for the atomic steps. Needs the ``redis`` extra
(``pip install 'mockstore[redis]'``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mockstore.shared.backend import SharedState, StateUnavailable

__all__ = ["SharedState", "StateUnavailable", "open_state"]


def __getattr__(name: str) -> Any:
    # The backend (redis-py's client, the scripts, the journal's records) is imported
    # when a state in Redis is used, not by every server that imports a module of this
    # package (an in-memory one names StateUnavailable from ``deadline``; its start).
    if name in ("SharedState", "StateUnavailable"):
        from mockstore.shared import backend

        return getattr(backend, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def open_state(shared: SharedState) -> None:
    """Open ``shared`` from outside any event loop (at start, before serving or forking).

    Its connections are closed again: each serving loop makes its own.
    ``StateUnavailable`` when Redis cannot be reached.
    """
    import asyncio

    async def opened() -> None:
        try:
            await shared.open()
        finally:
            await shared.close()

    asyncio.run(opened())
