"""Conversations: each turn re-sends the conversation so far plus a new message."""

import numpy as np
import pytest

from tuner.core import ConfigError, validate
from tuner.workload.models import Workload
from tuner.workload.plan import RequestFactory, open_loop_plan, send_offsets_ns, session_turns
from tuner.workload.prompts import PromptSynth
from tuner.workload.sessions import MS, Turn


def workload(**over: object) -> Workload:
    return Workload.model_validate(data(**over))


def data(**over: object) -> dict[str, object]:
    base: dict[str, object] = {
        "model": "tiny-llama", "api": "chat", "seed": 3,
        "classes": [{"name": "chat", "weight": 1,
                     "input": {"dist": "uniform", "min": 10, "max": 30},
                     "output": {"dist": "uniform", "min": 5, "max": 20},
                     "session": {"turns": {"dist": "uniform", "min": 2, "max": 5},
                                 "think_ms": {"dist": "fixed", "value": 2000},
                                 "system_tokens": 40}}],
        "arrival": {"process": "poisson", "rate": 2}, "stop": {"duration_s": 30},
        "slo": {"ttft_p95_ms": 500, "itl_p95_ms": 50}, "cost": {"usd_per_hour": 1.0},
    }
    base.update(over)
    return base


def test_each_turn_is_the_previous_turns_plus_a_new_message(synth: PromptSynth) -> None:
    w = workload()
    factory = RequestFactory(w, synth)
    offsets, reqs = open_loop_plan(factory, w, None, 0)
    turns = session_turns(w)
    assert list(offsets) == [t.offset_ns for t in turns]
    by_session: dict[int, list[int]] = {}
    for turn, req in zip(turns, reqs, strict=True):
        assert synth.count(req.prompt, specials=False) == req.input_tokens
        by_session.setdefault(turn.session, []).append(turn.turn)
        session = factory.session(turn.session)
        if turn.turn == 0:
            assert req.input_tokens == 40 + session.user_tokens[0]
            continue
        before = reqs[_index_of(turns, turn.session, turn.turn - 1)]
        # the previous prompt, its answer, then the new message
        assert req.prompt.startswith(before.prompt)
        assert req.input_tokens == (before.input_tokens + session.output_tokens[turn.turn - 1]
                                    + session.user_tokens[turn.turn])
    # every session's system prompt is the same text
    firsts = [r.prompt for t, r in zip(turns, reqs, strict=True) if t.turn == 0]
    systems = {tuple(synth._tok.encode(p, add_special_tokens=False).ids[:40]) for p in firsts}
    assert len(systems) == 1
    assert all(ks == list(range(len(ks))) for ks in by_session.values())


def _index_of(turns: list[Turn], session: int, turn: int) -> int:
    return next(i for i, t in enumerate(turns) if (t.session, t.turn) == (session, turn))


def test_turns_follow_their_session_by_the_think_time() -> None:
    w = workload()
    turns = session_turns(w)
    starts = {t.session: t.offset_ns for t in turns if t.turn == 0}
    for t in turns:
        assert t.offset_ns == starts[t.session] + t.turn * 2000 * MS
    assert all(a.offset_ns <= b.offset_ns for a, b in zip(turns, turns[1:], strict=False))
    assert max(t.offset_ns for t in turns) < 30 * 1_000_000_000
    # sessions arrive by the arrival process: about 2 a second over 30 s
    assert 45 <= len(starts) <= 75


def test_a_session_is_the_same_at_any_load(synth: PromptSynth) -> None:
    slow, fast = workload(), workload(arrival={"process": "poisson", "rate": 8})
    a, b = RequestFactory(slow, synth), RequestFactory(fast, synth)
    assert a.session(4) == b.session(4)
    offsets = send_offsets_ns(fast)
    assert offsets is not None
    assert len(offsets) > len(session_turns(slow))


def test_a_request_count_bounds_the_turns() -> None:
    turns = session_turns(workload(stop={"requests": 50}))
    assert 0 < len(turns) <= 50
    assert np.all(np.diff([t.offset_ns for t in turns]) >= 0)


@pytest.mark.parametrize(("over", "message"), [
    ({"arrival": {"process": "concurrency", "concurrency": 2}}, "open-loop arrival"),
    ({"prefix": {"groups": 2, "tokens": 10, "share": 1}}, "system_tokens"),
])
def test_conversations_reject_what_they_cannot_replay(over: dict[str, object],
                                                      message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        validate(Workload, data(**over), "w.yaml")
