"""``--format k8s``: a Deployment and a Service (and a ConfigMap for an options file).

The pod runs the trial's image and launch; the model folder comes from a PersistentVolumeClaim
(``--model-pvc``, default ``<name>-model``) that holds it under its own folder name, mounted
read-only where the trial's container had it; a Hugging Face id is downloaded by the engine,
with ``HF_TOKEN`` from the Secret ``hf-token`` when there is one. Shared memory is a
memory-backed ``emptyDir`` of the spec's size (in place of Docker's ``--shm-size``; the
Docker-only ``--ipc host`` has no pod equivalent). The engine's caches are ``emptyDir``s: they
live as long as the pod. Every object is checked against the ``kubernetes`` client's models.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from tuner.core import ConfigError
from tuner.deploy.chosen import Chosen, quantity
from tuner.deploy.k8s_models import check_object

HF_SECRET = {"name": "hf-token", "key": "token", "optional": True}
PROBE_PERIOD_S = 10


@dataclass
class PodParts:
    """The engine's container and the volumes it mounts (the model's not included)."""

    container: dict[str, Any]
    volumes: list[dict[str, Any]] = field(default_factory=list)
    objects: list[dict[str, Any]] = field(default_factory=list)
    """Objects the pod needs besides (the options file's ConfigMap)."""


def labels(chosen: Chosen) -> dict[str, str]:
    return {"app.kubernetes.io/name": chosen.name,
            "app.kubernetes.io/component": "llm-engine"}


def object_annotations(chosen: Chosen) -> dict[str, str]:
    return {"tuner/study": chosen.study, "tuner/trial": str(chosen.trial)}


def resources(chosen: Chosen) -> dict[str, Any]:
    requests = {"cpu": str(chosen.sizing.cpu), "memory": chosen.sizing.memory}
    limits = {"memory": chosen.sizing.memory}
    if chosen.device == "gpu":
        requests["nvidia.com/gpu"] = limits["nvidia.com/gpu"] = str(chosen.accelerators)
    return {"requests": requests, "limits": limits}


def engine_pod(chosen: Chosen, *, model_arg: str, port_name: str = "http",
               container_name: str = "engine") -> PodParts:
    """The engine's container as the trial ran it, serving ``model_arg`` on the port."""
    spec = chosen.spec
    launch = spec.container
    if launch is None or chosen.image is None:
        raise ConfigError(f"{spec.display_name} has no container image in its spec: it cannot "
                          "run on Kubernetes from here; use --format command")
    rendered = chosen.launch(model_arg)
    env: list[dict[str, Any]] = [{"name": k, "value": v} for k, v in sorted(rendered.env.items())]
    if not chosen.local_model:
        env.append({"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": dict(HF_SECRET)}})
    probe = {"httpGet": {"path": spec.readiness.health_path, "port": port_name},
             "periodSeconds": PROBE_PERIOD_S}
    container: dict[str, Any] = {
        "name": container_name, "image": chosen.image,
        "args": [*(launch.entrypoint or [])[1:], *rendered.argv],
        "env": env,
        "ports": [{"name": port_name, "containerPort": chosen.port, "protocol": "TCP"}],
        "resources": resources(chosen),
        "startupProbe": {**probe, "failureThreshold": math.ceil(
            spec.readiness.timeout_s / PROBE_PERIOD_S)},
        "readinessProbe": probe,
        "volumeMounts": [],
    }
    if launch.entrypoint:
        container["command"] = launch.entrypoint[:1]
    parts = PodParts(container)
    if launch.shm_size:
        parts.volumes.append({"name": "dshm", "emptyDir": {
            "medium": "Memory", "sizeLimit": quantity(launch.shm_size)}})
        container["volumeMounts"].append({"name": "dshm", "mountPath": "/dev/shm"})
    for name, target in sorted(launch.cache_mounts.items()):
        if name == "huggingface" and chosen.local_model:
            continue
        parts.volumes.append({"name": f"cache-{name}", "emptyDir": {}})
        container["volumeMounts"].append({"name": f"cache-{name}", "mountPath": target})
    if rendered.options is not None and spec.options_file is not None:
        config_map = f"{chosen.name}-options"
        parts.objects.append({"apiVersion": "v1", "kind": "ConfigMap",
                              "metadata": {"name": config_map, "labels": labels(chosen)},
                              "data": {"options.yaml": rendered.options}})
        parts.volumes.append({"name": "options", "configMap": {"name": config_map}})
        container["volumeMounts"].append({"name": "options", "readOnly": True,
                                          "mountPath": spec.options_file.container_path,
                                          "subPath": "options.yaml"})
    return parts


def deployment_objects(chosen: Chosen) -> list[dict[str, Any]]:
    """ConfigMap (when needed), Deployment and Service, each checked."""
    launch = chosen.spec.container
    model_arg = (launch.model_mount if launch and chosen.local_model else chosen.model)
    parts = engine_pod(chosen, model_arg=model_arg)
    volumes = list(parts.volumes)
    if chosen.local_model:
        assert launch is not None
        volumes.insert(0, {"name": "model", "persistentVolumeClaim": {
            "claimName": chosen.model_pvc, "readOnly": True}})
        parts.container["volumeMounts"].insert(0, {
            "name": "model", "mountPath": launch.model_mount, "subPath": chosen.model_folder,
            "readOnly": True})
    meta = {"name": chosen.name, "labels": labels(chosen),
            "annotations": object_annotations(chosen)}
    deployment = {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
        "spec": {"replicas": 1, "selector": {"matchLabels": labels(chosen)},
                 "template": {"metadata": {"labels": labels(chosen),
                                           "annotations": object_annotations(chosen)},
                              "spec": {"containers": [parts.container], "volumes": volumes}}}}
    service = {
        "apiVersion": "v1", "kind": "Service", "metadata": dict(meta),
        "spec": {"type": "ClusterIP", "selector": labels(chosen),
                 "ports": [{"name": "http", "port": chosen.port, "targetPort": "http",
                            "protocol": "TCP"}]}}
    objects = [*parts.objects, deployment, service]
    for obj in objects:
        check_object(obj)
    return objects
