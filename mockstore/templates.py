"""Text templates a scenario writes: ``{name}`` placeholders filled in per answer.

Error messages (``behaviour.error_messages``), computed Error fields, a
maintenance window's message and an advisory header's value are templates. A
placeholder is a plain name in braces; ``{{`` and ``}}`` are literal braces.
Filling one never goes through ``str.format``, whose ``{name.attribute}`` and
``{name[key]}`` would read the values' attributes and items: a template names
values, nothing else. Which names a template may use is checked when the
scenario is loaded (``names``), by whoever knows what it will be given.
"""

from __future__ import annotations

import re

_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")


def names(template: str) -> set[str]:
    """The placeholders of ``template``, as written (``{ value }`` names `` value ``)."""
    return {
        match.group(1) for match in _PLACEHOLDER.finditer(template) if match.group(1) is not None
    }


def fill(template: str, values: dict[str, str]) -> str:
    """``template`` with each ``{name}`` replaced by ``values[name]`` (empty if not given)."""

    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        if name is None:
            return match.group(0)[0]  # {{ or }}: one brace
        return values.get(name, "")

    return _PLACEHOLDER.sub(one, template)


def unknown(template: str, allowed: frozenset[str] | set[str]) -> list[str]:
    """The placeholders of ``template`` that ``allowed`` does not name, sorted."""
    return sorted(names(template) - set(allowed))


__all__ = ["fill", "names", "unknown"]
