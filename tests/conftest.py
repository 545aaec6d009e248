"""Shared fixtures: a cache of the test session's own, and the tiny model made in it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tokenizers import Tokenizer

from tuner.core import Settings
from tuner.models import (
    SERVED_NAME,
    make_gguf_variants,
    make_model,
    synthetic_corpus,
    train_tokenizer,
)
from tuner.workload import PromptSynth

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session", autouse=True)
def tuner_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A temporary ``TUNER_CACHE_DIR`` for the whole session, so that nothing a test runs
    (in this process or in a ``python -m tuner`` child, which inherits the environment)
    reads or writes the user's ``~/.cache/tuner``. The old value is restored at the end."""
    cache = tmp_path_factory.mktemp("tuner-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TUNER_CACHE_DIR", str(cache))
        yield cache


@pytest.fixture(scope="session")
def tiny_tokenizer(tuner_cache: Path) -> Path:
    """A folder holding the tiny model's tokenizer.json and nothing else, for the tests that
    only tokenize or give `--tokenizer DIR`: trained as `tune make-model` trains it, in under a
    second, where the whole model needs transformers (seconds to import). The same file as
    the model's, byte for byte (``tiny_model`` checks it)."""
    folder = tuner_cache / "tokenizer-only" / SERVED_NAME
    folder.mkdir(parents=True, exist_ok=True)
    tok, _ = train_tokenizer(synthetic_corpus(0), 4096)  # as make_model trains the tiny one's
    tok.save(str(folder / "tokenizer.json"))
    return folder


@pytest.fixture(scope="session")
def tiny_model(tuner_cache: Path, tiny_tokenizer: Path) -> Path:
    """The tiny Llama, made where `tune make-model` would put it in the session's cache,
    so the tuner also finds it by name (a few seconds, once per session)."""
    models = Settings().models_dir
    assert models == tuner_cache / "models"
    made = make_model(models / SERVED_NAME)
    assert (made / "tokenizer.json").read_bytes() == \
        (tiny_tokenizer / "tokenizer.json").read_bytes(), "tiny_tokenizer is not the model's"
    return made


@pytest.fixture(scope="session")
def gguf_model(tiny_model: Path) -> Path:
    """The tiny model's folder with its GGUF variants (F16, Q8_0, Q4_0) beside the Hugging
    Face files, as llama.cpp needs them; made by llama.cpp itself, once per session."""
    make_gguf_variants(tiny_model)
    return tiny_model


@pytest.fixture(scope="session")
def tokenizer(tiny_tokenizer: Path) -> Tokenizer:
    """The tiny model's tokenizer (its tokenizer.json, without making the model)."""
    return Tokenizer.from_file(str(tiny_tokenizer / "tokenizer.json"))


@pytest.fixture(scope="session")
def synth(tokenizer: Tokenizer) -> PromptSynth:
    return PromptSynth(tokenizer)
