"""The exact container spec handed to the Docker daemon, for GPU paths that cannot run here."""

from pathlib import Path

from pydantic import SecretStr

from tuner.engines.spec import load_engine_spec
from tuner.launch.base import LaunchRequest
from tuner.launch.docker import container_spec, describe_spec, image_ref

SPEC = load_engine_spec("vllm")


def request(tmp_path: Path, devices: list[int], config: dict[str, object]) -> LaunchRequest:
    model = tmp_path / "model"
    model.mkdir(exist_ok=True)
    return LaunchRequest(spec=SPEC, config=config, model=str(model), served_name="m",
                         log_path=tmp_path / "log", labels={"tuner.study": "s"},
                         secret_env={"HF_TOKEN": SecretStr("hf_secret")}, devices=devices)


def test_gpu_trial_gets_exactly_its_devices_and_the_shared_memory_it_needs(tmp_path: Path) -> None:
    req = request(tmp_path, [2, 3], {"tensor_parallel": 2, "memory_fraction": 0.85})
    kwargs, rendered = container_spec(req, image="vllm/vllm-openai:v0.32.0", port=41000,
                                      network="host", cache_root=tmp_path / "cache")
    assert kwargs["device_requests"][0]["DeviceIDs"] == ["2", "3"]
    assert kwargs["device_requests"][0]["Capabilities"] == [["gpu"]]
    assert kwargs["ipc_mode"] == "host"
    assert kwargs["shm_size"] == "16g"
    assert kwargs["network_mode"] == "host"
    assert "ports" not in kwargs
    assert kwargs["command"][:2] == ["/models/model", "--served-model-name"]
    tp = rendered.argv.index("--tensor-parallel-size")
    assert rendered.argv[tp + 1] == "2"
    assert "--gpu-memory-utilization" in rendered.argv
    mounts = {m["Target"]: m for m in kwargs["mounts"]}
    assert mounts["/models/model"]["ReadOnly"] is True
    assert mounts["/root/.cache/vllm"]["Source"] == str((tmp_path / "cache" / "engines" / "vllm"
                                                         / "vllm").resolve())
    assert kwargs["labels"]["tuner.managed"] == "true"
    assert kwargs["labels"]["tuner.study"] == "s"
    assert kwargs["labels"]["tuner.owner_pid"].isdigit()


def test_secrets_are_not_in_the_spec(tmp_path: Path) -> None:
    kwargs, _ = container_spec(request(tmp_path, [0], {}), image="i", port=1, network="host",
                               cache_root=tmp_path)
    assert "hf_secret" not in repr(describe_spec(kwargs))
    assert "HF_TOKEN" not in kwargs["environment"]


def test_published_port_binds_loopback_only(tmp_path: Path) -> None:
    kwargs, rendered = container_spec(request(tmp_path, [], {}), image="i", port=40001,
                                      network="publish", cache_root=tmp_path)
    assert kwargs["ports"] == {"40001/tcp": ("127.0.0.1", 40001)}
    assert "network_mode" not in kwargs
    assert rendered.argv[rendered.argv.index("--host") + 1] == "0.0.0.0"
    assert "device_requests" not in kwargs


def test_image_per_device_and_pinned_tag() -> None:
    assert SPEC.container is not None
    assert image_ref(SPEC.container, "gpu", None) == "vllm/vllm-openai:v0.32.0"
    assert image_ref(SPEC.container, "cpu", None) == "vllm/vllm-openai-cpu:v0.32.0-x86_64"
    assert image_ref(SPEC.container, "gpu", "v0.31.1") == "vllm/vllm-openai:v0.31.1"
