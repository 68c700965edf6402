"""The installed version of mockstore, as the package metadata says (``0.0.0`` from a bare tree).

A module of its own, below everything else, so that any module can name the
version without importing the package's public names (``mockstore/__init__``
loads those lazily).

Read from the installed distribution's ``METADATA`` file directly: the
``mockstore-<version>.dist-info`` directory found first on ``sys.path``, as
``importlib.metadata`` would find it. Importing ``importlib.metadata`` and
asking it costs about 30 ms (it imports ``email``, ``zipfile``, ``csv`` and
scans every path entry), a sixth of ``mockstore serve``'s start (issue 29);
this costs a directory listing per path entry. Anything else (an egg, a
zipped install, metadata that does not say) is asked of ``importlib.metadata``.
"""

from __future__ import annotations

import os
import sys

_NAME = "mockstore"


def _from_dist_info(paths: list[str]) -> str | None:
    """The ``Version`` of the first ``mockstore-*.dist-info`` on ``paths``; None if none says."""
    for entry in paths:
        try:
            names = os.listdir(entry or ".")
        except OSError:  # not a directory (a zip), or gone
            continue
        for name in names:
            if not (name.startswith(_NAME + "-") and name.endswith(".dist-info")):
                continue
            try:
                with open(os.path.join(entry, name, "METADATA"), encoding="utf-8") as metadata:
                    for line in metadata:
                        if line in ("\n", "\r\n"):  # the end of the headers
                            break
                        field, _, value = line.partition(":")
                        if field == "Name" and value.strip().lower() != _NAME:
                            break
                        if field == "Version":
                            return value.strip()
            except OSError:
                continue
    return None


def _installed_version() -> str:
    found = _from_dist_info(sys.path)
    if found is not None:
        return found
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(_NAME)
    except PackageNotFoundError:  # running from a source tree without an install
        return "0.0.0"


__version__ = _installed_version()
