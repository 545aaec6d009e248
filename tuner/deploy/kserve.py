"""``--format kserve``: a KServe ``ServingRuntime`` running the trial's engine, and the
``InferenceService`` that serves the model with it.

KServe's storage initializer puts the model at ``/mnt/models`` (from ``pvc://<claim>/<folder>``
for a model folder, ``hf://<id>`` for a Hugging Face id); the runtime's one container
(``kserve-container``) serves it on port 8080 with the trial's launch. The runtime supports a
model format of the engine's name, never picked automatically: the InferenceService names it.
Both are checked against KServe's CRD schemas (v0.20.0, closed), and their Kubernetes parts
against the ``kubernetes`` client's models.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from tuner.deploy.chosen import Chosen
from tuner.deploy.deployment import engine_pod, labels, object_annotations
from tuner.deploy.k8s_models import check_object, check_part
from tuner.deploy.schemas import INFERENCE_SERVICE, SERVING_RUNTIME, check

MODEL_DIR = "/mnt/models"
PORT = 8080


def storage_uri(chosen: Chosen) -> str:
    if chosen.local_model:
        return f"pvc://{chosen.model_pvc}/{chosen.model_folder}"
    return f"hf://{chosen.model}"


def kserve_objects(chosen: Chosen) -> list[dict[str, Any]]:
    """ConfigMap (when needed), ServingRuntime and InferenceService, each checked."""
    served = replace(chosen, port=PORT)
    parts = engine_pod(served, model_arg=MODEL_DIR, port_name="http1",
                       container_name="kserve-container")
    runtime_name = f"{chosen.name}-runtime"
    runtime = {
        "apiVersion": "serving.kserve.io/v1alpha1", "kind": "ServingRuntime",
        "metadata": {"name": runtime_name, "labels": labels(chosen),
                     "annotations": object_annotations(chosen)},
        "spec": {"supportedModelFormats": [{"name": chosen.spec.name, "autoSelect": False}],
                 "containers": [parts.container], "volumes": parts.volumes}}
    service = {
        "apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
        "metadata": {"name": chosen.name, "labels": labels(chosen),
                     "annotations": object_annotations(chosen)},
        "spec": {"predictor": {"model": {
            "modelFormat": {"name": chosen.spec.name}, "runtime": runtime_name,
            "storageUri": storage_uri(chosen),
            "resources": parts.container["resources"]}}}}
    for obj in parts.objects:
        check_object(obj)
    check_runtime(runtime)
    check_inference_service(service)
    return [*parts.objects, runtime, service]


def check_runtime(runtime: dict[str, Any]) -> None:
    check(SERVING_RUNTIME, runtime, "ServingRuntime")
    check_part("metadata", runtime["metadata"], "ServingRuntime's metadata")
    for i, container in enumerate(runtime["spec"]["containers"]):
        check_part("container", container, f"ServingRuntime's spec.containers.{i}")
    for i, volume in enumerate(runtime["spec"].get("volumes", [])):
        check_part("volume", volume, f"ServingRuntime's spec.volumes.{i}")


def check_inference_service(service: dict[str, Any]) -> None:
    check(INFERENCE_SERVICE, service, "InferenceService")
    check_part("metadata", service["metadata"], "InferenceService's metadata")
    model = service["spec"]["predictor"]["model"]
    if "resources" in model:
        check_part("resources", model["resources"], "InferenceService's predictor resources")
