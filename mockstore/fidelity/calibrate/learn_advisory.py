"""Calibrate's ``http.advisory``: the headers that advise a client about its request.

- ``unknown_fields``: the header a create whose body had fields NewPet does not name
  gets, its value a template of the fields' names;
- ``clamped_limit``: the header a listing gets whose ``limit`` was above the maximum
  and taken as it, its value a template of the limit sent and the maximum (Corral's
  ``Warning: 299 - "limit 500 is above 100; 100 used"``).

Each is learned only where one template reproduces every such answer of the
recording; a header that also stands on other answers stays the constant-header
learner's as well.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import parse_qsl

from mockstore.fidelity.calibrate.result import Calibration
from mockstore.fidelity.evidence import Seen
from mockstore.schemas import operations
from mockstore.validation import above_maximum

Cite = Callable[..., str]
_LIMIT = next(p for p in operations()["listPets"].parameters if p.name == "limit")
# Headers whose URLs may hold the limit sent (a page's links), never an advisory.
_URL_HEADERS = frozenset({"link", "location", "content-location"})


class AdvisoryLearner:
    """Settles ``http.advisory`` from a recording's exchanges."""

    def __init__(self, seen: list[Seen], result: Calibration, cite: Cite) -> None:
        self.seen = seen
        self.result = result
        self.cite = cite

    def handled_headers(self) -> frozenset[str]:
        """The advisory headers this learner settles (no constant header stands for them)."""
        names = set()
        advisory = self._advisory_header()
        if advisory is not None:
            names.add(advisory[0].lower())
        clamped = self._clamp_header()
        if clamped is not None:
            # Settled here where only clamped listings carry it.
            name, _, shown = clamped
            if all(s in shown for s in self.seen if name.lower() in s.headers):
                names.add(name.lower())
        return frozenset(names)

    def _creates_with_unknown_fields(self) -> list[Seen]:
        return [
            s
            for s in self.seen
            if s.facts.operation == "createPet" and 200 <= s.status < 300 and s.facts.unknown_fields
        ]

    def _advisory_header(self) -> tuple[str, str] | None:
        """(name, value template) of the header a create with unknown fields gets, if any."""
        creates = self._creates_with_unknown_fields()
        if not creates:
            return None
        shown = creates[0]
        fields = ", ".join(shown.facts.unknown_fields)
        for name, value in shown.item.response_headers:
            if fields and fields in value:
                template = value.replace(fields, "{fields}")
                if all(
                    dict((n.lower(), v) for n, v in s.item.response_headers).get(name.lower())
                    == template.replace("{fields}", ", ".join(s.facts.unknown_fields))
                    for s in creates
                ):
                    return name, template
        return None

    def _clamped(self) -> list[tuple[Seen, str]]:
        """The listings answered 200 whose limit was above the maximum, with that limit."""
        found = []
        for s in self.seen:
            if s.facts.operation != "listPets" or s.status != 200:
                continue
            for name, value in parse_qsl(s.item.query, keep_blank_values=True):
                if name == "limit" and above_maximum(_LIMIT, value.strip()):
                    found.append((s, value))
                    break
        return found

    def _clamp_header(self) -> tuple[str, str, list[Seen]] | None:
        """(name, value template, the listings it is on) of the header a clamped listing gets:
        one that names the limit sent, alike on every clamped listing."""
        clamped = self._clamped()
        if not clamped:
            return None
        shown, limit = clamped[0]
        maximum = str(_LIMIT.schema["maximum"])
        for name, value in shown.item.response_headers:
            if name.lower() in _URL_HEADERS or limit not in value:
                continue
            template = value.replace(limit, "{limit}").replace(maximum, "{maximum}")
            if all(
                s.headers.get(name.lower())
                == template.replace("{limit}", sent).replace("{maximum}", maximum)
                for s, sent in clamped
            ):
                return name, template, [s for s, _ in clamped]
        return None

    def run(self) -> None:
        clamped = self._clamped()
        if clamped:
            found = self._clamp_header()
            if found is None:
                self.result.confirm("http.advisory.clamped_limit")
            else:
                name, template, _ = found
                self.result.set(
                    "http.advisory.clamped_limit",
                    {"header": name, "value": template},
                    self.cite(clamped[0][0], name, code=False),
                )
        creates = self._creates_with_unknown_fields()
        if not creates:
            return
        found = self._advisory_header()
        if found is None:
            self.result.confirm("http.advisory.unknown_fields")
            return
        name, template = found
        self.result.set(
            "http.advisory.unknown_fields",
            {"header": name, "value": template},
            self.cite(creates[0], name, code=False),
        )


__all__ = ["AdvisoryLearner"]
