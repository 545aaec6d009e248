"""The request plan: what each request is and when it is sent.

Request ``i`` is a pure function of (workload, seed, epoch, i): its class, lengths,
prefix group and prompt come from a generator seeded with ``[seed, 1, epoch, i]``, so
runs at different loads send the same requests in the same order, and two
engine configurations are compared on identical traffic. Send times come from
the arrival process with a generator seeded ``[seed, 0]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from tuner.workload.arrivals import NS, TraceArrivals
from tuner.workload.models import Workload
from tuner.workload.prompts import PromptSynth
from tuner.workload.sessions import Session, Turn, draw_session, history_tokens, schedule_turns
from tuner.workload.trace import TraceEntry


@dataclass(frozen=True, slots=True)
class PlannedRequest:
    """One request to send. ``input_tokens`` is what the server should count as prompt tokens
    (completions API; for chat the template adds its own tokens on top)."""

    index: int
    class_name: str
    prefix_group: int | None
    input_tokens: int
    output_tokens: int
    prompt: str


class RequestFactory:
    """Makes request ``i`` on demand; cached, deterministic."""

    def __init__(self, workload: Workload, synth: PromptSynth) -> None:
        self.workload = workload
        self.synth = synth
        self._specials = workload.api == "completions"
        self._weights = class_weights(workload)
        self._trace = (workload.arrival.entries
                       if isinstance(workload.arrival, TraceArrivals) else None)
        self.make = lru_cache(maxsize=65536)(self._make)

    @lru_cache(maxsize=4096)  # noqa: B019 - one factory per run; the cache dies with it
    def prefix_text(self, group: int, epoch: int = 0) -> str:
        """Shared prefix ``group`` of ``epoch``: the same for every request of the epoch, and
        another in the next (a run never hits the prefixes an earlier epoch cached)."""
        prefix = self.workload.prefix
        assert prefix is not None
        rng = np.random.default_rng([self.workload.seed, 2, epoch, group])
        return self.synth.words(rng, prefix.tokens)

    @lru_cache(maxsize=8192)  # noqa: B019 - one factory per run; the cache dies with it
    def block_words(self, block: int, epoch: int) -> tuple[str, ...]:
        """The words of a trace's block ``block`` (one token each): equal ids, equal blocks."""
        trace = self.workload.arrival
        assert isinstance(trace, TraceArrivals)
        rng = np.random.default_rng([self.workload.seed, 3, epoch, block])
        return self.synth.word_list(rng, trace.scaled_block_tokens)

    def _trace_blocks(self, entry: TraceEntry, epoch: int, room: int) -> str:
        """The text of ``entry``'s prompt blocks, at most ``room`` tokens of them."""
        trace = self.workload.arrival
        assert isinstance(trace, TraceArrivals)
        parts = []
        for block, held in zip(entry.hash_ids, trace.layout(entry).block_lengths(),
                               strict=False):
            take = min(held, room)
            if take <= 0:
                break
            parts.append("".join(self.block_words(block, epoch)[:take]))
            room -= take
        return "".join(parts)

    @lru_cache(maxsize=65536)  # noqa: B019 - one factory per run; the cache dies with it
    def session(self, index: int) -> Session:
        """Conversation ``index`` (its lengths and think times; the same in every epoch)."""
        return draw_session(self.workload, self._weights, index)

    @lru_cache(maxsize=4096)  # noqa: B019 - one factory per run; the cache dies with it
    def _text(self, key: tuple[int, ...], tokens: int) -> str:
        return self.synth.words(np.random.default_rng([self.workload.seed, *key]), tokens)

    def turn(self, turn: Turn, index: int, epoch: int = 0) -> PlannedRequest:
        """Request ``index``: turn ``turn.turn`` of session ``turn.session``, whose prompt is
        the class's system prompt, the earlier turns (message and answer each) and its new
        message, the same text as every later turn of the session repeats."""
        session = self.session(turn.session)
        cls = self.workload.classes[session.class_index]
        s, k = turn.session, turn.turn
        parts = []
        if cls.session is not None and cls.session.system_tokens:
            parts.append(self._text((6, epoch, session.class_index), cls.session.system_tokens))
        for j in range(k + 1):
            parts.append(self._text((5, epoch, s, j, 0), session.user_tokens[j]))
            if j < k:
                parts.append(self._text((5, epoch, s, j, 1), session.output_tokens[j]))
        specials = self.synth.special_tokens if self._specials else 0
        total = specials + history_tokens(cls, session, k) + session.user_tokens[k]
        rng = np.random.default_rng([self.workload.seed, 5, epoch, s, k, 2])
        prompt = self.synth.prompt(rng, total, prefix="".join(parts), specials=self._specials)
        return PlannedRequest(index, cls.name, None, total, session.output_tokens[k], prompt)

    def _make(self, index: int, epoch: int = 0) -> PlannedRequest:
        """Request ``index`` of ``epoch``; epochs give fresh prompts (same distribution) so that
        repeated steps on one server do not hit each other's prefix cache."""
        w = self.workload
        assert not w.has_sessions, "conversations are planned by open_loop_plan"
        rng = np.random.default_rng([w.seed, 1, epoch, index])
        if self._trace is not None:
            entry = self._trace[index % len(self._trace)]
            name, own, out = "trace", entry.input_tokens, entry.output_tokens
        else:
            cls = w.classes[int(rng.choice(len(w.classes), p=self._weights))]
            name = cls.name
            own = int(cls.input.sample(rng, 1)[0])
            out = int(cls.output.sample(rng, 1)[0])
        group = None
        prefix = ""
        if w.prefix is not None and rng.random() < w.prefix.share:
            group = int(rng.integers(0, w.prefix.groups))
            prefix = self.prefix_text(group, epoch)
        specials = self.synth.special_tokens if self._specials else 0
        own = max(own, specials + 1)
        total = own + (w.prefix.tokens if group is not None and w.prefix else 0)
        if self._trace is not None:
            prefix += self._trace_blocks(self._trace[index % len(self._trace)], epoch,
                                         own - specials)
        prompt = self.synth.prompt(rng, total, prefix=prefix, specials=self._specials)
        return PlannedRequest(index, name, group, total, out, prompt)


