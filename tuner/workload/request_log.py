"""Request logs read into one shape, for fitting a workload to them.

Three formats, told apart by the file's name and first record:

- JSONL of OpenAI-style request/response records, as gateways and proxies log them: a time
  (``timestamp``, ``created`` or ``time``: seconds since the epoch, or ISO 8601), the usage
  (``usage`` or ``response.usage`` with ``prompt_tokens`` and ``completion_tokens``), and
  optionally a session (``session_id``, ``conversation_id``, or ``user`` of the request) and,
  from the request's first message when it is a system message, a prefix hash (the messages
  under ``request`` or at the top level);
- the Mooncake trace format (``timestamp`` ms, ``input_length``, ``output_length``,
  ``hash_ids``);
- CSV with a header ``timestamp,input_tokens,output_tokens`` (seconds), and optionally
  ``session`` and ``prefix_hash`` (with ``prefix_tokens``) columns.

A bad line raises one ConfigError naming the file, the line and the fix.
"""

from __future__ import annotations

import csv
import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from tuner.core import ConfigError


@dataclass(frozen=True, slots=True)
class LoggedRequest:
    """One request of a log: when it came, its lengths, and what it shared."""

    time_s: float
    input_tokens: int
    output_tokens: int
    session: str | None = None
    prefix_hash: str | None = None
    prefix_tokens: int | None = None
    hash_ids: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class RequestLog:
    """A log's requests in time order and the format they were read in."""

    format: str
    requests: tuple[LoggedRequest, ...]


class _BadLine(ValueError):
    pass


def read_request_log(path: Path) -> RequestLog:
    """Read ``path`` (see the module docstring); raise ConfigError for a bad log."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the log ({exc}); give a UTF-8 JSONL or CSV "
                          "file") from exc
    if path.suffix.lower() == ".csv":
        fmt, rows = "csv", _csv(path, text)
    else:
        fmt, rows = _jsonl(path, text)
    requests: list[LoggedRequest] = []
    for number, request in rows:
        if requests and request.time_s < requests[-1].time_s:
            raise ConfigError(
                f"{path}:{number}: timestamp {request.time_s:g} is earlier than the line "
                f"before ({requests[-1].time_s:g}); sort the log by time first")
        requests.append(request)
    if len(requests) < 2:
        raise ConfigError(f"{path}: a log needs at least two requests to fit, got "
                          f"{len(requests)}")
    return RequestLog(fmt, tuple(requests))


def _positive(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or int(value) < 1:
        raise _BadLine(f"{what} must be a positive integer, got {value!r}")
    return int(value)


def _csv(path: Path, text: str) -> Iterator[tuple[int, LoggedRequest]]:
    reader = csv.DictReader(text.splitlines())
    needed = {"timestamp", "input_tokens", "output_tokens"}
    missing = needed - set(reader.fieldnames or ())
    if missing:
        raise ConfigError(f"{path}:1: the header lacks {', '.join(sorted(missing))}; the first "
                          "line must name timestamp,input_tokens,output_tokens (and optionally "
                          "session, prefix_hash, prefix_tokens)")
    for number, row in enumerate(reader, 2):
        try:
            tokens = row.get("prefix_tokens") or None
            yield number, LoggedRequest(
                time_s=float(row["timestamp"]),
                input_tokens=_positive(_number(row["input_tokens"]), "input_tokens"),
                output_tokens=_positive(_number(row["output_tokens"]), "output_tokens"),
                session=row.get("session") or None,
                prefix_hash=row.get("prefix_hash") or None,
                prefix_tokens=None if tokens is None else _positive(_number(tokens),
                                                                    "prefix_tokens"),
            )
        except (ValueError, TypeError) as exc:
            raise ConfigError(f"{path}:{number}: {_reason(exc)}; each row needs a timestamp in "
                              "seconds and token counts as integers") from None


def _number(text: str | None) -> float:
    if text is None or not text.strip():
        raise _BadLine("a value is missing")
    return float(text)


def _reason(exc: Exception) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _jsonl(path: Path, text: str) -> tuple[str, Iterator[tuple[int, LoggedRequest]]]:
    lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not lines:
        raise ConfigError(f"{path}: the log is empty; give one JSON record per line")
    first = _record(path, *lines[0])
    mooncake = "input_length" in first
    parse = _mooncake if mooncake else _openai

    def rows() -> Iterator[tuple[int, LoggedRequest]]:
        for number, line in lines:
            try:
                yield number, parse(_record(path, number, line))
            except (KeyError, ValueError, TypeError) as exc:
                fix = ("each line needs timestamp (ms), input_length and output_length"
                       if mooncake else "each record needs a timestamp and usage.prompt_tokens "
                       "and usage.completion_tokens (or response.usage)")
                missing = f"{exc} is missing" if isinstance(exc, KeyError) else _reason(exc)
                raise ConfigError(f"{path}:{number}: {missing}; {fix}") from None

    return ("mooncake" if mooncake else "openai"), rows()


def _record(path: Path, number: int, line: str) -> dict[str, Any]:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}:{number}: not JSON ({exc.msg} at column {exc.colno}); give "
                          "one JSON object per line") from None
    if not isinstance(record, dict):
        raise ConfigError(f"{path}:{number}: not a JSON object; give one object per line")
    return record


def _mooncake(record: dict[str, Any]) -> LoggedRequest:
    ids = record.get("hash_ids", [])
    if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
        raise _BadLine("hash_ids must be a list of integers")
    return LoggedRequest(time_s=float(record["timestamp"]) / 1000.0,
                         input_tokens=_positive(record["input_length"], "input_length"),
                         output_tokens=_positive(record["output_length"], "output_length"),
                         hash_ids=tuple(ids))


def _openai(record: dict[str, Any]) -> LoggedRequest:
    response = record.get("response") if isinstance(record.get("response"), dict) else {}
    request = record.get("request") if isinstance(record.get("request"), dict) else {}
    assert isinstance(response, dict)
    assert isinstance(request, dict)
    usage = record.get("usage") or response.get("usage")
    if not isinstance(usage, dict):
        raise KeyError("usage")
    session = (record.get("session_id") or record.get("conversation_id") or request.get("user")
               or record.get("user"))
    messages = request.get("messages") or record.get("messages") or []
    system = (messages[0].get("content") if messages and isinstance(messages[0], dict)
              and messages[0].get("role") == "system" else None)
    return LoggedRequest(
        time_s=_time(record),
        input_tokens=_positive(usage["prompt_tokens"], "usage.prompt_tokens"),
        output_tokens=_positive(usage["completion_tokens"], "usage.completion_tokens"),
        session=None if session is None else str(session),
        prefix_hash=(None if not isinstance(system, str)
                     else hashlib.sha256(system.encode()).hexdigest()[:16]),
    )


def _time(record: dict[str, Any]) -> float:
    for key in ("timestamp", "created", "time"):
        value = record.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    raise KeyError("timestamp")
