"""Where things are on a mockstore server: the control API's prefix, tenants, URL forgiveness.

Kept free of heavy imports: the control clients, the pytest plugin and the
server all read it.

**URL forgiveness.** Users hand the clients whatever address they have at hand:
the server root (``http://127.0.0.1:8080``), the API base the banner prints
(``http://127.0.0.1:8080/v1``), the control API itself (``…/__mockstore``), or a
tenant's root (``…/__mockstore/tenants/gw0``). ``control_root`` turns each into
the root the control API hangs under: a URL naming ``/__mockstore`` says where
that is; a URL with any other path is probed, from the bare origin to the whole
URL, for the one whose ``/__mockstore/health`` answers as mockstore's does (a
reverse proxy may mount a server under a path, so the path alone cannot say).
Shortest first: a probe under the API base would be an API request, journaled
and counted against the caller's allowance. The clients then say what they did.
"""

from __future__ import annotations

import json
import re
from urllib.parse import urlsplit

CONTROL_PREFIX = "/__mockstore"
HEALTH_PATH = CONTROL_PREFIX + "/health"
TENANTS_PREFIX = CONTROL_PREFIX + "/tenants/"
# Tenant ids: safe in a path segment, a log line and a file name.
TENANT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_TENANT_ROOT = re.compile(r"^(.*?" + re.escape(TENANTS_PREFIX) + r"[^/]+)(/.*)?$")


def is_control_path(path: str) -> bool:
    """True for ``/__mockstore`` and anything under it (not ``/__mockstorex``)."""
    return path.startswith(CONTROL_PREFIX) and (
        len(path) == len(CONTROL_PREFIX) or path[len(CONTROL_PREFIX)] == "/"
    )


def tenant_path(tenant_id: str) -> str:
    """The root of a tenant on its server: ``/__mockstore/tenants/<id>``."""
    return TENANTS_PREFIX + tenant_id


def control_root(url: str) -> tuple[str, tuple[str, ...]]:
    """The server root for ``url``, and the candidates to probe when the path cannot say.

    Returns ``(root, ())`` when the URL settles it, else ``(url, candidates)``:
    the bare origin, then each longer path, the URL itself last.
    """
    url = url.rstrip("/")
    parts = urlsplit(url)
    origin = f"{parts.scheme}://{parts.netloc}"
    path = parts.path.rstrip("/")
    if not path:
        return origin, ()
    tenant = _TENANT_ROOT.match(path)
    if tenant is not None:
        return origin + tenant.group(1), ()
    if is_control_path(path) or CONTROL_PREFIX + "/" in path or path.endswith(CONTROL_PREFIX):
        return origin + path[: path.index(CONTROL_PREFIX)], ()
    candidates = []
    while path:
        candidates.append(origin + path)
        path = path.rsplit("/", 1)[0]
    candidates.append(origin)
    return url, tuple(reversed(candidates))


def is_health(status: int, body: bytes) -> bool:
    """True for mockstore's own health answer (not any 200 a proxy or the API might give)."""
    if status != 200:
        return False
    try:
        data = json.loads(body)
    except ValueError:
        return False
    return isinstance(data, dict) and data.get("status") == "ok" and "version" in data


def explain_root(given: str, root: str) -> str:
    """What a client says when it used another address than the one it was given."""
    return (
        f"{given} is not a mockstore server root; using {root} "
        f"(its control API answers at {root}{CONTROL_PREFIX})"
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
