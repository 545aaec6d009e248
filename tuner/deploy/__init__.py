"""The face of tuner.deploy: what other packages use of it; the rest is private."""

from tuner.deploy.chosen import Chosen, Sizing, dns_name
from tuner.deploy.formats import Where, export_format

__all__ = [
    "Chosen", "Sizing", "Where", "dns_name", "export_format",
]
