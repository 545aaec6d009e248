"""The exact environment and command a process engine receives on a GPU host, and what keeps
two parallel trials apart (socket, ports, caches), without a GPU."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tuner.core import ConfigError
from tuner.engines import Rendered, load_engine_spec, render
from tuner.launch.base import LaunchRequest
from tuner.launch.isolation import ephemeral_range, free_port, launch_values
from tuner.launch.process import ProcessLauncher, engine_env, missing_modules

H100S = ["GPU-0a1b2c3d-0000-4000-8000-000000000000", "GPU-1a1b2c3d-0000-4000-8000-000000000001"]
RENDERED = Rendered(argv=["engine"], env={"VLLM_USE_AOT_COMPILE": "0"})


def test_a_gpu_engine_gets_its_lease_by_uuid_in_pci_order() -> None:
    inherited = {"PATH": "/usr/bin", "CUDA_VISIBLE_DEVICES": "4,5"}  # the scheduler's
    env = engine_env(inherited, RENDERED, H100S, {"TUNER_ENGINE_ID": "e1"})
    assert env == {"PATH": "/usr/bin", "VLLM_USE_AOT_COMPILE": "0", "TUNER_ENGINE_ID": "e1",
                   "CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": ",".join(H100S)}


def test_a_cpu_engine_on_a_gpu_host_sees_no_gpu() -> None:
    env = engine_env({"PATH": "/usr/bin"}, RENDERED, [], {})
    assert env["CUDA_VISIBLE_DEVICES"] == ""  # unset, a CUDA build would take GPU 0


def request(engine: str, devices: list[str], tmp_path: Path) -> LaunchRequest:
    return LaunchRequest(spec=load_engine_spec(engine), config={}, model="/m", served_name="m",
                         log_path=tmp_path / "log", devices=devices)


def process_argv(engine: str) -> list[str]:
    values = {"python": "python", "model": "/m", "served_name": "m", "host": "127.0.0.1",
              **launch_values("127.0.0.1")}
    return render(load_engine_spec(engine), {}, device="gpu", mode="process",
                  values=values).argv


def test_two_parallel_tgi_trials_share_no_socket_or_port() -> None:
    a, b = process_argv("tgi"), process_argv("tgi")

    def flag(argv: list[str], name: str) -> str:
        return argv[argv.index(name) + 1]

    for name in ("--shard-uds-path", "--master-port", "--port"):
        assert flag(a, name) != flag(b, name), name
    assert flag(a, "--shard-uds-path").startswith("/tmp/tuner-")
    assert flag(a, "--master-port") != "29500"


def test_two_parallel_vllm_trials_share_no_compile_cache(tmp_path: Path) -> None:
    launcher = ProcessLauncher(cache_root=tmp_path)
    a = launcher.lease_caches(request("vllm", H100S[:1], tmp_path))
    b = launcher.lease_caches(request("vllm", H100S[1:], tmp_path))
    assert a == {"VLLM_CACHE_ROOT": str(tmp_path / "engines" / "vllm" / "vllm" / H100S[0])}
    assert a["VLLM_CACHE_ROOT"] != b["VLLM_CACHE_ROOT"]
    assert Path(a["VLLM_CACHE_ROOT"]).is_dir()
    # A CPU host runs one trial at a time and keeps vLLM's own cache.
    assert launcher.lease_caches(request("vllm", [], tmp_path)) == {}


def test_free_port_never_hands_out_a_port_twice_while_reserved() -> None:
    ports = [free_port() for _ in range(50)]
    assert len(set(ports)) == 50


def test_llamacpp_offloads_every_layer_on_a_gpu_unless_the_space_says_otherwise(
        tmp_path: Path) -> None:
    spec = load_engine_spec("llamacpp")
    (tmp_path / "m-F16.gguf").touch()
    values = {"python": "python", "model": str(tmp_path), "served_name": "m", "host": "h",
              "port": "1"}
    gpu = render(spec, {}, device="gpu", mode="process", values=values).argv
    assert gpu[gpu.index("--n-gpu-layers") + 1] == "auto"  # every layer the fit allows
    chosen = render(spec, {"gpu_layers": 20}, device="gpu", mode="process", values=values).argv
    assert chosen[chosen.index("--n-gpu-layers") + 1] == "20"
    server = render(spec, {}, device="gpu", mode="container", values=values).argv
    assert server[server.index("--n-gpu-layers") + 1] == "auto"
    cpu = render(spec, {}, device="cpu", mode="process", values=values).argv
    assert "--n-gpu-layers" not in cpu


def test_ports_come_from_below_the_ephemeral_range() -> None:
    low = ephemeral_range()[0]
    assert all(10000 <= free_port() < low for _ in range(20))


def test_the_ephemeral_range_is_read_from_the_kernel(tmp_path: Path) -> None:
    (tmp_path / "range").write_text("40000\t60999\n")
    assert ephemeral_range(tmp_path / "range") == (40000, 60999)
    assert ephemeral_range(tmp_path / "missing") == (32768, 60999)


def test_an_engine_memory_limit_caps_the_engines_address_space_alone() -> None:
    """TUNER_ENGINE_MEMORY_GIB: RLIMIT_AS set in the engine before exec, not in the tuner
    (the real-engine OOM is tests/integration/test_faults_llamacpp.py)."""
    import os
    import resource
    import subprocess
    import sys

    from tuner.launch.process import _child_setup

    mine = resource.getrlimit(resource.RLIMIT_AS)
    limit = ProcessLauncher(memory_gib=1.5).address_space
    assert limit == int(1.5 * 2**30)
    assert ProcessLauncher().address_space is None
    seen = subprocess.run(
        [sys.executable, "-c", "import resource; print(resource.getrlimit(resource.RLIMIT_AS))"],
        preexec_fn=_child_setup(os.sched_getaffinity(0), 0, limit), capture_output=True,
        text=True, check=True).stdout
    assert seen.strip() == f"({limit}, {limit})"
    assert resource.getrlimit(resource.RLIMIT_AS) == mine


def test_an_engine_whose_python_modules_are_missing_is_named_with_how_to_install_them(
        ) -> None:
    spec = load_engine_spec("transformers")
    assert missing_modules(sys.executable, ["json", "no_such_module_here"]) == [
        "no_such_module_here"]
    assert missing_modules("/no/such/python", ["json"]) == ["json"]
    lacking = spec.model_copy(update={"process": spec.process.model_copy(  # type: ignore[union-attr]
        update={"requires": ["transformers", "no_such_module_here"]})})
    with pytest.raises(ConfigError, match=r"transformers serve needs the Python module\(s\) "
                       r"no_such_module_here, which .* cannot import: pip install "
                       r"'transformers\[serving\]'"):
        ProcessLauncher().check_program(lacking)
