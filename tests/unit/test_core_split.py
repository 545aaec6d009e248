"""Splitting a CPU host's cores between the engine and the load generator."""

import os
from pathlib import Path

from tuner.engines import load_engine_spec, render
from tuner.host import Hardware, cpu_list, parse_cpu_list, realtime_allowed, running_on, split_cores
from tuner.launch import LaunchRequest, container_spec

VALUES = {"python": "python", "model": "/m", "served_name": "m", "port": "8000",
          "host": "127.0.0.1"}


def test_the_generator_gets_an_eighth_of_the_cores_and_at_least_one() -> None:
    assert split_cores([0, 1]) == ([0], [1])
    assert split_cores(list(range(16))) == (list(range(14)), [14, 15])
    assert split_cores([3]) == ([], [])  # one core cannot be split


def test_core_lists_use_the_kernels_syntax_both_ways() -> None:
    assert cpu_list([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8"
    assert parse_cpu_list("0-2,5,7-8") == {0, 1, 2, 5, 7, 8}


def test_the_record_says_how_the_host_was_split() -> None:
    hw = Hardware(device="cpu", cpu_model="X", cpu_cores=8, memory_gib=16, numa_nodes=1,
                  gpus=[], engine_cpus=list(range(7)), client_cpus=[7])
    assert "engine on cores 0-6, load generator on 7" in hw.describe()
    rt = hw.model_copy(update={"client_realtime": True})
    assert "load generator on 7 at real-time priority" in rt.describe()
    assert hw.engine_cores == 7
    shared = hw.model_copy(update={"engine_cpus": [], "client_cpus": []})
    assert "not pinned" in shared.describe()
    assert shared.engine_cores == 8


def test_running_on_pins_for_the_block_only() -> None:
    before = os.sched_getaffinity(0)
    policy = os.sched_getscheduler(0)
    one = min(before)
    with running_on([one], realtime=realtime_allowed()):
        assert os.sched_getaffinity(0) == {one}
        if realtime_allowed():
            assert os.sched_getscheduler(0) == os.SCHED_RR
    assert os.sched_getaffinity(0) == before
    assert os.sched_getscheduler(0) == policy
    with running_on([]):
        assert os.sched_getaffinity(0) == before


def test_vllm_binds_its_compute_threads_and_keeps_its_helpers_apart() -> None:
    spec = load_engine_spec("vllm")
    r = render(spec, {}, device="cpu", mode="process", values=VALUES, cpus="0-6",
               other_cpus="7")
    assert r.env["VLLM_CPU_OMP_THREADS_BIND"] == "0-6"
    assert r.cpus == "7"  # the API server and the scheduler, off the OpenMP cores
    assert "VLLM_CPU_OMP_THREADS_BIND=0-6 " in r.command_line()
    assert " taskset -c 7 python -m vllm" in r.command_line()
    nowhere_else = render(spec, {}, device="cpu", mode="process", values=VALUES, cpus="0-6")
    assert nowhere_else.cpus is None


def test_vllm_compute_cores_leave_the_rest_of_its_share_to_the_api_server() -> None:
    spec = load_engine_spec("vllm")
    r = render(spec, {"compute_cores": 5}, device="cpu", mode="process", values=VALUES,
               cpus="0-6", other_cpus="7")
    assert r.env["VLLM_CPU_OMP_THREADS_BIND"] == "0-4"
    assert r.cpus == "5-6"  # the API server and scheduler on the share's other two cores
    assert "compute" not in r.command_line()  # no flag: only the binding says it
    every = render(spec, {"compute_cores": 7}, device="cpu", mode="process", values=VALUES,
                   cpus="0-6", other_cpus="7")
    assert (every.env["VLLM_CPU_OMP_THREADS_BIND"], every.cpus) == ("0-6", "7")
    one_core = render(spec, {"compute_cores": 1}, device="cpu", mode="process", values=VALUES,
                      cpus="0", other_cpus="1")
    assert (one_core.env["VLLM_CPU_OMP_THREADS_BIND"], one_core.cpus) == ("0", "1")
    boxed = render(spec, {"compute_cores": 5}, device="cpu", mode="container", values=VALUES,
                   cpus="0-6")
    assert boxed.env["VLLM_CPU_OMP_THREADS_BIND"] == "0-4"
    assert boxed.cpus is None  # a container's helpers stay in its cpuset


def test_compute_cores_are_searched_up_to_the_engines_share() -> None:
    from tuner.engines import ModelInfo
    from tuner.study import load_search_space

    model = ModelInfo(path="/m", architecture="LlamaForCausalLM", attention_heads=4,
                      kv_heads=2, max_model_len=4096, layers=2, hidden_size=256)
    for cores, high in ((2, 1), (16, 14)):
        engine, client = split_cores(list(range(cores)))
        hw = Hardware(device="cpu", cpu_model="X", cpu_cores=cores, memory_gib=16,
                      numa_nodes=1, gpus=[], engine_cpus=engine, client_cpus=client)
        knob = load_search_space("vllm").for_host(hw, model).knobs["compute_cores"]
        assert (knob.low, knob.high) == (1, high)  # type: ignore[union-attr]


def test_the_process_launcher_gives_the_helpers_the_cores_the_engine_was_not_given() -> None:
    from tuner.launch import ProcessLauncher

    launcher = ProcessLauncher()
    launcher.host_cpus = {0, 1, 2, 3}
    assert launcher.other_cpus("0-2") == "3"
    assert launcher.other_cpus("0-3") is None
    assert launcher.other_cpus(None) is None


def test_an_engine_is_confined_or_keeps_its_helpers_apart_not_both() -> None:
    import pytest
    from pydantic import ValidationError

    from tuner.engines import EngineSpec

    both = load_engine_spec("vllm").model_dump()
    both["cpu_binding"]["affinity"] = True
    with pytest.raises(ValidationError, match="exclude each other"):
        EngineSpec.model_validate(both)


def test_llamacpp_runs_wholly_on_its_cores_and_says_so_in_its_command(tmp_path: Path) -> None:
    (tmp_path / "tiny-F16.gguf").write_bytes(b"")
    r = render(load_engine_spec("llamacpp"), {"quantization": "F16"}, device="cpu",
               mode="process", values=VALUES, cpus="0-6", model_root=tmp_path)
    assert r.cpus == "0-6"
    assert "taskset -c 0-6 llama-server" in r.command_line()
    unpinned = render(load_engine_spec("llamacpp"), {"quantization": "F16"}, device="cpu",
                      mode="process", values=VALUES, model_root=tmp_path)
    assert unpinned.cpus is None
    assert "taskset" not in unpinned.command_line()


def test_a_confined_container_gets_a_cpuset(tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "tiny-F16.gguf").write_bytes(b"")
    req = LaunchRequest(spec=load_engine_spec("llamacpp"), config={"quantization": "F16"},
                        model=str(model), served_name="m", log_path=tmp_path / "log",
                        cpus="0-2")
    kwargs, _ = container_spec(req, image="llama:server", port=1, network="host",
                               cache_root=tmp_path)
    assert kwargs["cpuset_cpus"] == "0-2"
    assert kwargs["cpu_shares"] == 128  # its helpers yield to the load generator
    free = LaunchRequest(spec=load_engine_spec("vllm"), config={}, model=str(model),
                         served_name="m", log_path=tmp_path / "log", cpus="0-2")
    kwargs, _ = container_spec(free, image="vllm:cpu", port=1, network="host",
                               cache_root=tmp_path)
    assert "cpuset_cpus" not in kwargs
    assert kwargs["environment"]["VLLM_CPU_OMP_THREADS_BIND"] == "0-2"


def test_the_cpu_identity_names_its_model_cores_and_instruction_sets() -> None:
    from tuner.host import IDENTITY_FLAGS, cpu_identity

    text = cpu_identity()
    assert f", {os.cpu_count()} cores, " in text
    assert "(family " in text
    assert " model " in text
    named = text.rsplit(", ", 1)[1]
    assert named == "no avx2" or set(named.split("+")) <= set(IDENTITY_FLAGS)
