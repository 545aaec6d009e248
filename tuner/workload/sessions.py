"""Conversations: sessions that arrive by the arrival process, their turns following.

Session ``s`` is a pure function of (workload, seed, s): its class, its number of turns, each
turn's user-message and answer lengths and the think times between turns come from a
generator seeded ``[seed, 4, s]``. The schedule merges every session's turns in time order,
so request ``i`` of a run is the i-th turn sent; what the turn is (its session and place) does
not depend on the run's load, only its position in the order does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tuner.workload.models import RequestClass, Workload

MS = 1_000_000


@dataclass(frozen=True, slots=True)
class Session:
    """One conversation: per turn, the new user message's tokens and the answer's tokens, and
    the gaps between turn sends in ns (one fewer than turns)."""

    class_index: int
    user_tokens: tuple[int, ...]
    output_tokens: tuple[int, ...]
    gaps_ns: tuple[int, ...]

    @property
    def turns(self) -> int:
        return len(self.user_tokens)


@dataclass(frozen=True, slots=True)
class Turn:
    """Turn ``turn`` (from 0) of session ``session``, sent at ``offset_ns``."""

    offset_ns: int
    session: int
    turn: int


def draw_session(workload: Workload, weights: np.ndarray, index: int) -> Session:
    """Session ``index``; a class that is not a conversation gives one-turn sessions."""
    rng = np.random.default_rng([workload.seed, 4, index])
    which = int(rng.choice(len(workload.classes), p=weights))
    cls: RequestClass = workload.classes[which]
    turns = 1 if cls.session is None else max(1, int(cls.session.turns.sample(rng, 1)[0]))
    users = tuple(int(x) for x in cls.input.sample(rng, turns))
    outputs = tuple(int(x) for x in cls.output.sample(rng, turns))
    gaps = (() if cls.session is None
            else tuple(int(x) * MS for x in cls.session.think_ms.sample(rng, turns - 1)))
    return Session(which, users, outputs, gaps)


def schedule_turns(starts_ns: np.ndarray, sessions: list[Session], count: int | None,
                   duration_ns: int | None) -> list[Turn]:
    """Every session's turns in the order they are sent (ties: by session, then turn), the
    first ``count`` of those sent before ``duration_ns``."""
    turns = []
    for s, (start, session) in enumerate(zip(starts_ns, sessions, strict=True)):
        at = int(start)
        for k in range(session.turns):
            if k:
                at += session.gaps_ns[k - 1]
            if duration_ns is not None and at >= duration_ns:
                break
            turns.append(Turn(at, s, k))
    turns.sort(key=lambda t: (t.offset_ns, t.session, t.turn))
    return turns if count is None else turns[:count]


def history_tokens(cls: RequestClass, session: Session, turn: int) -> int:
    """Prompt tokens of ``turn`` before its new user message: the system prompt and every
    earlier turn's message and answer."""
    system = cls.session.system_tokens if cls.session is not None else 0
    return system + sum(session.user_tokens[:turn]) + sum(session.output_tokens[:turn])
