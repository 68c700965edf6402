"""The rate-limit headers in the OpenAPI document a scenario's mock serves.

``mockstore.document`` makes the document a scenario's mock serves; this is
its part for the limiter: each answer lists the ``X-RateLimit-*`` figures the
scenario's provider sends (``ratelimit.headers.figures``, the per-window ones,
none on a 401 when callers without a key are not counted), the draft
headers on the answers that carry them, and each header's description and
type says its form (a reset with decimals is a number; ``Retry-After`` in
seconds, decimal seconds or an HTTP-date). Pure: a function of the scenario
and the document.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from mockstore.limiter.model import Limits, a_success
from mockstore.limiter.rules import plan_lengths
from mockstore.ratelimit import Plan

_REF = "#/components/headers/"
_FIGURE_HEADERS = {
    "limit": "X-RateLimit-Limit",
    "remaining": "X-RateLimit-Remaining",
    "reset": "X-RateLimit-Reset",
    "used": "X-RateLimit-Used",
    "resource": "X-RateLimit-Resource",
}
_UNITS = {
    "epoch": "Unix time in seconds",
    "epoch-ms": "Unix time in milliseconds",
    "delta": "seconds from now",
}
_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def describe_limiter(document: dict[str, Any], limits: Limits, plans: Iterable[Plan] = ()) -> None:
    """Make ``document``'s rate-limit headers say what ``limits``' answers carry (in place);
    ``plans``: the scenario's, whose own window lengths the draft policies state."""
    headers = limits.headers
    components = document["components"]["headers"]
    _components(components, limits, list(plans))
    for item in document["paths"].values():
        for method in [m for m in _METHODS if m in item]:
            for status, answer in item[method]["responses"].items():
                if "$ref" in answer:
                    continue
                listed = answer.setdefault("headers", {})
                counted = not (status == "401" and limits.anonymous == "none")
                # Callers not counted may still be told figures (of 0), not per window.
                told = counted or headers.uncounted == "zero"
                for figure, name in _FIGURE_HEADERS.items():
                    listed.pop(name, None)
                    if told and figure in headers.figures:
                        listed[name] = {"$ref": _REF + name}
                for window, suffix in headers.per_window:
                    for figure in ("Limit", "Remaining"):
                        name = f"X-RateLimit-{figure}-{suffix}"
                        if counted:
                            listed[name] = {
                                "description": f"The {window} window's {figure.lower()}.",
                                "schema": {"type": "integer"},
                            }
                second = headers.second
                for figure in second.figures if second is not None and counted else ():
                    listed[second.header(figure)] = {
                        "description": f"The {second.window} window's {figure}"
                        + (f" ({_UNITS[second.reset]})." if figure == "reset" else "."),
                        "schema": {"type": "integer"},
                    }
                success = status.isdigit() and a_success(int(status))
                draft = headers.draft == "all" or (headers.draft == "success" and success)
                if counted and draft:
                    listed["RateLimit-Policy"] = {"$ref": _REF + "RateLimit-Policy"}
                    listed["RateLimit"] = {"$ref": _REF + "RateLimit"}
                if "Retry-After" in listed and headers.retry_after == "none":
                    listed.pop("Retry-After")


def _components(components: dict[str, Any], limits: Limits, plans: list[Plan]) -> None:
    headers = limits.headers
    reset = components["X-RateLimit-Reset"]
    unit = _UNITS[headers.reset]
    decimals = headers.reset_decimals if headers.reset != "epoch-ms" else 0
    precision = f", with {decimals} decimal(s)" if decimals else ""
    reset["description"] = (
        f"When the described window is whole again: {unit}{precision}, rounded up."
    )
    reset["schema"] = {"type": "number" if decimals else "integer"}
    components["X-RateLimit-Limit"]["description"] = {
        "tightest": "The allowance of the window with fewer requests left.",
        "minute": "The minute window's allowance.",
        "day": "The day window's allowance.",
    }[headers.describes]
    components["X-RateLimit-Used"] = {
        "description": "Requests of the described window's allowance used.",
        "schema": {"type": "integer"},
    }
    components["X-RateLimit-Resource"] = {
        "description": "The resource the figures count.",
        "schema": {"type": "string", "enum": [headers.resource]},
    }
    forms = {
        "seconds": "whole seconds, rounded up",
        "decimal": f"seconds with {headers.retry_after_decimals} decimal(s), rounded up",
        "http-date": "an HTTP-date",
        "none": "not sent",
    }
    banned = headers.retry_after if headers.retry_after_banned == "same" else None
    banned_form = forms[banned or headers.retry_after_banned]
    components["Retry-After"]["description"] = (
        f"How long to wait before retrying: {forms[headers.retry_after]} "
        f"(a banned key's: {banned_form})."
    )
    names = dict(headers.policies)
    components["RateLimit-Policy"] = {
        "description": "The IETF draft's policies: "
        + ", ".join(
            f'"{names[name]}" ({_lengths(limits, plans, i)})'
            for i, (name, _) in enumerate(limits.windows)
        )
        + ".",
        "schema": {"type": "string"},
    }
    components["RateLimit"] = {
        "description": "The IETF draft's state of each policy: r remaining, t seconds to reset.",
        "schema": {"type": "string"},
    }


def _lengths(limits: Limits, plans: list[Plan], index: int) -> str:
    """A window's length (``index`` 0 the minute, 1 the day), and each plan's own beside it
    (a key's inline plan unnamed: its name holds the key)."""
    seconds = limits.windows[index][1].seconds
    own = []
    for plan in plans:
        length = plan_lengths(limits, plan)[index]
        if length != seconds:
            name = "a key's own plan" if plan.name.startswith("custom:") else f"plan {plan.name}"
            own.append(f"{name}: {length} s")
    return "; ".join([f"{seconds} s", *own])
