"""Exports read by checks we did not write: the Kubernetes manifests by kubernetes-validate
(Kubernetes 1.37's published OpenAPI schemas, offline, strict: an unknown field fails), the
KServe resources by KServe's full CRDs at v0.20.0 (tests/data/kserve-v0.20.0, not the trimmed
copy ``tune export`` carries). The Helm values are checked in test_export_checks.py against the
chart's own values.schema.json; the chart's templates are not rendered here (no helm binary, no
chart repository)."""

from __future__ import annotations

import hashlib
import lzma
from functools import cache
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from jsonschema import Draft7Validator

from tests.unit.deploy.conftest import MakeStudy
from tests.unit.deploy.test_export_checks import broken
from tests.unit.deploy.test_export_formats import documents, export
from tuner.deploy.schemas import closed

KUBERNETES = "1.37"
KSERVE = Path(__file__).parents[2] / "data" / "kserve-v0.20.0"
BLOBS = {  # git blob ids of the upstream files at v0.20.0
    "serving.kserve.io_inferenceservices.yaml": "1e37d05b7a741eb40b9eb01c378dc9dc80eab3d9",
    "serving.kserve.io_servingruntimes.yaml": "59deb0d14aed7be7edfd32ca0577f9ba789fa747",
}
KINDS = {"InferenceService": "serving.kserve.io_inferenceservices.yaml",
         "ServingRuntime": "serving.kserve.io_servingruntimes.yaml"}


@cache
def crd_schema(kind: str) -> Any:
    """The openAPIV3Schema of ``kind``'s storage version, from KServe's published CRD."""
    name = KINDS[kind]
    data = lzma.decompress((KSERVE / f"{name}.xz").read_bytes())
    blob = hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()
    assert blob == BLOBS[name], f"{name}: not the file KServe published at v0.20.0"
    crd = yaml.load(data, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    (version,) = [v for v in crd["spec"]["versions"] if v.get("storage")]
    return version["schema"]["openAPIV3Schema"]


def crd_errors(doc: dict[str, Any]) -> list[str]:
    """What KServe's full CRD finds wrong with ``doc``, closed as ``tune export`` closes its own
    copy (a key the CRD does not list fails, where Kubernetes would prune it)."""
    validator = Draft7Validator(closed(crd_schema(doc["kind"])))
    return [f"{'.'.join(map(str, e.absolute_path))}: {e.message}"
            for e in validator.iter_errors(doc)]


@pytest.mark.parametrize("study", ["cpu", "gpu"])
def test_k8s_manifests_pass_kubernetes_validate(make_study: MakeStudy, study: str) -> None:
    folder = (make_study(winner=1) if study == "cpu" else
              make_study(winner=1, device="gpu", image="vllm/vllm-openai:v0.11.0"))
    docs = documents(export(folder, "k8s"))
    assert {d["kind"] for d in docs} >= {"Deployment", "Service"}
    for doc in docs:
        assert kubernetes_validate.validate(doc, KUBERNETES, strict=True) == KUBERNETES


def test_kubernetes_validate_fails_what_a_cluster_would_refuse(make_study: MakeStudy) -> None:
    deployment = documents(export(make_study(winner=1), "k8s"))[0]
    container = "spec.template.spec.containers.0"
    for bad in (broken(deployment, f"{container}.args", None, rename="argz"),
                broken(deployment, f"{container}.ports.0.containerPort", "8000")):
        with pytest.raises(kubernetes_validate.ValidationError):
            kubernetes_validate.validate(bad, KUBERNETES, strict=True)


def test_kserve_resources_meet_kserves_full_crds(make_study: MakeStudy) -> None:
    runtime, service = documents(export(make_study(winner=1), "kserve"))
    assert (runtime["kind"], service["kind"]) == ("ServingRuntime", "InferenceService")
    assert crd_errors(runtime) == []
    assert crd_errors(service) == []


def test_the_full_crd_fails_a_misspelt_or_mistyped_field(make_study: MakeStudy) -> None:
    runtime, service = documents(export(make_study(winner=1), "kserve"))
    assert crd_errors(broken(service, "spec.predictor.model.storageUri", None,
                             rename="storageURI"))
    assert crd_errors(broken(runtime, "spec.containers.0.ports.0.containerPort", "8080"))
