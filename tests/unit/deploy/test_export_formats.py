"""``tune export``: each format from a study folder, read back and checked.

The Kubernetes objects are validated into the official ``kubernetes`` client's models here
again (whatever the exporter checked itself), the Helm values against the chart's published
schema, KServe's resources against its CRD schemas.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes.client import models

from tests.unit.deploy.conftest import MakeStudy
from tuner.commands.export import export_command
from tuner.core import ConfigError, Settings
from tuner.deploy.chosen import Sizing
from tuner.deploy.helm_values import CHART_WRITES
from tuner.deploy.kserve import check_inference_service, check_runtime
from tuner.deploy.schemas import HELM_VALUES, load_schema
from tuner.engines import load_engine_spec, render
from tuner.launch import LaunchRequest, container_spec

HF_ID = "meta-llama/Llama-3.1-8B-Instruct"


def export(folder: Path, fmt: str, pick: str | None = None, **over: Any) -> str:
    options: dict[str, Any] = {"image": None, "name": None, "port": 8000, "sizing": Sizing()}
    options.update(over)
    return export_command(folder, fmt, pick=pick, settings=Settings(), **options)


def documents(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d is not None]


def docker_argv(text: str) -> list[str]:
    body = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
    return shlex.split(body.replace("\\\n", " "))


def test_the_default_is_the_studys_winner_and_picks_take_front_points(
        make_study: MakeStudy) -> None:
    folder = make_study(winner=2)
    assert "trial 2 " in export(folder, "command")
    assert "trial 1 " in export(folder, "command", pick="cheapest")
    assert "trial 0 " in export(folder, "command", pick="ttft_p95_ms<=350")
    unfinished = make_study(name="running")  # no summary yet: the cheapest trial
    assert "trial 1 " in export(unfinished, "command")


def test_command_is_the_trials_process_launch(make_study: MakeStudy, model_dir: Path) -> None:
    folder = make_study(winner=1)
    text = export(folder, "command")
    expected = render(load_engine_spec("vllm"), read_config(folder, 1), device="cpu",
                      mode="process", values={"python": "python", "model": str(model_dir),
                                              "served_name": "tiny-llama", "port": "8000",
                                              "host": "0.0.0.0"}).command_line()
    assert text.splitlines()[-1] == expected
    assert "--max-num-seqs 64 --max-num-batched-tokens 8192 --no-enable-chunked-prefill" in expected
    assert "VLLM_CPU_KVCACHE_SPACE=8" in expected


def test_docker_runs_the_trials_container(make_study: MakeStudy, model_dir: Path,
                                          tmp_path: Path) -> None:
    """The same image, command, environment, shared memory, IPC and mount targets as the
    container the launcher gives the trial (publishing its port instead of host networking)."""
    folder = make_study(winner=1, image="tuner-test/vllm-cpu:local")
    argv = docker_argv(export(folder, "docker"))
    spec = load_engine_spec("vllm")
    config = read_config(folder, 1)
    kwargs, _ = container_spec(
        LaunchRequest(spec=spec, config=config, model=str(model_dir), served_name="tiny-llama",
                      log_path=tmp_path / "t.log"),
        image="tuner-test/vllm-cpu:local", port=8000, network="publish",
        cache_root=tmp_path / "cache")
    image_at = argv.index("tuner-test/vllm-cpu:local")
    assert argv[image_at + 1:] == kwargs["command"]
    options = pairs(argv[:image_at])
    assert options["--shm-size"] == [kwargs["shm_size"]]
    assert options["--ipc"] == ["host"]
    assert options["-p"] == ["8000:8000"]
    env = dict(e.split("=", 1) for e in options["-e"])
    assert env == kwargs["environment"]
    targets = sorted(v.split(":")[1] for v in options["-v"])
    assert targets == sorted(m["Target"] for m in kwargs["mounts"])
    assert f"{model_dir.resolve()}:/models/model:ro" in options["-v"]
    assert "--gpus" not in options
    assert "--label" not in options  # never tuner.managed: tune cleanup would remove it


def test_docker_can_share_the_hosts_network(make_study: MakeStudy) -> None:
    """For a daemon with no bridge network (this project's CI): --network host, no -p."""
    folder = make_study(winner=1, image="tuner-test/vllm-cpu:local")
    options = pairs(docker_argv(export(folder, "docker", host_network=True)))
    assert options["--network"] == ["host"]
    assert "-p" not in options


def pairs(argv: list[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for flag, value in zip(argv[3:], argv[4:], strict=False):
        if flag.startswith("-") and not value.startswith("-"):
            out.setdefault(flag, []).append(value)
    return out


def read_config(folder: Path, number: int) -> dict[str, Any]:
    from tuner.study import TrialResult

    path = folder / "trials" / f"trial-{number:03d}.json"
    return TrialResult.model_validate_json(path.read_text()).config


def test_gpu_trial_takes_as_many_gpus_as_it_used(make_study: MakeStudy) -> None:
    from tests.unit.fakes.trials import trial

    wide = trial(5, 0.5, config={"tensor_parallel": 2, "memory_fraction": 0.85},
                 accelerators=2)
    folder = make_study([wide], device="gpu", model=HF_ID, name="gpu-study")
    argv = docker_argv(export(folder, "docker"))
    options = pairs(argv[:argv.index("vllm/vllm-openai:v0.32.0")])
    assert options["--gpus"] == ["2"]
    assert HF_ID in argv
    assert "HF_TOKEN" in options["-e"]  # passed from the caller's environment, not written
    deployment = documents(export(folder, "k8s"))[0]
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "2"
    assert {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {
        "name": "hf-token", "key": "token", "optional": True}}} in container["env"]
    values = yaml.safe_load(export(folder, "helm"))
    spec = values["servingEngineSpec"]["modelSpec"][0]
    assert spec["requestGPU"] == 2
    assert spec["modelURL"] == HF_ID
    assert spec["vllmConfig"]["tensorParallelSize"] == 2
    assert spec["vllmConfig"]["gpuMemoryUtilization"] == 0.85
    kserve = documents(export(folder, "kserve"))
    assert kserve[1]["spec"]["predictor"]["model"]["storageUri"] == f"hf://{HF_ID}"


def test_k8s_objects_validate_into_the_clients_models(make_study: MakeStudy) -> None:
    docs = documents(export(make_study(winner=2), "k8s"))
    assert [d["kind"] for d in docs] == ["Deployment", "Service"]
    deployment = models.V1Deployment.model_validate(docs[0])
    service = models.V1Service.model_validate(docs[1])
    pod = deployment.spec.template.spec
    assert pod.containers[0].image == "vllm/vllm-openai-cpu:v0.32.0-x86_64"
    assert pod.containers[0].args[:3] == ["/models/model", "--served-model-name", "tiny-llama"]
    assert "--no-enable-prefix-caching" in pod.containers[0].args
    claim = next(v for v in pod.volumes if v.name == "model").persistent_volume_claim
    assert claim.claim_name == "vllm-chat-t2-model"
    assert service.spec.selector == deployment.spec.selector.match_labels


def test_helm_values_meet_the_charts_published_schema(make_study: MakeStudy) -> None:
    from jsonschema import Draft202012Validator

    values = yaml.safe_load(export(make_study(winner=1), "helm"))
    Draft202012Validator(load_schema(HELM_VALUES)).validate(values)  # as published
    spec = values["servingEngineSpec"]["modelSpec"][0]
    config = spec["vllmConfig"]
    assert config["maxNumSeqs"] == 64
    assert config["enableChunkedPrefill"] is False
    assert config["enablePrefixCaching"] is True  # the chart always writes one: vLLM's default
    assert config["extraArgs"] == ["--served-model-name", "tiny-llama", "--generation-config",
                                   "vllm", "--max-num-batched-tokens", "8192"]
    assert not CHART_WRITES & set(config["extraArgs"])
    assert spec["env"] == [{"name": "VLLM_CPU_KVCACHE_SPACE", "value": "8"},
                           {"name": "VLLM_USE_AOT_COMPILE", "value": "0"}]
    for volume in spec["extraVolumes"]:
        models.V1Volume.model_validate(volume)


def test_kserve_resources_meet_the_crds(make_study: MakeStudy) -> None:
    runtime, service = documents(export(make_study(winner=1), "kserve"))
    check_runtime(runtime)
    check_inference_service(service)
    container = models.V1Container.model_validate(runtime["spec"]["containers"][0])
    assert container.args[0] == "/mnt/models"
    assert container.ports[0].container_port == 8080
    assert service["spec"]["predictor"]["model"]["runtime"] == runtime["metadata"]["name"]
    assert service["spec"]["predictor"]["model"]["storageUri"] == (
        "pvc://vllm-chat-t1-model/tiny-llama")


def test_llamacpp_serves_the_gguf_file_its_trial_chose(make_study: MakeStudy,
                                                       model_dir: Path) -> None:
    from tests.unit.fakes.trials import trial

    (model_dir / "tiny-llama-Q4_0.gguf").write_bytes(b"")
    folder = make_study([trial(1, 1.0, config={"quantization": "Q4_0", "max_batch_size": 4})],
                        engine="llamacpp", name="llama")
    container = documents(export(folder, "k8s"))[0]["spec"]["template"]["spec"]["containers"][0]
    assert container["args"][:2] == ["-m", "/models/tiny-llama-Q4_0.gguf"]
    with pytest.raises(ConfigError, match="--format helm writes values for vLLM's production"):
        export(folder, "helm")


@pytest.mark.parametrize(("over", "needle"), [
    ({"name": "Bad_Name"}, "--name 'Bad_Name': give a lowercase name"),
    ({"port": 0}, "--port 0: give a port from 1 to 65535"),
])
def test_bad_options_are_one_line(make_study: MakeStudy, over: dict[str, Any],
                                  needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        export(make_study(winner=1), "k8s", **over)


def test_unknown_format_and_folder(tmp_path: Path, make_study: MakeStudy) -> None:
    with pytest.raises(ConfigError, match="--format 'compose': choose one of command, docker"):
        export(make_study(winner=1), "compose")
    with pytest.raises(ConfigError, match="not a study folder"):
        export(tmp_path, "k8s")
    with pytest.raises(ConfigError, match="--memory '16 GB': give a Kubernetes quantity"):
        Sizing(memory="16 GB")


def test_a_trial_by_number_whatever_its_outcome(make_study: MakeStudy) -> None:
    folder = make_study(winner=1)
    text = export(folder, "command", trial=3)  # it met no SLO: exported, with no figures
    assert "trial 3 " in text
    assert "measured:" not in text
    with pytest.raises(ConfigError, match=r"--trial 9: not among this folder's trials "
                       r"\(0, 1, 2, 3\)"):
        export(folder, "command", trial=9)
    with pytest.raises(ConfigError, match="--trial and --pick both choose the trial"):
        export(folder, "command", pick="cheapest", trial=1)
