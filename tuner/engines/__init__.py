"""The face of tuner.engines: what other packages use of it; the rest is private."""

from tuner.engines.command_line import knobs_from_command
from tuner.engines.model_info import ModelInfo, load_model_info
from tuner.engines.render import OPTIONS_FILE, Rendered, render
from tuner.engines.rules import broken_rules, rule_names
from tuner.engines.spec import (
    ContainerLaunch,
    Device,
    EngineSpec,
    Failures,
    Mode,
    Rule,
    Scalar,
    all_devices,
    engine_names,
    load_engine_spec,
    parse_engine_spec,
    specs_root,
)

__all__ = [
    "ContainerLaunch", "Device", "EngineSpec", "Failures", "Mode", "ModelInfo", "OPTIONS_FILE",
    "Rendered", "Rule", "Scalar", "all_devices", "broken_rules", "engine_names",
    "knobs_from_command", "load_engine_spec", "load_model_info", "parse_engine_spec", "render",
    "rule_names", "specs_root",
]
