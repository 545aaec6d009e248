from pathlib import Path

import numpy as np
import pytest

from tuner.workload.loader import load_workload
from tuner.workload.models import Workload
from tuner.workload.plan import RequestFactory, is_warmup, send_offsets_ns
from tuner.workload.prompts import PromptSynth

REPO = Path(__file__).resolve().parents[3]


def workload(**over: object) -> Workload:
    base = {
        "model": "tiny-llama",
        "classes": [{"name": "chat", "weight": 0.7,
                     "input": {"dist": "lognormal", "mean": 80, "sigma": 0.5, "min": 8, "max": 400},
                     "output": {"dist": "fixed", "value": 16}},
                    {"name": "doc", "weight": 0.3,
                     "input": {"dist": "uniform", "min": 900, "max": 1100},
                     "output": {"dist": "fixed", "value": 40}}],
        "prefix": {"groups": 3, "tokens": 64, "share": 0.5},
        "arrival": {"process": "poisson", "rate": 4},
        "stop": {"duration_s": 20}, "warmup": {"requests": 3}, "seed": 5,
        "slo": {"ttft_p95_ms": 500, "itl_p95_ms": 50}, "cost": {"usd_per_hour": 1.0},
    }
    base.update(over)
    return Workload.model_validate(base)


def test_prompts_have_exact_token_counts(synth: PromptSynth) -> None:
    factory = RequestFactory(workload(), synth)
    for i in range(60):
        req = factory.make(i)
        assert synth.count(req.prompt) == req.input_tokens


def test_prefix_requests_start_with_their_group_prefix(synth: PromptSynth) -> None:
    factory = RequestFactory(workload(), synth)
    reqs = [factory.make(i) for i in range(200)]
    carried = [r for r in reqs if r.prefix_group is not None]
    assert 70 < len(carried) < 130  # share 0.5
    for r in carried:
        prefix = factory.prefix_text(r.prefix_group)
        assert r.prompt.startswith(prefix)
        assert synth.count(prefix, specials=False) == 64


def test_requests_are_a_pure_function_of_seed_epoch_and_index(synth: PromptSynth) -> None:
    a = RequestFactory(workload(), synth)
    b = RequestFactory(workload(), synth)
    assert [a.make(i) for i in range(20)] == [b.make(i) for i in range(20)]
    assert a.make(3, epoch=1) != a.make(3, epoch=0)
    c = RequestFactory(workload(seed=6), synth)
    assert c.make(0) != a.make(0)
    # The arrival rate does not change what request i is.
    faster = RequestFactory(workload(arrival={"process": "poisson", "rate": 40}), synth)
    assert faster.make(7) == a.make(7)


def test_class_weights_shape_the_mix(synth: PromptSynth) -> None:
    factory = RequestFactory(workload(prefix=None), synth)
    names = [factory.make(i).class_name for i in range(400)]
    assert 0.6 < names.count("chat") / 400 < 0.8


def test_schedule_is_deterministic_and_warmup_is_marked() -> None:
    w = workload()
    a, b = send_offsets_ns(w), send_offsets_ns(w)
    assert a is not None
    assert b is not None
    assert np.array_equal(a, b)
    assert is_warmup(w, 2, int(a[2]))
    assert not is_warmup(w, 3, int(a[3]))
    assert send_offsets_ns(workload(arrival={"process": "concurrency", "concurrency": 2})) is None


def test_chat_prompts_count_content_tokens_only(synth: PromptSynth) -> None:
    factory = RequestFactory(workload(api="chat", prefix=None), synth)
    req = factory.make(0)
    assert synth.count(req.prompt, specials=False) == req.input_tokens


@pytest.mark.parametrize("path", sorted((REPO / "experiments" / "workloads").glob("*.yaml")))
def test_every_shipped_workload_builds_requests(path: Path, synth: PromptSynth) -> None:
    w = load_workload(path)
    factory = RequestFactory(w, synth)
    req = factory.make(0)
    specials = w.api == "completions"
    assert synth.count(req.prompt, specials=specials) == req.input_tokens