def class_weights(workload: Workload) -> np.ndarray:
    """The classes' shares, summing to one."""
    weights = np.array([c.weight for c in workload.classes], dtype=np.float64)
    return weights / weights.sum() if len(weights) else weights


def _extent(workload: Workload, duration_s: float | None) -> tuple[int | None, float | None]:
    """Requests and seconds the run's schedule covers, warm-up included."""
    stop, warm = workload.stop, workload.warmup
    count = None if stop.requests is None or duration_s is not None else (
        stop.requests + warm.requests)
    duration = duration_s if duration_s is not None else stop.duration_s
    return count, None if duration is None else duration + warm.duration_s


def session_turns(workload: Workload, duration_s: float | None = None) -> list[Turn]:
    """The turns a run of a conversation workload sends, in send order (see
    :mod:`tuner.workload.sessions`). Sessions start by the arrival process."""
    count, duration = _extent(workload, duration_s)
    rng = np.random.default_rng([workload.seed, 0])
    starts = workload.arrival.offsets_ns(rng, count, duration)  # type: ignore[union-attr]  # open loop: checked by Workload
    weights = class_weights(workload)
    sessions = [draw_session(workload, weights, s) for s in range(len(starts))]
    turns = schedule_turns(starts, sessions, count,
                           None if duration is None else int(duration * NS))
    if duration is None and len(starts):  # sessions that would start later are not drawn
        turns = [t for t in turns if t.offset_ns <= starts[-1]]
    return turns


def send_offsets_ns(workload: Workload, duration_s: float | None = None) -> np.ndarray | None:
    """Open-loop send offsets for warm-up plus the measured part; None for a closed loop.

    ``duration_s`` overrides the workload's measured duration (capacity-search steps).
    """
    arrival = workload.arrival
    if arrival.closed_loop:
        return None
    if workload.has_sessions:
        return np.array([t.offset_ns for t in session_turns(workload, duration_s)],
                        dtype=np.int64)
    rng = np.random.default_rng([workload.seed, 0])
    count, total_duration = _extent(workload, duration_s)
    return arrival.offsets_ns(rng, count, total_duration)  # type: ignore[union-attr]  # closed loop returned above


def open_loop_plan(factory: RequestFactory, workload: Workload, duration_s: float | None,
                   epoch: int) -> tuple[np.ndarray, list[PlannedRequest]]:
    """An open-loop run's send offsets and its requests (``workload`` at the run's load)."""
    if workload.has_sessions:
        turns = session_turns(workload, duration_s)
        sent = np.array([t.offset_ns for t in turns], dtype=np.int64)
        return sent, [factory.turn(t, i, epoch) for i, t in enumerate(turns)]
    offsets = send_offsets_ns(workload, duration_s)
    assert offsets is not None
    return offsets, [factory.make(i, epoch) for i in range(len(offsets))]


def is_warmup(workload: Workload, index: int, sent_ns: int) -> bool:
    """Warm-up requests are sent but excluded from every figure."""
    warm = workload.warmup
    return index < warm.requests or sent_ns < warm.duration_s * NS


def plan_notes(workload: Workload) -> list[str]:
    """What the plan replays beyond its lengths and rates, one line each (the trace's prefix
    reuse and the replay's)."""
    arrival = workload.arrival
    if not isinstance(arrival, TraceArrivals) or not any(e.hash_ids for e in arrival.entries):
        return []
    trace, replayed = arrival.reuse_ratios()
    return [f"prefix reuse: {trace:.1%} of prompt tokens in the trace, {replayed:.1%} replayed "
            f"({len(arrival.entries)} requests, blocks of {arrival.scaled_block_tokens} tokens)"]
