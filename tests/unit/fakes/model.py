"""A model folder the fake engine 'serves': only its config.json is read (its shape)."""

from __future__ import annotations

import json
from pathlib import Path

CONFIG = {"architectures": ["LlamaForCausalLM"], "num_attention_heads": 4,
          "num_key_value_heads": 2, "max_position_embeddings": 2048, "num_hidden_layers": 2,
          "hidden_size": 64}


def fake_model(folder: Path) -> Path:
    """``folder`` made a model folder of the fake engine's; returned."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(CONFIG))
    return folder
