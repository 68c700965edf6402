"""The sections of a scenario around its API, checked and built: ``http``, ``maintenance``,
``latency``, and the Error templates of ``behaviour``.

``build.py`` builds the rest of a scenario; for these it asks here. Each section's
module (``http_section``, ``maintenance_section``, ``latency_section``,
``error_templates``) checks what the schema cannot say of it, reporting each problem
with its place in the file; a section the schema refused anywhere is built as its
default, so one run still reports every problem of the file.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mockstore.scenario.error_templates import check_error_bodies
from mockstore.scenario.http_section import HttpSettings, check_http, http_settings
from mockstore.scenario.latency_section import LatencyRule, check_latency, rules_of
from mockstore.scenario.maintenance_section import Window, check_windows, windows_of

Path = tuple[str | int, ...]


def surroundings(
    data: dict[str, Any],
    get: Callable[..., Any],
    report: Callable[[Path, str], None],
    checkable: Callable[[Path], bool],
    base_path: str,
) -> dict[str, HttpSettings | tuple[Window, ...] | tuple[LatencyRule, ...]]:
    """The ``http``, ``maintenance`` and ``latency`` sections of a scenario file's ``data``,
    by the names ``Scenario`` gives them.

    ``get(path, default)`` is the builder's: a part free of schema problems, else
    ``default``; ``report(path, message)`` notes a problem; ``checkable(path)`` says
    the schema found nothing wrong at or inside ``path``.
    """
    etag = get(("behaviour", "etag"), {})
    check_http(data.get("http"), report, etag if isinstance(etag, dict) else {}, base_path)
    check_windows(data.get("maintenance"), report, base_path, checkable)
    check_latency(data.get("latency"), report, checkable)
    check_error_bodies(data.get("behaviour"), report)
    return {
        "http": http_settings(get(("http",), None)),
        "maintenance": windows_of(get(("maintenance",), None)),
        "latency": rules_of(get(("latency",), None)),
    }


__all__ = ["surroundings"]
