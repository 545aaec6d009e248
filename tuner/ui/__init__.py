"""The face of tuner.ui: what other packages use of it; the rest is private.

The conclusion (``conclude``, ``lossy_unchecked``) is imported at its first use
(:mod:`tuner.core.lazy_face`): it brings the study package, Optuna and the tracker, which
``tune bench`` and the progress displays do without."""

from typing import TYPE_CHECKING

from tuner.core import lazy_face
from tuner.ui.live_progress import RichProgress
from tuner.ui.plain_progress import PlainProgress
from tuner.ui.progress_display import progress_display
from tuner.ui.run_counters import RunCounters

if TYPE_CHECKING:
    from tuner.ui.conclusion import conclude, lossy_unchecked

__all__ = [
    "PlainProgress", "RichProgress", "RunCounters", "conclude", "lossy_unchecked",
    "progress_display",
]
__getattr__ = lazy_face(__name__, __file__)
