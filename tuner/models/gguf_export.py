"""Write a made Llama (the tiny one or a Llama shape) as GGUF for llama.cpp, and quantized
variants of it.

The F16 file is written with ``gguf`` (the GGUF library of the llama.cpp project),
following the layout llama.cpp's own converter produces for Llama: its tensor
names, Q/K rows permuted from Hugging Face's rotate-half order, and a GPT-2-style
BPE vocabulary with merges. Quantized variants are made by llama.cpp itself: the
``llama-quantize`` program that set-up builds beside ``llama-server``.
"""

from __future__ import annotations

import importlib
import json
import logging
import subprocess
from pathlib import Path
from typing import Any

import numpy as np

from tuner.core import ConfigError
from tuner.host import find_program

log = logging.getLogger(__name__)



def _permute(w: np.ndarray, heads: int) -> np.ndarray:
    """Hugging Face rotate-half rows -> GGUF interleaved rows (as llama.cpp's converter)."""
    return (w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


def _tensors(model_dir: Path, heads: int, kv_heads: int) -> dict[str, np.ndarray]:
    torch: Any = importlib.import_module("torch")
    st: Any = importlib.import_module("safetensors.torch")
    raw = st.load_file(str(model_dir / "model.safetensors"))
    out: dict[str, np.ndarray] = {}
    names = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
             "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
             "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down",
             "input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm"}
    for name, tensor in raw.items():
        arr = tensor.to(torch.float32).numpy()
        if name == "model.embed_tokens.weight":
            out["token_embd.weight"] = arr
        elif name == "model.norm.weight":
            out["output_norm.weight"] = arr
        elif name == "lm_head.weight":
            out["output.weight"] = arr
        else:
            _, _, layer, rest = name.split(".", 3)
            module = rest.rsplit(".", 1)[0]
            if module == "self_attn.q_proj":
                arr = _permute(arr, heads)
            elif module == "self_attn.k_proj":
                arr = _permute(arr, kv_heads)
            out[f"blk.{layer}.{names[module]}.weight"] = arr
    return out


def shape_of(model_dir: Path) -> str:
    """The shape a made folder holds (its recipe says; else the folder's name)."""
    recipe = model_dir / "tuner-recipe.json"
    if recipe.is_file():
        return str(json.loads(recipe.read_text()).get("shape", model_dir.name))
    return model_dir.name


def write_f16_gguf(model_dir: Path, out: Path) -> Path:
    """Write ``model_dir`` (a made Llama) as an F16 GGUF file."""
    try:
        gguf: Any = importlib.import_module("gguf")
    except ImportError as exc:
        raise ConfigError("writing GGUF needs the gguf package: pip install gguf") from exc
    cfg = json.loads((model_dir / "config.json").read_text())
    if cfg.get("model_type") != "llama":
        raise ConfigError(f"--gguf: {model_dir} is a {cfg.get('model_type')} model; GGUF "
                          "files are written for Llama shapes only")
    tok = json.loads((model_dir / "tokenizer.json").read_text())
    heads, kv_heads = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    writer = gguf.GGUFWriter(str(out), "llama")
    writer.add_name(shape_of(model_dir))
    writer.add_context_length(cfg["max_position_embeddings"])
    writer.add_embedding_length(cfg["hidden_size"])
    writer.add_block_count(cfg["num_hidden_layers"])
    writer.add_feed_forward_length(cfg["intermediate_size"])
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv_heads)
    writer.add_rope_dimension_count(cfg["hidden_size"] // heads)
    writer.add_rope_freq_base(float(cfg.get("rope_parameters", {}).get("rope_theta", 10000.0)))
    writer.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    vocab: dict[str, int] = tok["model"]["vocab"]
    for added in tok.get("added_tokens", []):
        vocab[added["content"]] = added["id"]
    tokens = [t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])]
    special = {a["id"] for a in tok.get("added_tokens", []) if a.get("special")}
    types = [gguf.TokenType.CONTROL if i in special else gguf.TokenType.NORMAL
             for i in range(len(tokens))]
    merges = [m if isinstance(m, str) else " ".join(m) for m in tok["model"]["merges"]]
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("gpt-2")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(merges)
    writer.add_bos_token_id(cfg["bos_token_id"])
    writer.add_eos_token_id(cfg["eos_token_id"])
    writer.add_add_bos_token(True)
    template = model_dir / "chat_template.jinja"
    if template.is_file():
        writer.add_chat_template(template.read_text())
    for name, arr in _tensors(model_dir, heads, kv_heads).items():
        writer.add_tensor(name, arr.astype(np.float32 if arr.ndim == 1 else np.float16))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out


def quantize(f16: Path, out: Path, variant: str) -> Path:
    """Quantize with llama.cpp itself (``llama-quantize IN OUT TYPE``)."""
    program = find_program("llama-quantize")
    if program is None:
        raise ConfigError("quantizing needs llama.cpp's llama-quantize, which is neither beside "
                          "this Python nor on PATH: run .ci/setup, which builds it")
    done = subprocess.run([str(program), str(f16), str(out), variant], capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        last = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise ConfigError(f"llama.cpp could not quantize {f16} to {variant} (exit "
                          f"{done.returncode}: {last[0]})")
    return out


def make_gguf_variants(model_dir: Path, variants: tuple[str, ...] = ("F16", "Q8_0", "Q4_0")
                       ) -> dict[str, Path]:
    """``<shape>-<variant>.gguf`` files beside the Hugging Face files in ``model_dir`` (one
    folder serves vLLM and llama.cpp); existing files are kept."""
    shape = shape_of(model_dir)
    f16 = model_dir / f"{shape}-F16.gguf"
    if not f16.is_file():
        write_f16_gguf(model_dir, f16)
    paths = {"F16": f16}
    for variant in variants:
        if variant == "F16":
            continue
        path = model_dir / f"{shape}-{variant}.gguf"
        if not path.is_file():
            quantize(f16, path, variant)
        paths[variant] = path
    return paths
