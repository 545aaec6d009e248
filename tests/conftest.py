"""Shared fixtures: the project's tiny model (made locally, cached between runs)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tokenizers import Tokenizer

from tuner.models.tiny import SERVED_NAME, make_tiny_model
from tuner.settings import Settings
from tuner.workload.prompts import PromptSynth

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def tiny_model() -> Path:
    """The tiny Llama; `tune make-model` writes the same folder, so CI makes it once."""
    return make_tiny_model(Settings().cache_dir / "models" / SERVED_NAME)


@pytest.fixture(scope="session")
def tokenizer(tiny_model: Path) -> Tokenizer:
    return Tokenizer.from_file(str(tiny_model / "tokenizer.json"))


@pytest.fixture(scope="session")
def synth(tokenizer: Tokenizer) -> PromptSynth:
    return PromptSynth(tokenizer)
