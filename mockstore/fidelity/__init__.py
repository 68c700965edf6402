"""Fidelity: how close mockstore is to a real deployment, measured and closed.

- ``upstream``: the address of a real deployment, checked once.
- ``recorder``: ``mockstore record``, a reverse proxy journaling every exchange
  (keys as aliases), on the same app shell and server settings as ``serve``.
- ``recording``: the one loader of a recording and its scenario, with the one
  error path of ``replay`` and ``drift``.
- ``replayer``: the one replay engine: a fresh in-process mock at each recorded
  instant, the session's keys issued again.
- ``replay``: ``mockstore replay``, answers compared byte for byte.
- ``formats``, ``conformance``, ``compare``, ``attribution``: how ``drift``
  compares an answer (header formats, OpenAPI conformance, the rules) and which
  scenario setting decides a difference.
- ``drift``: ``mockstore drift``, answers compared semantically.
- ``calibrate``: ``mockstore calibrate``, probes of a live service written out as
  a scenario.

Nothing here imports the command line (``mockstore.cli``).
"""
