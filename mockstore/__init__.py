"""mockstore: a high-fidelity mock server of the Pet Store service."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("mockstore")
except PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0.0.0"

__all__ = ["__version__"]
