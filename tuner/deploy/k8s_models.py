"""Kubernetes objects checked against the official ``kubernetes`` Python client's models.

The client's models (pydantic, generated from the Kubernetes OpenAPI document of release
1.37) forbid unknown fields, refuse mistyped values and require the required ones, so an
object that validates into ``V1Deployment`` is one the API server's schema accepts.
"""

from __future__ import annotations

from typing import Any

from kubernetes.client import models
from pydantic import BaseModel, ValidationError

from tuner.deploy.schemas import ExportCheckError

KINDS: dict[tuple[str, str], type[BaseModel]] = {
    ("apps/v1", "Deployment"): models.V1Deployment,
    ("v1", "Service"): models.V1Service,
    ("v1", "ConfigMap"): models.V1ConfigMap,
}
"""The kinds ``tune export`` writes itself, by ``(apiVersion, kind)``."""
PARTS: dict[str, type[BaseModel]] = {
    "metadata": models.V1ObjectMeta,
    "container": models.V1Container,
    "volume": models.V1Volume,
    "volume mount": models.V1VolumeMount,
    "env var": models.V1EnvVar,
    "resources": models.V1ResourceRequirements,
}
"""Kubernetes types found inside other documents (a KServe resource, Helm values)."""


def _first(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(p) for p in error["loc"]) or "(top)"
    more = len(exc.errors()) - 1
    return f"{where}: {error['msg']}" + (f" (and {more} more)" if more else "")


def check_object(obj: dict[str, Any]) -> None:
    """Validate a whole object into the client's model of its kind."""
    key = (str(obj.get("apiVersion")), str(obj.get("kind")))
    model = KINDS.get(key)
    if model is None:
        raise ExportCheckError(f"no model of {key[0]} {key[1]} to check it against")
    try:
        model.model_validate(obj)
    except ValidationError as exc:
        raise ExportCheckError(f"the exported {key[1]} is not a valid {model.__name__}: "
                               f"{_first(exc)}") from exc


def check_part(part: str, data: Any, where: str) -> None:
    """Validate ``data`` (found at ``where``) into the client's model of ``part``."""
    try:
        PARTS[part].model_validate(data)
    except ValidationError as exc:
        raise ExportCheckError(f"the exported {where} is not a valid {PARTS[part].__name__}: "
                               f"{_first(exc)}") from exc
