"""tuner: the cheapest LLM-serving configuration that meets your latency SLOs on your traffic."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("tuner")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
