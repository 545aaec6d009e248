"""Published JSON schemas (``schemas/``, see its README) that exported files must satisfy.

A schema is read once and *closed*: every object schema that lists its properties forbids
others, unless Kubernetes keeps unknown fields there (``x-kubernetes-preserve-unknown-fields``).
The published schemas leave objects open, so a misspelt key would pass them; a closed schema
accepts only what the published one does, less the keys it does not know.
"""

from __future__ import annotations

import json
from functools import cache
from importlib.resources import files
from typing import Any

from jsonschema import Draft7Validator, Draft202012Validator
from jsonschema.exceptions import ValidationError
from jsonschema.protocols import Validator

from tuner.core import TunerError

HELM_VALUES = "vllm-stack-0.1.12.values.schema.json"
SERVING_RUNTIME = "kserve-v0.20.0-servingruntime-v1alpha1.schema.json"
INFERENCE_SERVICE = "kserve-v0.20.0-inferenceservice-v1beta1.schema.json"

_SUBSCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions")
_SUBSCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_SUBSCHEMAS = ("items", "additionalProperties", "not", "if", "then", "else", "contains")


class ExportCheckError(TunerError):
    """An exported file does not satisfy its published schema (a bug of the exporter)."""


def closed(schema: Any) -> Any:
    """A copy of ``schema`` in which objects that list their properties forbid any other."""
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    for key in _SUBSCHEMA_MAPS:
        if isinstance(schema.get(key), dict):
            out[key] = {k: closed(v) for k, v in schema[key].items()}
    for key in _SUBSCHEMA_LISTS:
        if isinstance(schema.get(key), list):
            out[key] = [closed(v) for v in schema[key]]
    for key in _SUBSCHEMAS:
        if isinstance(schema.get(key), dict):
            out[key] = closed(schema[key])
    if ("properties" in schema and "additionalProperties" not in schema
            and not schema.get("x-kubernetes-preserve-unknown-fields")):
        out["additionalProperties"] = False
    return out


def load_schema(name: str) -> dict[str, Any]:
    """The published schema ``name`` as it is (not closed)."""
    data: dict[str, Any] = json.loads(
        (files("tuner.deploy") / "schemas" / name).read_text(encoding="utf-8"))
    return data


@cache
def validator(name: str) -> Validator:
    """A validator of the closed schema ``name`` (the chart's is JSON Schema 2020-12; a CRD's
    OpenAPI v3 schema is read as draft 7, whose keywords it uses)."""
    schema = closed(load_schema(name))
    if schema.get("$schema", "").endswith("2020-12/schema"):
        return Draft202012Validator(schema)
    return Draft7Validator(schema)


def problems(name: str, document: Any) -> list[str]:
    """Every place where ``document`` breaks the closed schema ``name``, as ``path: why``."""
    found = sorted(validator(name).iter_errors(document), key=lambda e: list(e.path))
    return [_where(e) for e in found]


def check(name: str, document: Any, what: str) -> None:
    """Raise :class:`ExportCheckError` naming the first problem of ``document``."""
    found = problems(name, document)
    if found:
        raise ExportCheckError(f"the exported {what} breaks {name} at {found[0]}"
                               + (f" (and {len(found) - 1} more)" if len(found) > 1 else ""))


def _where(error: ValidationError) -> str:
    path = ".".join(str(p) for p in error.absolute_path) or "(top)"
    return f"{path}: {error.message}"
