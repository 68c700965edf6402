"""The installed version of mockstore, as the package metadata says (``0.0.0`` from a bare tree).

A module of its own, below everything else, so that any module can name the
version without importing the package's public names (``mockstore/__init__``
loads those lazily, and importing ``importlib.metadata`` costs more than the
rest of ``import mockstore`` together: it happens here, on first use only).
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("mockstore")
except PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0.0.0"
