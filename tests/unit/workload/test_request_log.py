"""Request logs in each format, and bad logs named by line with the fix."""

import json
from pathlib import Path

import pytest

from tuner.core import ConfigError
from tuner.workload.request_log import read_request_log


def test_openai_jsonl_records(tmp_path: Path) -> None:
    records = [
        {"timestamp": "2025-01-01T00:00:00Z", "session_id": "a",
         "request": {"model": "m", "messages": [{"role": "system", "content": "be brief"},
                                                {"role": "user", "content": "hi"}]},
         "response": {"usage": {"prompt_tokens": 30, "completion_tokens": 7}}},
        {"created": 1735689601.5, "request": {"user": "b", "messages": []},
         "usage": {"prompt_tokens": 12, "completion_tokens": 3}},
    ]
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    log = read_request_log(path)
    assert log.format == "openai"
    first, second = log.requests
    assert (first.input_tokens, first.output_tokens, first.session) == (30, 7, "a")
    assert first.prefix_hash is not None
    assert second.time_s - first.time_s == pytest.approx(1.5)
    assert (second.session, second.prefix_hash) == ("b", None)


def test_mooncake_trace(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    path.write_text('{"timestamp": 0, "input_length": 700, "output_length": 9, '
                    '"hash_ids": [1, 2]}\n{"timestamp": 1500, "input_length": 600, '
                    '"output_length": 4, "hash_ids": [1, 3]}\n')
    log = read_request_log(path)
    assert log.format == "mooncake"
    assert log.requests[1].time_s == 1.5
    assert log.requests[1].hash_ids == (1, 3)


def test_csv_with_optional_columns(tmp_path: Path) -> None:
    path = tmp_path / "log.csv"
    path.write_text("timestamp,input_tokens,output_tokens,session,prefix_hash,prefix_tokens\n"
                    "0.0,100,20,s1,p,40\n0.5,150,25,s1,,\n")
    log = read_request_log(path)
    assert log.format == "csv"
    a, b = log.requests
    assert (a.session, a.prefix_hash, a.prefix_tokens) == ("s1", "p", 40)
    assert (b.prefix_hash, b.prefix_tokens) == (None, None)


@pytest.mark.parametrize(("name", "text", "message"), [
    ("log.jsonl", '{"timestamp": 0, "usage": {"prompt_tokens": 3, "completion_tokens": 1}}\n'
     '{"timestamp": 1, "usage": {"prompt_tokens": 3\n',
     "log.jsonl:2: not JSON"),
    ("log.jsonl", '{"timestamp": 0, "usage": {"prompt_tokens": 3, "completion_tokens": 1}}\n'
     '{"timestamp": 1}\n', "log.jsonl:2: 'usage' is missing; each record needs a timestamp"),
    ("log.csv", "timestamp,input_tokens\n0,3\n", "log.csv:1: the header lacks output_tokens"),
    ("log.csv", "timestamp,input_tokens,output_tokens\n0,3,1\n1,x,1\n",
     "log.csv:3: could not convert"),
    ("log.csv", "timestamp,input_tokens,output_tokens\n0,3,1\n1,,1\n",
     "log.csv:3: a value is missing"),
    ("log.csv", "timestamp,input_tokens,output_tokens\n5,3,1\n4,3,1\n",
     "log.csv:3: timestamp 4 is earlier than the line before (5); sort the log by time"),
    ("trace.jsonl", '{"timestamp": 0, "input_length": 0, "output_length": 1}\n',
     "trace.jsonl:1: input_length must be a positive integer"),
])
def test_bad_logs_name_the_line_and_the_fix(tmp_path: Path, name: str, text: str,
                                           message: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        read_request_log(path)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)
