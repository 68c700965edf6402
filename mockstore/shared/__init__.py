"""The mock's state in Redis, so several processes or replicas behave as one mock.

``mockstore serve --state redis://HOST:PORT/DB`` (``MOCKSTORE_STATE``, and
``MockServer(state=...)``): see ``backend`` for what is kept where, and
``scripts`` for the atomic steps. Needs the ``redis`` extra
(``pip install 'mockstore[redis]'``).
"""

from mockstore.shared.backend import SharedState, StateUnavailable

__all__ = ["SharedState", "StateUnavailable", "attach"]


def attach(runtime: object, url: str) -> SharedState:
    """A ``SharedState`` at ``url`` for ``runtime``, set as its ``shared``: not yet opened."""
    shared = SharedState(url, runtime)  # type: ignore[arg-type]
    runtime.shared = shared  # type: ignore[attr-defined]
    return shared


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
