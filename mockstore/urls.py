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


_LITERAL_PREFIX = CONTROL_PREFIX.encode()


def is_disguised_control_path(path: str, raw_path: bytes | None) -> bool:
    """True for a path that means the control API but does not spell its prefix literally.

    ``path`` is the decoded path (``/%5F_mockstore`` arrives as ``/__mockstore``);
    dot segments and empty segments are resolved as a proxy would before judging
    it, and ``raw_path`` (as sent) must then start with ``/__mockstore`` itself.
    Such a path is refused rather than served or passed to the API: whatever
    sits in front of mockstore and guards ``/__mockstore`` sees exactly what
    mockstore serves.
    """
    if "//" in path or "/." in path:
        path = _normalised(path)
    if not is_control_path(path):
        return False
    if raw_path is None:
        return False
    end = len(_LITERAL_PREFIX)
    return not (
        raw_path.startswith(_LITERAL_PREFIX) and raw_path[end : end + 1] in (b"", b"/", b"?")
    )


def _normalised(path: str) -> str:
    """The path with ``.`` and ``..`` segments resolved and empty segments dropped."""
    segments: list[str] = []
    for segment in path.split("/"):
        if segment == "..":
            if segments:
                segments.pop()
        elif segment not in ("", "."):
            segments.append(segment)
    return "/" + "/".join(segments)
