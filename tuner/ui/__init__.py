"""The face of tuner.ui: what other packages use of it; the rest is private."""

from tuner.ui.conclusion import conclude, lossy_unchecked
from tuner.ui.live_progress import RichProgress
from tuner.ui.plain_progress import PlainProgress
from tuner.ui.progress_display import progress_display
from tuner.ui.run_counters import RunCounters

__all__ = [
    "PlainProgress", "RichProgress", "RunCounters", "conclude", "lossy_unchecked",
    "progress_display",
]
