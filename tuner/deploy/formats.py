"""The export formats, by name: each turns a :class:`Chosen` configuration into a file's text."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tuner.core import ConfigError
from tuner.deploy.chosen import Chosen
from tuner.deploy.command import engine_command
from tuner.deploy.deployment import HF_SECRET, deployment_objects
from tuner.deploy.docker_run import docker_run
from tuner.deploy.helm_values import CHART, helm_values
from tuner.deploy.kserve import kserve_objects


@dataclass(frozen=True)
class Where:
    """Folders a format may need: the tuner's cache (engine caches), and where an options
    file is written for a ``docker run`` to mount; whether a ``docker run`` shares the host's
    network instead of publishing the port."""

    cache_root: Path
    options_dir: Path
    host_network: bool = False


class _Dumper(yaml.SafeDumper):
    """YAML without anchors and aliases (a file people read and edit)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _comments(lines: list[str]) -> str:
    return "".join(f"# {line}\n" for line in lines)


def _model_note(chosen: Chosen, *, secret_required: bool = False, kserve: bool = False
                ) -> str:
    """What the cluster must hold for the model: the claim with its folder, or a token."""
    if chosen.local_model:
        return (f"the PersistentVolumeClaim {chosen.model_pvc} must hold the model folder as "
                f"{chosen.model_folder}/ (copy {chosen.model} there)")
    if kserve:
        return (f"KServe's storage initializer downloads the model {chosen.model} (hf://) "
                "before the engine starts")
    need = "must" if secret_required else "may"
    return (f"the engine downloads the model {chosen.model} at start; a Secret "
            f"{HF_SECRET['name']} (key {HF_SECRET['key']}) {need} hold a Hugging Face token")


def _yaml(objects: list[dict[str, Any]], lines: list[str]) -> str:
    return _comments(lines) + yaml.dump_all(objects, Dumper=_Dumper, sort_keys=False)


def _k8s(chosen: Chosen, where: Where) -> str:
    return _yaml(deployment_objects(chosen),
                 [*chosen.header(), _model_note(chosen), "kubectl apply -f this file"])


def _helm(chosen: Chosen, where: Where) -> str:
    values = helm_values(chosen)
    return _comments([*chosen.header(), f"values for {CHART}",
                      _model_note(chosen, secret_required=True),
                      "helm install NAME vllm/vllm-stack --version 0.1.12 -f this file"]
                     ) + yaml.dump(values, Dumper=_Dumper, sort_keys=False)


def _kserve(chosen: Chosen, where: Where) -> str:
    return _yaml(kserve_objects(chosen),
                 [*chosen.header(), _model_note(chosen, kserve=True),
                  "kubectl apply -f this file (KServe installed)"])


@dataclass(frozen=True)
class Format:
    what: str
    render: Callable[[Chosen, Where], str]


FORMATS: dict[str, Format] = {
    "command": Format("the engine's command line", lambda c, w: engine_command(c)),
    "docker": Format("a docker run of the engine's image", lambda c, w: docker_run(
        c, cache_root=w.cache_root, options_dir=w.options_dir, host_network=w.host_network)),
    "k8s": Format("a Kubernetes Deployment and Service", _k8s),
    "helm": Format("values for vLLM's production-stack Helm chart", _helm),
    "kserve": Format("a KServe ServingRuntime and InferenceService", _kserve),
}


def export_format(name: str) -> Format:
    found = FORMATS.get(name)
    if found is None:
        raise ConfigError(f"--format {name!r}: choose one of {', '.join(FORMATS)}")
    return found
