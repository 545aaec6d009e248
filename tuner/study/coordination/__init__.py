"""The face of tuner.study.coordination: what other packages use of it; the rest is private."""

from tuner.study.coordination.joining import StartTracking, open_shared
from tuner.study.coordination.ledger import (
    BASELINE,
    EXCESS,
    REJECTED,
    RESULT,
    STARTS,
    WORKER,
    count,
    from_queue,
    incumbent,
    ledger,
    rejected,
    result_attr,
    starts_of,
    stored_result,
)
from tuner.study.coordination.optuna_internals import CachedStorage
from tuner.study.coordination.shared_study import (
    READY_ATTR,
    READY_WAIT_S,
    QueuedBaseline,
    beating,
    claim,
    driver_url,
    fail_stale,
    give_back,
    read_record,
    return_to_queue,
    shown,
    storage_for,
    stored_record,
    take_queued,
    worker_id,
)
from tuner.study.coordination.spend import spend_line, spend_of, study_spend, to_finish
from tuner.study.coordination.sqlite_file import sqlite_file
from tuner.study.coordination.storage_outage import RetryingStorage, without_waiting

__all__ = [
    "BASELINE", "CachedStorage", "EXCESS", "QueuedBaseline", "READY_ATTR", "READY_WAIT_S",
    "REJECTED", "RESULT", "RetryingStorage", "STARTS", "StartTracking", "WORKER", "beating",
    "claim", "count", "driver_url", "fail_stale", "from_queue", "give_back", "incumbent",
    "ledger", "open_shared", "read_record", "rejected", "result_attr", "return_to_queue",
    "shown", "spend_line", "spend_of", "sqlite_file", "starts_of", "storage_for",
    "stored_record", "stored_result", "study_spend", "take_queued", "to_finish",
    "without_waiting", "worker_id",
]
