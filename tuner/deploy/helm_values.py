"""``--format helm``: values for vLLM's production stack (chart ``vllm-stack`` 0.1.12).

One ``servingEngineSpec.modelSpec`` entry. The chart starts ``vllm serve <modelURL>`` itself and
writes some flags from ``vllmConfig`` fields; the trial's other flags go to ``extraArgs``
as vLLM spells them, its environment knobs to ``env``. The chart always writes a prefix-caching
flag, so ``enablePrefixCaching`` is the trial's value or vLLM's default; ``tensorParallelSize``
is always set, which makes the chart mount the shared memory. A model folder comes from an
existing PersistentVolumeClaim (``extraVolumes``), as in ``--format k8s``. The values are
checked against the chart's published schema (closed) and their Kubernetes parts against the
``kubernetes`` client's models.
"""

from __future__ import annotations

from typing import Any

from docker.utils import parse_repository_tag

from tuner.core import ConfigError
from tuner.deploy.chosen import Chosen, quantity
from tuner.deploy.k8s_models import check_part
from tuner.deploy.schemas import HELM_VALUES, check

CHART = "vllm-stack 0.1.12 (https://github.com/vllm-project/production-stack)"
MODEL_MOUNT = "/models"
FIELDS: dict[str, tuple[str, type]] = {
    "--max-num-seqs": ("maxNumSeqs", int),
    "--max-model-len": ("maxModelLen", int),
    "--tensor-parallel-size": ("tensorParallelSize", int),
    "--gpu-memory-utilization": ("gpuMemoryUtilization", float),
    "--dtype": ("dtype", str),
}
"""vLLM flags with a ``vllmConfig`` field of their own, and its type in the chart's schema."""
SWITCHES = {"--enable-prefix-caching": ("enablePrefixCaching", True),
            "--no-enable-prefix-caching": ("enablePrefixCaching", False),
            "--enable-chunked-prefill": ("enableChunkedPrefill", True),
            "--no-enable-chunked-prefill": ("enableChunkedPrefill", False)}
CHART_WRITES = {"--host", "--port"}
"""Flags the chart's template writes itself (with its own values)."""


def flag_items(argv: list[str]) -> list[tuple[str, str | None]]:
    """``--flag value`` pairs and bare switches, in order (values never start with ``--``)."""
    out: list[tuple[str, str | None]] = []
    i = 0
    while i < len(argv):
        flag = argv[i]
        value = argv[i + 1] if i + 1 < len(argv) and not argv[i + 1].startswith("--") else None
        out.append((flag, value))
        i += 1 if value is None else 2
    return out


def vllm_config(chosen: Chosen, argv: list[str]) -> dict[str, Any]:
    """``vllmConfig`` from the launch's flags (after the model)."""
    config: dict[str, Any] = {}
    extra: list[str] = []
    for flag, value in flag_items(argv):
        if flag in CHART_WRITES:
            continue
        if flag in SWITCHES:
            key, on = SWITCHES[flag]
            config[key] = on
        elif flag in FIELDS and value is not None:
            key, kind = FIELDS[flag]
            config[key] = kind(value)
        else:
            extra += [flag] if value is None else [flag, value]
    knobs = chosen.spec.knobs
    config.setdefault("enablePrefixCaching", bool(knobs["prefix_caching"].default_on(
        chosen.device)))
    config.setdefault("tensorParallelSize", int(knobs["tensor_parallel"].default_on(
        chosen.device) or 1))
    if extra:
        config["extraArgs"] = extra
    return config


def helm_values(chosen: Chosen) -> dict[str, Any]:
    if chosen.spec.name != "vllm":
        raise ConfigError(f"--format helm writes values for vLLM's production stack; this is "
                          f"a study of {chosen.spec.display_name}: use --format k8s or kserve")
    launch = chosen.spec.container
    assert launch is not None, "vLLM's spec has a container launch"
    assert chosen.image is not None
    model_url = f"{MODEL_MOUNT}/{chosen.model_folder}" if chosen.local_model else chosen.model
    rendered = chosen.launch(model_url)
    assert rendered.argv[0] == model_url, "vLLM's container argv starts with the model"
    repository, tag = parse_repository_tag(chosen.image)
    spec: dict[str, Any] = {
        "name": chosen.name, "repository": repository, "tag": tag or "latest",
        "modelURL": model_url, "replicaCount": 1,
        "requestCPU": chosen.sizing.cpu, "requestMemory": chosen.sizing.memory,
        "requestGPU": chosen.accelerators if chosen.device == "gpu" else 0,
        "vllmConfig": vllm_config(chosen, rendered.argv[1:]),
        "annotations": {"tuner/study": chosen.study, "tuner/trial": str(chosen.trial)},
    }
    if launch.shm_size:
        spec["shmSize"] = quantity(launch.shm_size)
    if rendered.env:
        spec["env"] = [{"name": k, "value": v} for k, v in sorted(rendered.env.items())]
    if chosen.device == "cpu":
        spec["runtimeClassName"] = ""  # not the chart's default "nvidia"
    if chosen.local_model:
        spec["extraVolumes"] = [{"name": "model", "persistentVolumeClaim": {
            "claimName": chosen.model_pvc, "readOnly": True}}]
        spec["extraVolumeMounts"] = [{"name": "model", "mountPath": MODEL_MOUNT,
                                      "readOnly": True}]
    else:
        spec["hf_token"] = {"secretName": "hf-token", "secretKey": "token"}
    values = {"servingEngineSpec": {"modelSpec": [spec]}}
    check_values(values)
    return values


def check_values(values: dict[str, Any]) -> None:
    """The chart's schema (closed), then the Kubernetes parts against the client's models."""
    check(HELM_VALUES, values, "Helm values")
    for i, spec in enumerate(values["servingEngineSpec"]["modelSpec"]):
        where = f"servingEngineSpec.modelSpec.{i}"
        for j, volume in enumerate(spec.get("extraVolumes", [])):
            check_part("volume", volume, f"{where}.extraVolumes.{j}")
        for j, mount in enumerate(spec.get("extraVolumeMounts", [])):
            check_part("volume mount", mount, f"{where}.extraVolumeMounts.{j}")
        for j, var in enumerate(spec.get("env", [])):
            check_part("env var", var, f"{where}.env.{j}")
