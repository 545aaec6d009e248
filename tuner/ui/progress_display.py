"""Which progress display a command gets: a live panel on a terminal, plain lines elsewhere."""

from __future__ import annotations

from rich.console import Console

from tuner.ui.live_progress import RichProgress
from tuner.ui.plain_progress import PlainProgress


def progress_display(console: Console, progress_console: Console
                     ) -> RichProgress | PlainProgress:
    """The live panel on ``progress_console`` (stderr) when ``console`` (stdout) is a terminal;
    otherwise plain lines on ``console``, so a log of stdout (``| tee``, CI, nohup) shows the
    work as it goes, in order with the results."""
    if console.is_terminal:
        return RichProgress(progress_console)
    return PlainProgress(console)
