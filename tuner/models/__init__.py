"""The face of tuner.models: what other packages use of it; the rest is private."""

from tuner.models.gguf_export import make_gguf_variants
from tuner.models.tiny import SERVED_NAME, make_tiny_model, train_tokenizer

__all__ = [
    "SERVED_NAME", "make_gguf_variants", "make_tiny_model", "train_tokenizer",
]
