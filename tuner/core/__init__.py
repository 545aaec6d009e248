"""The face of tuner.core: what other packages use of it; the rest is private."""

from tuner.core.errors import (
    EXIT_INTERRUPTED,
    EXIT_NO_GAIN,
    EXIT_UNRESOLVED,
    ConfigError,
    EndpointError,
    EngineCrashed,
    EngineHung,
    EngineStartError,
    OutOfSpace,
    SlosNotMet,
    StudyError,
    TunerError,
    study_exit_code,
)
from tuner.core.lazy_face import lazy_face
from tuner.core.settings import Settings, hf_cache_dirs, hf_home, without_password
from tuner.core.validation import (
    RESOLUTION,
    StrictModel,
    load_yaml,
    parse_resolution,
    validate,
)
from tuner.core.validation_errors import describe_validation_error

__all__ = [
    "ConfigError", "EXIT_INTERRUPTED", "EXIT_NO_GAIN", "EXIT_UNRESOLVED", "EndpointError",
    "EngineCrashed", "EngineHung", "EngineStartError", "OutOfSpace", "RESOLUTION", "Settings",
    "SlosNotMet", "StrictModel", "StudyError", "TunerError", "describe_validation_error",
    "hf_cache_dirs", "hf_home", "lazy_face", "load_yaml", "parse_resolution", "study_exit_code",
    "validate", "without_password",
]
