"""A byte-level BPE tokenizer trained here to a model shape's exact vocabulary size.

Llama 3 style: ``<unk>``, ``<s>``, ``</s>`` and a post-processor that puts ``<s>`` first. When
the training text runs out of merges before the shape's size, the rest of the vocabulary is
reserved tokens (``<|reserved_N|>``, ordinary added tokens, so an engine that samples one
prints it); how many is returned, for the model folder to say.
"""

from __future__ import annotations

from collections.abc import Iterable

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

SPECIAL = ["<unk>", "<s>", "</s>"]


def train_tokenizer(text: Iterable[str], vocab_size: int) -> tuple[Tokenizer, int]:
    """The tokenizer with exactly ``vocab_size`` entries, and how many of them are reserved
    (the training text gave too few merges)."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(text, trainer=trainer)
    bos = tok.token_to_id("<s>")
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", bos)])
    reserved = vocab_size - tok.get_vocab_size()
    if reserved > 0:
        tok.add_tokens([f"<|reserved_{i}|>" for i in range(reserved)])
    return tok, max(reserved, 0)
