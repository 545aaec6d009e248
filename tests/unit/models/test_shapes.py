"""Model shapes as data: every shipped shape loads, names itself, and has the numbers of the
published configuration it cites; an unknown shape is one clear error naming the known ones;
the tokenizer is trained to the shape's exact vocabulary size, reserved tokens filling what the
training text cannot."""

from __future__ import annotations

import pytest

from tuner.core import ConfigError
from tuner.models import shape_named, synthetic_corpus, train_tokenizer
from tuner.models.corpus import package_corpus, package_files
from tuner.models.shapes import shape_names


def test_the_shipped_shapes() -> None:
    assert shape_names() == ["qwen2.5-0.5b", "smollm2-135m", "smollm2-360m", "tiny-llama"]
    for name in shape_names():
        shape = shape_named(name)
        assert shape.name == name
        assert shape.source
        c = shape.config
        assert c.hidden_size % c.num_attention_heads == 0
        assert c.num_attention_heads % c.num_key_value_heads == 0


def parameters(name: str) -> int:
    """The parameter count the configuration implies (tied embeddings, no biases)."""
    c = shape_named(name).config
    head = c.hidden_size // c.num_attention_heads
    attn = 2 * c.hidden_size * c.hidden_size + 2 * c.hidden_size * head * c.num_key_value_heads
    mlp = 3 * c.hidden_size * c.intermediate_size
    return c.vocab_size * c.hidden_size + c.num_hidden_layers * (attn + mlp)


@pytest.mark.parametrize(("name", "published"), [
    ("smollm2-135m", 134.5e6), ("smollm2-360m", 361.8e6), ("qwen2.5-0.5b", 494.0e6)])
def test_each_shape_has_its_published_size(name: str, published: float) -> None:
    """The counts the model cards give (Qwen2.5-0.5B: 0.49B, of which its QKV biases are
    0.1M); a mistyped dimension would miss by far more than 1%."""
    assert parameters(name) == pytest.approx(published, rel=0.01)


def test_a_shape_is_named_in_full_or_by_its_size() -> None:
    assert shape_named("360m").name == "smollm2-360m"
    assert shape_named("0.5b").name == "qwen2.5-0.5b"


def test_an_unknown_shape_names_the_known_ones() -> None:
    with pytest.raises(ConfigError, match=r"--shape llama-9000: no such shape; give one of "
                                          r"qwen2.5-0.5b, smollm2-135m"):
        shape_named("llama-9000")


def test_the_tokenizer_has_the_exact_size_reserved_tokens_filling_the_rest() -> None:
    tok, reserved = train_tokenizer(synthetic_corpus(0, words=2000), 5000)
    assert tok.get_vocab_size() == 5000
    assert 0 < reserved < 5000
    last = tok.id_to_token(4999)
    assert last == f"<|reserved_{reserved - 1}|>"
    assert tok.decode([4999]) == last  # an ordinary token: an engine that samples it prints it
    assert tok.encode("kalo mi").ids[0] == tok.token_to_id("<s>")


def test_the_tiny_tokenizer_needs_no_reserved_tokens() -> None:
    tok, reserved = train_tokenizer(synthetic_corpus(0), 4096)
    assert (tok.get_vocab_size(), reserved) == (4096, 0)


def test_the_package_corpus_is_this_pythons_standard_library_in_a_fixed_order() -> None:
    files = package_files()
    assert files == sorted(files)
    assert any(f.name == "argparse.py" for f in files)
    assert not any("test" in f.parts for f in files)
    text = list(package_corpus(max_bytes=200_000))
    assert 200_000 <= sum(len(t.encode()) for t in text) < 200_000 + 2_000_000
    assert text == list(package_corpus(max_bytes=200_000))
