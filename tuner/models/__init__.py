"""The face of tuner.models: what other packages use of it; the rest is private."""

from tuner.models.corpus import synthetic_corpus
from tuner.models.gguf_export import make_gguf_variants
from tuner.models.make import SERVED_NAME, make_model
from tuner.models.shapes import shape_named
from tuner.models.tokenizer import train_tokenizer

__all__ = [
    "SERVED_NAME", "make_gguf_variants", "make_model", "shape_named", "synthetic_corpus",
    "train_tokenizer",
]
