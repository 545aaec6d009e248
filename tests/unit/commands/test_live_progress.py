"""The live display keeps one set of counters per run: parallel trials do not reset each
other's, and warm-up requests are not counted against the planned total."""

from __future__ import annotations

import io

from rich.console import Console

from tuner.loadgen import RequestRecord
from tuner.ui import RichProgress, RunCounters


def rec(warmup: bool = False, error: str | None = None) -> RequestRecord:
    return RequestRecord(index=0, class_name="c", prefix_group=None, input_tokens=1,
                         planned_output_tokens=1, scheduled_ns=0, sent_ns=0,
                         first_token_ns=5_000_000, done_ns=6_000_000, warmup=warmup,
                         error=error)


def test_runs_side_by_side_keep_their_own_counters() -> None:
    console = Console(file=io.StringIO(), width=120)
    progress = RichProgress(console)
    a = progress.run("trial 1 load 2", 3)
    b = progress.run("trial 2 load 4", 5)
    assert isinstance(a, RunCounters)
    assert isinstance(b, RunCounters)
    for r in (rec(warmup=True), rec(), rec()):
        a.request_sent(r)
        a.request_done(r)
    b.request_sent(rec())
    b.request_done(rec(error="HTTP 500"))
    c = progress.run("trial 3 load 1", 2)  # a third run starting resets nobody
    assert (a.sent, a.done, a.errors) == (2, 2, 0)
    assert (b.sent, b.done, b.errors) == (1, 1, 1)
    assert c.sent == 0  # type: ignore[attr-defined]
    console.print(progress._render())
    shown = console.file.getvalue()  # type: ignore[attr-defined]
    assert "sent 2/3 (+1 warm-up)" in shown
    assert "sent 1/5" in shown
    a.finished()
    console.file = io.StringIO()
    console.print(progress._render())
    assert "trial 1" not in console.file.getvalue()
