"""The typed clients of the control API: ``Control`` (sync) and ``AsyncControl``.

``calls`` builds every request once for both; ``types`` holds the frozen
dataclasses they return and the one error type, ``ControlError``.
"""

from mockstore.clients.async_control import AsyncControl
from mockstore.clients.control import Control
from mockstore.clients.types import ControlError, VerificationError

__all__ = ["AsyncControl", "Control", "ControlError", "VerificationError"]
