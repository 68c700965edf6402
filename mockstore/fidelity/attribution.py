"""Which scenario setting decides a difference ``drift`` finds, named as the schema names it.

A difference a scenario setting can close is reported with that setting, so a
user knows what to change. Every setting named here is checked against the
scenario schema when this module loads (``_named``): drift cannot name a
setting the scenario format does not have, and an ``error_codes`` entry exists
for every condition the schema lists.
"""

from __future__ import annotations

import re
from typing import Any

from mockstore.errors import CONDITIONS
from mockstore.scenario import scenario_schema


def _in_schema(path: str) -> bool:
    """True when ``path`` (``behaviour.serve_head``, ``keys[].plan``) is a scenario setting."""
    node: Any = scenario_schema()
    for part in path.split("."):
        many = part.endswith("[]")
        node = (node.get("properties") or {}).get(part.removesuffix("[]"))
        if node is None:
            return False
        if many:
            node = node.get("items", {})
    return True


def settings_named(text: str) -> list[str]:
    """The settings a setting's text names: ``"plans, keys[].plan or anonymous_plan"`` has three."""
    text = re.sub(r"\(.*?\)", "", text)  # a note in brackets names nothing
    return [part.strip() for part in re.split(r",| or ", text) if part.strip()]


def _named(text: str) -> str:
    """``text``, once every setting it names is known to be one of the scenario schema's."""
    missing = [path for path in settings_named(text) if not _in_schema(path)]
    if missing:
        raise LookupError(f"drift names {missing}, which the scenario schema does not have")
    return text


VALIDATION_STATUS = _named("behaviour.validation_status")
SERVE_HEAD = _named("behaviour.serve_head")
PATH_CHECK = _named("behaviour.path_check")
MAX_BODY_BYTES = _named("behaviour.max_body_bytes")
AFTER_SUNSET = _named("behaviour.sunset, behaviour.after_sunset")
PLAN = _named("plans, keys[].plan or anonymous_plan")
KEYS = _named("keys (the scenario must name the key, or its alias)")
ROUTES = _named("routes")
RATELIMIT_RESET = _named("behaviour.ratelimit_reset")
RETRY_AFTER = _named("behaviour.retry_after")
RATELIMIT_DRAFT = _named("behaviour.ratelimit_draft_headers")
DEPRECATED_SINCE = _named("behaviour.deprecated_since")
SUNSET = _named("behaviour.sunset")
DEFAULT_STATUS = _named("behaviour.default_status")
UNKNOWN_FIELDS = _named("behaviour.unknown_fields")
ERROR_CODES = _named("behaviour.error_codes")
# One per condition the schema lists: behaviour.error_codes.<condition>.
ERROR_CODE = {
    name: _named(f"{ERROR_CODES}.{name}")
    for name in scenario_schema()["properties"]["behaviour"]["properties"]["error_codes"][
        "properties"
    ]
}

# Every setting drift can name, for a reader (and a test) to see at once.
SETTINGS: tuple[str, ...] = (
    VALIDATION_STATUS,
    SERVE_HEAD,
    PATH_CHECK,
    MAX_BODY_BYTES,
    AFTER_SUNSET,
    PLAN,
    KEYS,
    ROUTES,
    RATELIMIT_RESET,
    RETRY_AFTER,
    RATELIMIT_DRAFT,
    DEPRECATED_SINCE,
    SUNSET,
    DEFAULT_STATUS,
    UNKNOWN_FIELDS,
    ERROR_CODES,
    *ERROR_CODE.values(),
)


def status_setting(method: str, recorded: int, mock: int) -> str | None:
    """The scenario setting that decides a status difference, when one does."""
    pair = {recorded, mock}
    if pair == {400, 422}:
        return VALIDATION_STATUS
    if method == "HEAD" and 405 in pair:
        return SERVE_HEAD
    if 401 in pair and pair & {404, 405}:
        return PATH_CHECK
    if 413 in pair:
        return MAX_BODY_BYTES
    if 410 in pair:
        return AFTER_SUNSET
    if 429 in pair:
        return PLAN
    if 401 in pair:
        return KEYS
    if 501 in pair:
        return ROUTES
    return None


def header_setting(name: str) -> str | None:
    """The scenario setting that decides whether a header is sent, when one does."""
    if name in ("ratelimit", "ratelimit-policy"):
        return RATELIMIT_DRAFT
    return None


def error_code_setting(condition: str | None) -> str:
    """The ``error_codes`` entry that decides an Error code (the whole mapping if unknown)."""
    return ERROR_CODE.get(condition or "", ERROR_CODES)


def condition_of(
    operation: str | None,
    has_authorization: bool,
    status: int,
    body: dict[str, Any],
    error_codes: dict[str, str],
) -> str | None:
    """Which condition the mock's Error stands for (so which ``error_codes`` entry decides it)."""
    code = body.get("code")
    candidates = [name for name, given in error_codes.items() if given == code]
    if len(candidates) <= 1:
        return candidates[0] if candidates else None
    message = str(body.get("message", ""))
    for name in candidates:
        parameter = CONDITIONS[name].parameter
        if parameter and f"'{parameter}'" in message:
            return name
    if "missing_key" in candidates or "malformed_authorization" in candidates:
        return "malformed_authorization" if has_authorization else "missing_key"
    if "pet_not_found" in candidates and operation == "getPet" and status == 404:
        return "pet_not_found"
    if "unknown_path" in candidates and status == 404:
        return "unknown_path"
    return candidates[0]
