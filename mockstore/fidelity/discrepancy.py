"""One difference ``drift`` found between a recorded answer and the mock's, and its cause."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from mockstore.fidelity.reasons import NOT_EXPRESSIBLE


@dataclass
class Discrepancy:
    """One semantic difference between a recorded answer and the mock's.

    ``kind`` is one of ``CLASSES``, ``where`` the part of the answer. Its cause
    is ``setting`` (the scenario setting that removes it, ``set_to`` the value
    that does when drift can tell), or ``reason`` (why no setting can, a key of
    ``reasons.NOT_EXPRESSIBLE``), or ``accepted_by`` (the scenario's
    ``drift.accept`` rule that hides it). ``compare`` fills those; ``drift``
    adds the exchange that shows it (``entry`` onwards).
    """

    kind: str
    where: str
    recorded: str
    mock: str
    setting: str | None = None
    entry: int = 0  # 1-based position in the HAR
    request: str = ""
    request_id: str | None = None
    key: str | None = None
    operation: str | None = None
    status: int = 0  # the recorded status
    accepted_by: str | None = None
    value: tuple[Any, ...] = ()
    reason: str | None = None
    # A setting's cause holds only once proven: set to ``value`` and replayed, it removed
    # this difference and added none (``proof``).
    proven: bool = False
    # For a reason of the value-* kind: the setting drift tried, and its value (if any).
    tried: tuple[str, tuple[Any, ...]] | None = None

    @property
    def cause(self) -> str:
        """``accepted``, ``setting`` or ``not_expressible``."""
        if self.accepted_by is not None:
            return "accepted"
        return "setting" if self.setting is not None else "not_expressible"

    @property
    def set_to(self) -> Any:
        return self.value[0] if self.value else None

    def explained(self) -> str:
        """The cause as a report line shows it."""
        if self.setting is not None:
            value = f": {json.dumps(self.value[0])}" if self.value else ""
            return f"[{self.setting}{value}{'; proven by replay' if self.proven else ''}]"
        tried = ""
        if self.tried is not None:
            setting, value = self.tried
            tried = f"; tried {setting}" + (f": {json.dumps(value[0])}" if value else "")
        return f"[not expressible: {self.reason}{tried}]"

    def to_dict(self) -> dict[str, Any]:
        out = {
            "entry": self.entry,
            "request": self.request,
            "request_id": self.request_id,
            "key": self.key,
            "operation": self.operation,
            "status": self.status,
            "kind": self.kind,
            "where": self.where,
            "recorded": self.recorded,
            "mock": self.mock,
            "cause": self.cause,
            "setting": self.setting,
        }
        if self.value:
            out["set_to"] = self.value[0]
        if self.setting is not None:
            out["proven"] = self.proven
        if self.reason is not None:
            out["reason"] = self.reason
            out["why"] = NOT_EXPRESSIBLE[self.reason]
        if self.tried is not None:
            out["tried"] = {"setting": self.tried[0]}
            if self.tried[1]:
                out["tried"]["set_to"] = self.tried[1][0]
        if self.accepted_by is not None:
            out["accepted_by"] = self.accepted_by
        return out
