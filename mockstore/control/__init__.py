"""The control API under ``/__mockstore``: state, scenario, clock, keys, journal, reports.

``routes.py`` holds the route table, one Route per path; each endpoint module
holds the endpoints of one concern; ``http.py`` reads requests and writes
answers (every Error body through ``mockstore.errors.error_body``).
"""

from mockstore.control.application import ControlAPI

__all__ = ["ControlAPI"]
