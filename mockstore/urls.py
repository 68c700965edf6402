"""Where things are on a mockstore server: the control API's prefix, and URL forgiveness.

Kept free of heavy imports: the control client, the pytest plugin and the
server all read it.
"""

from __future__ import annotations

CONTROL_PREFIX = "/__mockstore"


def is_control_path(path: str) -> bool:
    """True for ``/__mockstore`` and anything under it (not ``/__mockstorex``)."""
    return path.startswith(CONTROL_PREFIX) and (
        len(path) == len(CONTROL_PREFIX) or path[len(CONTROL_PREFIX)] == "/"
    )
