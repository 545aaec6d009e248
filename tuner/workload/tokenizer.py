"""Find and load the served model's tokenizer, locally only.

Order: an explicit folder (or tokenizer.json), the model name as a local folder, the
models ``tune make-model`` made (``models_dir/<name>``, given by the caller), then the local
Hugging Face cache (``$HF_HUB_CACHE``, ``$HF_HOME/hub`` or
``~/.cache/huggingface/hub``). Nothing is downloaded.
"""

from __future__ import annotations

from pathlib import Path

from tokenizers import Tokenizer

from tuner.core import ConfigError, hf_cache_dirs


def given_tokenizer_file(given: Path) -> Path | None:
    """The tokenizer.json a given folder (or file) holds; None when it holds none."""
    path = given if given.suffix == ".json" else given / "tokenizer.json"
    return path if path.is_file() else None


def find_tokenizer_file(model: str, explicit: Path | None = None,
                        models_dir: Path | None = None) -> Path:
    """The tokenizer.json for ``model``; ConfigError naming what was tried when absent."""
    tried: list[str] = []
    candidates: list[Path] = []
    if explicit is not None:
        candidates.append(explicit if explicit.suffix == ".json" else explicit / "tokenizer.json")
    candidates.append(Path(model) / "tokenizer.json")
    if models_dir is not None:
        candidates.append(models_dir / model / "tokenizer.json")
    if "/" in model and not Path(model).exists():
        repo = "models--" + model.replace("/", "--")
        for cache in hf_cache_dirs():
            snapshots = cache / repo / "snapshots"
            if snapshots.is_dir():
                candidates.extend(sorted(snapshots.glob("*/tokenizer.json"), reverse=True))
            tried.append(str(snapshots))
    for path in candidates:
        if path.is_file():
            return path
    tried = [str(c) for c in candidates] + tried
    raise ConfigError(
        f"no tokenizer found for model {model!r} (looked in {', '.join(dict.fromkeys(tried))}); "
        "set `tokenizer:` in the workload or pass --tokenizer DIR"
    )


def load_tokenizer(model: str, explicit: Path | None = None,
                   models_dir: Path | None = None) -> Tokenizer:
    path = find_tokenizer_file(model, explicit, models_dir)
    try:
        return Tokenizer.from_file(str(path))
    except Exception as exc:  # tokenizers raises bare Exception on bad files
        raise ConfigError(f"{path}: not a tokenizers file ({exc})") from exc
