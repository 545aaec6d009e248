"""The checks an export passes catch what a deployment would trip on: an unknown or misspelt
field, a mistyped value, a missing required one."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from tests.unit.deploy.conftest import MakeStudy
from tests.unit.deploy.test_export_formats import documents, export
from tuner.deploy.helm_values import check_values
from tuner.deploy.k8s_models import check_object
from tuner.deploy.kserve import check_inference_service, check_runtime
from tuner.deploy.schemas import HELM_VALUES, ExportCheckError, closed, load_schema


@pytest.fixture
def k8s(make_study: MakeStudy) -> list[dict[str, Any]]:
    return documents(export(make_study(winner=1), "k8s"))


def broken(doc: dict[str, Any], path: str, value: Any, *, rename: str | None = None
           ) -> dict[str, Any]:
    """A copy of ``doc`` with the key at ``path`` (dots; list indices as numbers) set to
    ``value``, or renamed to ``rename``."""
    out = copy.deepcopy(doc)
    *parents, leaf = path.split(".")
    node: Any = out
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if rename is not None:
        node[rename] = node.pop(leaf)
    else:
        node[leaf] = value
    return out


CONTAINER = "spec.template.spec.containers.0"


@pytest.mark.parametrize(("path", "value", "rename", "needle"), [
    (f"{CONTAINER}.args", None, "argz", "argz: Extra inputs are not permitted"),
    (f"{CONTAINER}.ports.0.containerPort", "8000", None, "containerPort: Input should be a "
     "valid integer"),
    (f"{CONTAINER}.resources.requests.cpu", 4, None, "Input should be a valid string"),
    (f"{CONTAINER}.name", None, "nmae", "name: Field required"),
    ("spec.selector", None, "selectors", "spec.selector: Field required"),
])
def test_a_broken_deployment_fails_the_clients_model(k8s: list[dict[str, Any]], path: str,
                                                     value: Any, rename: str | None,
                                                     needle: str) -> None:
    check_object(k8s[0])
    with pytest.raises(ExportCheckError, match=needle):
        check_object(broken(k8s[0], path, value, rename=rename))


def test_a_broken_service_fails_too(k8s: list[dict[str, Any]]) -> None:
    check_object(k8s[1])
    with pytest.raises(ExportCheckError, match="is not a valid V1Service: spec.ports.0.prot"):
        check_object(broken(k8s[1], "spec.ports.0.protocol", None, rename="prot"))


def test_helm_values_with_a_misspelt_key_pass_the_published_schema_not_the_closed_one(
        make_study: MakeStudy) -> None:
    values = yaml.safe_load(export(make_study(winner=1), "helm"))
    check_values(values)
    typo = broken(values, "servingEngineSpec.modelSpec.0.vllmConfig.maxNumSeqs", None,
                  rename="maxNumSeq")
    Draft202012Validator(load_schema(HELM_VALUES)).validate(typo)  # the chart's schema is open
    with pytest.raises(ExportCheckError, match="maxNumSeq' was unexpected"):
        check_values(typo)
    with pytest.raises(ExportCheckError, match="requestCPU: '4' is not of type 'integer'"):
        check_values(broken(values, "servingEngineSpec.modelSpec.0.requestCPU", "4"))
    with pytest.raises(ExportCheckError, match="not a valid V1Volume"):
        check_values(broken(values, "servingEngineSpec.modelSpec.0.extraVolumes.0.pvc", {}))


def test_kserve_resources_with_a_misspelt_key_fail(make_study: MakeStudy) -> None:
    runtime, service = documents(export(make_study(winner=1), "kserve"))
    with pytest.raises(ExportCheckError, match="storageURI' was unexpected"):
        check_inference_service(broken(service, "spec.predictor.model.storageUri", None,
                                        rename="storageURI"))
    with pytest.raises(ExportCheckError, match="supportedModelFormat' was unexpected"):
        check_runtime(broken(runtime, "spec.supportedModelFormats", None,
                             rename="supportedModelFormat"))
    with pytest.raises(ExportCheckError, match="imagee' was unexpected"):
        check_runtime(broken(runtime, "spec.containers.0.image", None, rename="imagee"))


def test_closing_keeps_what_kubernetes_keeps_open() -> None:
    schema = {"type": "object", "properties": {
        "a": {"type": "object", "properties": {"b": {"type": "string"}}},
        "raw": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                "properties": {"c": {"type": "string"}}},
        "map": {"type": "object", "additionalProperties": {"type": "string"}},
        "items": {"type": "array", "items": {"properties": {"d": {"type": "string"}}}}}}
    shut = closed(schema)
    assert shut["additionalProperties"] is False
    assert shut["properties"]["a"]["additionalProperties"] is False
    assert "additionalProperties" not in shut["properties"]["raw"]
    assert shut["properties"]["map"]["additionalProperties"] == {"type": "string"}
    assert shut["properties"]["items"]["items"]["additionalProperties"] is False
    assert "additionalProperties" not in schema  # the published one is left as it is


def test_the_saved_schemas_say_where_they_come_from() -> None:
    folder = Path(__file__).resolve().parents[3] / "tuner" / "deploy" / "schemas"
    readme = (folder / "README.md").read_text()
    for path in folder.glob("*.json"):
        assert path.name in readme
    assert "vllm-stack-0.1.12/helm/values.schema.json" in readme
    assert "kserve/kserve/blob/v0.20.0" in readme
