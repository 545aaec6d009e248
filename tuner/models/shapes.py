"""Model shapes: the architecture and exact configuration of a published model (or the
project's tiny one), as data. One YAML per shape in ``tuner/models/shapes/``, each naming the
published source of its numbers; ``tune make-model --shape NAME`` builds a random-weight model
of that shape."""

from __future__ import annotations

from importlib import resources
from typing import Literal

import yaml
from pydantic import Field

from tuner.core import ConfigError, StrictModel


class ShapeConfig(StrictModel):
    """The Hugging Face config fields a shape fixes; the rest are the library's defaults."""

    vocab_size: int = Field(gt=0)
    hidden_size: int = Field(gt=0)
    intermediate_size: int = Field(gt=0)
    num_hidden_layers: int = Field(gt=0)
    num_attention_heads: int = Field(gt=0)
    num_key_value_heads: int = Field(gt=0)
    max_position_embeddings: int = Field(gt=0)
    rope_theta: float | None = None
    rms_norm_eps: float | None = None
    tie_word_embeddings: bool = True
    use_sliding_window: bool | None = None


class Shape(StrictModel):
    """One model shape: its name, where its numbers come from, its architecture (the
    Hugging Face model class), the tokenizer's training text and its configuration."""

    name: str
    source: str = Field(description="where the numbers are published")
    architecture: Literal["llama", "qwen2"]
    corpus: Literal["synthetic", "packages"] = Field(
        description="the tokenizer's training text: seeded pseudo-words, or the Python "
                    "standard library's sources that ship with this machine")
    config: ShapeConfig

    def hf_config(self) -> dict[str, object]:
        """The configuration's fields that are set, as Hugging Face names them."""
        return self.config.model_dump(exclude_none=True)


def shape_names() -> list[str]:
    """The shapes that ship with the package."""
    folder = resources.files("tuner.models") / "shapes"
    return sorted(p.name.removesuffix(".yaml") for p in folder.iterdir()
                  if p.name.endswith(".yaml"))


def shape_named(name: str) -> Shape:
    """The shape ``name``, or the one shape whose name ends with ``-name`` (``360m``); a
    ConfigError naming the known ones when there is none."""
    known = shape_names()
    matches = [name] if name in known else [n for n in known if n.endswith(f"-{name}")]
    if len(matches) != 1:
        raise ConfigError(f"--shape {name}: no such shape; give one of {', '.join(known)}")
    text = (resources.files("tuner.models") / "shapes" / f"{matches[0]}.yaml").read_text()
    shape = Shape.model_validate(yaml.safe_load(text))
    if shape.name != matches[0]:
        raise ConfigError(f"shape file {matches[0]}.yaml names itself {shape.name}")
    return shape
