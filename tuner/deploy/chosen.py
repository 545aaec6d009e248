"""The configuration to deploy: a study's trial, with what every export format needs of it.

A format renders the engine exactly as the trial ran it (the same knobs, rendered by the same
engine spec, in the same image), listening on all interfaces at ``port``, under a name that
Kubernetes accepts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tuner.core import ConfigError
from tuner.engines import OPTIONS_FILE, Device, EngineSpec, Rendered, render
from tuner.metrics import money
from tuner.study.results import TradeOff

NAME = re.compile(r"^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$")
"""A DNS-1035 label short enough for the suffixes formats add (``-runtime``)."""
MEMORY = re.compile(r"^[0-9]+(\.[0-9]+)?([KMGT]i?)?$")
"""A Kubernetes memory quantity (``16Gi``, ``32G``)."""
CLAIM = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")


def dns_name(text: str) -> str:
    """``text`` made a name Kubernetes takes for every object (lowercase, dashes)."""
    name = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")
    if not name[:1].isalpha():
        name = f"tuned-{name}"
    return name[:40].rstrip("-")


@dataclass(frozen=True)
class Sizing:
    """What a cluster reserves for one replica (the study measured on its own host)."""

    cpu: int = 4
    memory: str = "16Gi"
    model_pvc: str | None = None
    """The PersistentVolumeClaim holding the model folder; default ``<name>-model``."""

    def __post_init__(self) -> None:
        if self.cpu < 1:
            raise ConfigError(f"--cpu {self.cpu}: give at least one core")
        if not MEMORY.match(self.memory):
            raise ConfigError(f"--memory {self.memory!r}: give a Kubernetes quantity such as "
                              "16Gi")
        if self.model_pvc is not None and not CLAIM.match(self.model_pvc):
            raise ConfigError(f"--model-pvc {self.model_pvc!r}: give a claim name of lowercase "
                              "letters, digits, dashes and dots")


@dataclass(frozen=True)
class Chosen:
    spec: EngineSpec
    study: str
    trial: int
    defaults: bool
    knobs: dict[str, Any]
    """The trial's recorded configuration (for the defaults: each knob's default)."""
    device: Device
    accelerators: int
    model: str
    """The model folder, or Hugging Face id, the study served."""
    served_name: str
    image: str | None
    """The image the trial's container ran (docker), else the spec's for the device."""
    name: str
    port: int = 8000
    figures: TradeOff | None = None
    hardware: str | None = None
    sizing: Sizing = field(default_factory=Sizing)

    def __post_init__(self) -> None:
        if not NAME.match(self.name):
            raise ConfigError(f"--name {self.name!r}: give a lowercase name of letters, digits "
                              "and dashes, starting with a letter, at most 40 characters")

    @property
    def config(self) -> dict[str, Any]:
        """The knobs the engine is started with: none for the defaults trial."""
        return {} if self.defaults else self.knobs

    @property
    def local_model(self) -> bool:
        """The study served a model folder (not a Hugging Face id)."""
        return Path(self.model).exists() or self.model.startswith(("/", ".", "~"))

    @property
    def model_folder(self) -> str:
        """The model folder's own name (the PVC holds it under this name)."""
        return Path(self.model).name

    @property
    def model_pvc(self) -> str:
        return self.sizing.model_pvc or f"{self.name}-model"

    def launch(self, model_arg: str, port: int | None = None,
               options_path: str | None = None) -> Rendered:
        """The engine's container launch, serving ``model_arg`` on ``port`` of all
        interfaces; an options file (TensorRT-LLM) is read from ``options_path``."""
        rendered = render(self.spec, self.config, device=self.device, mode="container",
                          values={"python": "python3", "model": model_arg,
                                  "served_name": self.served_name,
                                  "port": str(port or self.port), "host": "0.0.0.0"},
                          model_root=Path(self.model) if self.local_model else None)
        if OPTIONS_FILE in rendered.argv:
            assert self.spec.options_file is not None
            rendered = rendered.with_options_path(options_path
                                                  or self.spec.options_file.container_path)
        return rendered

    def header(self) -> list[str]:
        """Comment lines: where the configuration comes from and what it was measured at."""
        knobs = ("the engine's defaults" if self.defaults else
                 ", ".join(f"{k}={v}" for k, v in sorted(self.knobs.items()) if v is not None))
        lines = [f"tune export: study {self.study}, trial {self.trial} ({knobs})"]
        if self.figures is not None:
            f = self.figures
            shown = ", ".join(f"{m.label} {_figure(f.figure(m), m.unit)}" for m in f.measured())
            lines.append(f"measured: {money(f.cost_per_m_output_tokens)}/M output tokens at "
                         f"load {f.load_text()}, {shown}"
                         + (f" on {self.hardware}" if self.hardware else ""))
        return lines


def _figure(value: float | None, unit: str) -> str:
    return "-" if value is None else f"{value:.1f} {unit}"


def quantity(docker_size: str) -> str:
    """Docker's ``16g`` as a Kubernetes quantity (``16Gi``)."""
    found = re.fullmatch(r"(\d+)([bkmg]?)b?", docker_size.strip().lower())
    if found is None:
        raise ConfigError(f"shm_size {docker_size!r}: give a number with b, k, m or g")
    number, unit = found.groups()
    return number + {"": "", "b": "", "k": "Ki", "m": "Mi", "g": "Gi"}[unit]
