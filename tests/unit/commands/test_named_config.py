"""A configuration named on the command line, one grammar for every option that names one:
`defaults`, a YAML file of knobs, a study's best_config.yaml, a file tune export wrote, the
engine's command line in a file; each mistake is one error naming the option, the file and
what is wrong (a flag, a knob, a rule of the engine's spec)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tuner.commands.named_config import DEFAULTS, NamedConfig, check_config, named_config
from tuner.core import ConfigError
from tuner.engines import ModelInfo, load_engine_spec
from tuner.host import Hardware

VLLM = load_engine_spec("vllm")
CPU = Hardware(device="cpu", cpu_model="x", cpu_cores=2, memory_gib=24, numa_nodes=1, gpus=[])
MODEL = ModelInfo(path="/m", architecture=None, attention_heads=4, kv_heads=2, layers=2,
                  hidden_size=256, vocab_size=4096, max_model_len=8192)


def named(tmp_path: Path, text: str, file: str = "mine.txt",
          flag: str = "--config") -> NamedConfig:
    (tmp_path / file).write_text(text)
    return named_config(str(tmp_path / file), VLLM, flag=flag)


def test_each_kind_of_file(tmp_path: Path) -> None:
    assert named_config("defaults", VLLM) == DEFAULTS
    knobs = named(tmp_path, "max_batch_size: 64\nchunked_prefill: false\n", "knobs.yaml")
    assert (knobs.name, knobs.knobs, knobs.defaults) == (
        "knobs", {"max_batch_size": 64, "chunked_prefill": False}, False)
    best = named(tmp_path, "trial: 7\ndefaults: false\nconfig: {max_batch_size: 32}\n",
                 "best_config.yaml")
    assert best.knobs == {"max_batch_size": 32}
    assert named(tmp_path, "trial: 0\ndefaults: true\nconfig: {max_batch_size: 128}\n",
                 "best_config.yaml").defaults
    exported = named(tmp_path, "#!/bin/sh\n# tune export: study s, trial 4 (block_size=64, "
                     "chunked_prefill=False, max_batch_size=32)\n# measured: ...\n"
                     "vllm serve /m --max-num-seqs 32\n", "deploy.sh")
    assert exported.knobs == {"block_size": 64, "chunked_prefill": False, "max_batch_size": 32}
    assert named(tmp_path, "# tune export: study s, trial 0 (the engine's defaults)\n"
                 "kind: Deployment\n", "k8s.yaml").defaults
    command = named(tmp_path, "VLLM_CPU_KVCACHE_SPACE=6 vllm serve /models/m \\\n"
                    "  --max-num-seqs 48 --enable-chunked-prefill\n", "today.sh")
    assert (command.name, command.knobs) == (
        "today", {"kv_cache_space_gib": 6, "max_batch_size": 48, "chunked_prefill": True})


@pytest.mark.parametrize(("text", "said"), [
    ("vllm serve /m --max-num-seq 64\n", "--against {p}: read as vllm's command line: "
     "--max-num-seq: not a knob of vllm the tuner knows"),
    ("max_num_seqs: 64\n", "--against {p}: vllm has no knob 'max_num_seqs'; the knobs are in "
     "engines/vllm.yaml"),
    ("", "--against {p}: the file is empty"),
])
def test_a_mistake_names_the_option_the_file_and_what(tmp_path: Path, text: str,
                                                        said: str) -> None:
    with pytest.raises(ConfigError) as err:
        named(tmp_path, text, flag="--against")
    assert str(err.value).startswith(said.format(p=tmp_path / "mine.txt"))
    with pytest.raises(ConfigError, match=r"^--config nope.yaml: no such file; give 'defaults'"):
        named_config("nope.yaml", VLLM)


def test_a_configuration_that_breaks_a_rule_names_it() -> None:
    with pytest.raises(ConfigError, match=r"^--against: breaks rule "
                                          r"batched_tokens_below_batch_size of engines/vllm.yaml"
                                          r": max_num_batched_tokens must be >= max_num_seqs$"):
        check_config({"max_batch_size": 64, "max_batched_tokens": 32}, "--against", VLLM, CPU,
                     MODEL, 512)
    check_config({"max_batch_size": 64}, "--config", VLLM, CPU, MODEL, 512)
