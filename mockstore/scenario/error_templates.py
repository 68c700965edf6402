"""What an Error template of a scenario may name, checked when the scenario is loaded.

``behaviour.error_messages`` and the templated ``behaviour.error_fields`` are
filled in per answer by ``mockstore.error_bodies``; a placeholder that names
nothing the answer knows would print nothing, so the scenario is refused with
its file position instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mockstore.templates import unknown

Report = Callable[[tuple[str | int, ...], str], None]
# What a message or a template field may name.
MESSAGE_FIELDS = frozenset(
    {
        "message",
        "code",
        "status",
        "condition",
        "value",
        "parameter",
        "method",
        "path",
        "key",
        "request_id",
        "retry_after_s",
        "retry_after_ms",
        "limit",
    }
)
# What a details item may name.
ITEM_FIELDS = frozenset({"field", "pointer", "location", "reason", "message", "value"})


def check_error_bodies(behaviour: Any, report: Report) -> None:
    """What the schema cannot say of ``behaviour.error_messages`` and ``error_fields``."""
    if not isinstance(behaviour, dict):
        return
    messages = behaviour.get("error_messages")
    if isinstance(messages, dict):
        for condition, template in messages.items():
            if isinstance(template, str):
                _check(template, MESSAGE_FIELDS, ("behaviour", "error_messages", condition), report)
    fields = behaviour.get("error_fields")
    if not isinstance(fields, list):
        return
    for index, item in enumerate(fields):
        if not isinstance(item, dict):
            continue
        where: tuple[str | int, ...] = ("behaviour", "error_fields", index)
        template = item.get("template")
        if isinstance(template, str):
            _check(template, MESSAGE_FIELDS, (*where, "template"), report)
        shape = item.get("item")
        if isinstance(shape, dict):
            if item.get("generate") != "details":
                report((*where, "item"), "item shapes the entries of generate: details only")
            for name, value in shape.items():
                if isinstance(value, str):
                    _check(value, ITEM_FIELDS, (*where, "item", name), report)


def _check(
    template: str, allowed: frozenset[str], where: tuple[str | int, ...], report: Report
) -> None:
    strange = unknown(template, allowed)
    if strange:
        report(
            where,
            f"{{{strange[0]}}} names nothing: a template may name "
            + ", ".join(f"{{{name}}}" for name in sorted(allowed)),
        )


__all__ = ["ITEM_FIELDS", "MESSAGE_FIELDS", "check_error_bodies"]
