"""Facts about the served model that the search space and validity rules need, read from
its ``config.json`` (a local folder or the local Hugging Face cache)."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel

from tuner.core import ConfigError, hf_cache_dirs


class ModelInfo(BaseModel):
    path: str
    architecture: str | None
    attention_heads: int
    kv_heads: int
    max_model_len: int
    layers: int
    hidden_size: int


def find_model_config(model: str) -> Path:
    local = Path(model) / "config.json"
    if local.is_file():
        return local
    if "/" in model:
        repo = "models--" + model.replace("/", "--")
        for cache in hf_cache_dirs():
            hits = sorted((cache / repo / "snapshots").glob("*/config.json"), reverse=True)
            if hits:
                return hits[0]
    raise ConfigError(f"no config.json for model {model!r}: pass --model with a local folder or "
                      "a model in the local Hugging Face cache")


def load_model_info(model: str) -> ModelInfo:
    path = find_model_config(model)
    try:
        cfg = json.loads(path.read_text())
        text = cfg.get("text_config", cfg)
        heads = int(text["num_attention_heads"])
        return ModelInfo(
            path=str(path.parent),
            architecture=(cfg.get("architectures") or [None])[0],
            attention_heads=heads,
            kv_heads=int(text.get("num_key_value_heads") or heads),
            max_model_len=int(text.get("max_position_embeddings") or 4096),
            layers=int(text.get("num_hidden_layers", 0)),
            hidden_size=int(text.get("hidden_size", 0)),
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"{path}: not a model config ({exc})") from exc
