"""Configurations to try first are checked before the study starts: a knob the engine does not
have (with the closest name), a value the space cannot hold, an entry that is not a mapping,
each one line naming the entry and the knob."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.study.conftest import CPU, MODEL
from tuner.core import ConfigError
from tuner.engines import load_engine_spec
from tuner.study.enqueued import check_enqueued
from tuner.study.space import load_search_space

VLLM = load_engine_spec("vllm")
SPACE = load_search_space("vllm").for_host(CPU, MODEL).for_mode(VLLM, "process")


@pytest.mark.parametrize(("configs", "said"), [
    ([{"max_batch_sise": 8}],
     "--enqueue: [0].max_batch_sise: not a knob of vllm; did you mean `max_batch_size`?"),
    ([{}, {"max_batch_size": "8"}],
     "--enqueue: [1].max_batch_size: '8' is not an integer; give one (or leave the knob out)"),
    ([{"chunked_prefill": "yes"}],
     "--enqueue: [0].chunked_prefill: 'yes' is not true or false; give one (or leave the knob "
     "out)"),
    ([{"max_batch_size": True}],
     "--enqueue: [0].max_batch_size: True is not an integer; give one (or leave the knob out)"),
    ([["max_batch_size", 8]], "--enqueue: [0]: a mapping of knob values, not list"),
    ([{1: 2}], "--enqueue: [0].1: not a knob of vllm; the knobs are in engines/vllm.yaml"),
])
def test_a_wrong_configuration_is_one_line(configs: list[Any], said: str) -> None:
    with pytest.raises(ConfigError) as err:
        check_enqueued(configs, VLLM, SPACE)
    assert str(err.value) == said


def test_a_categorical_value_must_be_a_choice() -> None:
    name, knob = next((n, k) for n, k in SPACE.knobs.items() if k.type == "categorical")
    with pytest.raises(ConfigError, match=f"\\[0\\].{name}: 'nope' is not one of "):
        check_enqueued([{name: "nope"}], VLLM, SPACE)


def test_good_configurations_pass() -> None:
    check_enqueued([{"max_batch_size": 64, "chunked_prefill": True},
                    {"max_batch_size": None},  # the engine decides
                    {"max_model_len": 100000}], VLLM, SPACE)  # a knob outside the space
