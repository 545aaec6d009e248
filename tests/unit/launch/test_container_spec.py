"""The exact container spec handed to the Docker daemon, for GPU paths that cannot run here."""

from pathlib import Path

import pytest
from pydantic import SecretStr

from tuner.engines import EngineSpec, load_engine_spec
from tuner.launch.base import LaunchRequest
from tuner.launch.docker import (
    container_spec,
    describe_spec,
    gpus_of_others,
    image_ref,
    pull_args,
)
from tuner.launch.ownership import OWNER_PID, OWNER_STARTED, owner_marker

SPEC = load_engine_spec("vllm")
UUIDS = ["GPU-5e1d3c2a-0b7f-4c1e-9a11-2f3b4c5d6e7f", "GPU-a0b1c2d3-e4f5-4a6b-8c7d-9e0f1a2b3c4d"]


def request(tmp_path: Path, devices: list[str], config: dict[str, object],
            spec: EngineSpec = SPEC) -> LaunchRequest:
    model = tmp_path / "model"
    model.mkdir(exist_ok=True)
    return LaunchRequest(spec=spec, config=config, model=str(model), served_name="m",
                         log_path=tmp_path / "log", labels={"tuner.study": "s"},
                         secret_env={"HF_TOKEN": SecretStr("hf_secret")}, devices=devices)


def test_gpu_trial_gets_exactly_its_devices_and_the_shared_memory_it_needs(tmp_path: Path) -> None:
    req = request(tmp_path, UUIDS, {"tensor_parallel": 2, "memory_fraction": 0.85})
    kwargs, rendered = container_spec(req, image="vllm/vllm-openai:v0.32.0", port=41000,
                                      network="host", cache_root=tmp_path / "cache",
                                      user="1000:1000")
    assert kwargs["device_requests"][0]["DeviceIDs"] == UUIDS  # by UUID, never by index
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
                                                         / "vllm" / UUIDS[0]).resolve())
    assert "NVIDIA_VISIBLE_DEVICES" not in kwargs["environment"]
    assert "user" not in kwargs  # vLLM's image writes to /root: it runs as root
    assert kwargs["labels"]["tuner.managed"] == "true"
    assert kwargs["labels"]["tuner.study"] == "s"
    assert kwargs["labels"]["tuner.owner_pid"].isdigit()


def test_secrets_are_not_in_the_spec(tmp_path: Path) -> None:
    kwargs, _ = container_spec(request(tmp_path, UUIDS[:1], {}), image="i", port=1,
                               network="host",
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


def test_a_cpu_container_on_a_gpu_host_sees_no_gpu(tmp_path: Path) -> None:
    kwargs, _ = container_spec(request(tmp_path, [], {}), image="i", port=1, network="host",
                               cache_root=tmp_path)
    assert kwargs["environment"]["NVIDIA_VISIBLE_DEVICES"] == "void"
    assert kwargs["environment"]["CUDA_VISIBLE_DEVICES"] == ""
    assert "device_requests" not in kwargs
    mounts = {m["Target"]: m for m in kwargs["mounts"]}
    assert mounts["/root/.cache/vllm"]["Source"] == str((tmp_path / "engines" / "vllm"
                                                         / "vllm").resolve())


def test_an_image_that_runs_as_any_user_runs_as_the_tuners(tmp_path: Path) -> None:
    llamacpp = load_engine_spec("llamacpp")
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "m-F16.gguf").touch()
    kwargs, _ = container_spec(request(tmp_path, UUIDS, {}, llamacpp), image="i", port=1,
                               network="host", cache_root=tmp_path, user="1000:1001")
    assert kwargs["user"] == "1000:1001"
    assert kwargs["device_requests"][0]["DeviceIDs"] == UUIDS


def test_two_parallel_tgi_containers_share_no_master_port(tmp_path: Path) -> None:
    tgi = load_engine_spec("tgi")
    argvs = [container_spec(request(tmp_path, [uuid], {}, tgi), image="i", port=port,
                            network="host", cache_root=tmp_path, master_port=master,
                            launch_id=lid)[1].argv
             for uuid, port, master, lid in zip(UUIDS, (41000, 41002), (41001, 41003),
                                                ("a1", "b2"), strict=True)]
    masters = {a[a.index("--master-port") + 1] for a in argvs}
    assert masters == {"41001", "41003"}


@pytest.mark.parametrize(("image", "pulled"), [
    ("vllm/vllm-openai:v0.32.0", ("vllm/vllm-openai", "v0.32.0")),
    ("vllm/vllm-openai@sha256:" + "ab" * 32, ("vllm/vllm-openai", "sha256:" + "ab" * 32)),
    ("localhost:5000/vllm", ("localhost:5000/vllm", "latest")),
    ("ghcr.io/huggingface/text-generation-inference:3.3.5",
     ("ghcr.io/huggingface/text-generation-inference", "3.3.5")),
])
def test_pull_splits_tags_and_digests(image: str, pulled: tuple[str, str]) -> None:
    assert pull_args(image) == pulled


def test_a_pinned_digest_is_referenced_with_an_at() -> None:
    assert SPEC.container is not None
    digest = "sha256:" + "cd" * 32
    assert image_ref(SPEC.container, "gpu", digest) == f"vllm/vllm-openai@{digest}"


class RecordedContainer:
    """What ``containers.list`` returns, as far as the GPU check reads it."""

    def __init__(self, name: str, labels: dict[str, str], device_ids: list[str]) -> None:
        self.name, self.labels = name, labels
        self.attrs = {"HostConfig": {"DeviceRequests": [
            {"Driver": "", "Count": 0, "DeviceIDs": device_ids, "Capabilities": [["gpu"]]}]
            if device_ids else None}}


def test_gpus_of_another_tuners_containers_are_busy() -> None:
    mine = owner_marker()
    ours = {"tuner.managed": "true", "tuner.owner_pid": mine[OWNER_PID],
            "tuner.owner_started": mine[OWNER_STARTED]}
    theirs = {"tuner.managed": "true", "tuner.owner_pid": "4242",
              "tuner.owner_started": "1700000000.000"}
    containers = [RecordedContainer("ours", ours, UUIDS[:1]),
                  RecordedContainer("theirs", theirs, UUIDS[1:]),
                  RecordedContainer("cpu", theirs, [])]
    assert gpus_of_others(containers) == {
        UUIDS[1]: "container theirs of another tuner (pid 4242)"}
