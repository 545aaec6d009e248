"""Validity rules: expressions over a configuration and the facts of host and model.

A rule names the configurations an engine refuses (``invalid_when``). They are
checked before launch, so a configuration that breaks a known rule is never
started; it is told to Optuna as infeasible with the rule it broke. Expressions
are evaluated by ``simpleeval`` (no attribute access, no calls).
"""

from __future__ import annotations

from typing import Any

from simpleeval import EvalWithCompoundTypes, InvalidExpression

from tuner.core import ConfigError
from tuner.engines.model_info import ModelInfo
from tuner.engines.spec import EngineSpec, Rule
from tuner.host import Hardware


def rule_names(spec: EngineSpec, config: dict[str, Any], hw: Hardware, model: ModelInfo,
               workload_max_tokens: int = 0) -> dict[str, Any]:
    """Every knob (the engine default where the config is silent) and the facts."""
    names: dict[str, Any] = {name: k.default_on(hw.device) for name, k in spec.knobs.items()}
    names.update({k: v for k, v in config.items() if v is not None})
    max_len = names.get("max_model_len") or model.max_model_len
    names.update(device=hw.device, gpus=hw.gpu_count, numa_nodes=hw.numa_nodes,
                 memory_gib=hw.memory_gib, attention_heads=model.attention_heads,
                 kv_heads=model.kv_heads, max_model_len=names.get("max_model_len") or 0,
                 effective_max_model_len=max_len, workload_max_tokens=workload_max_tokens,
                 head_size=model.hidden_size // model.attention_heads if model.hidden_size else 0,
                 avx512="avx512f" in hw.cpu_flags, amx="amx_tile" in hw.cpu_flags)
    return names


def evaluate(rule: Rule, names: dict[str, Any]) -> bool:
    try:
        return bool(EvalWithCompoundTypes(names=names).eval(rule.invalid_when))
    except (InvalidExpression, TypeError, ZeroDivisionError, SyntaxError) as exc:
        raise ConfigError(f"rule {rule.name!r}: cannot evaluate {rule.invalid_when!r} "
                          f"({type(exc).__name__}: {exc}); fix the expression") from exc


def broken_rules(rules: list[Rule], names: dict[str, Any]) -> list[Rule]:
    """The rules this configuration breaks, in order."""
    return [r for r in rules if evaluate(r, names)]
