"""Porcupine's own tests, replayed through `kafkaspec verify` (anishathalye/porcupine
`porcupine_test.go`): each history a test builds, rebuilt from what it asserts as a JSON Lines
history, gets Porcupine's verdict.

Porcupine's operations carry call and return times; a history file lists events in order, so
the times become line order, with Porcupine's rule for equal times (`byTime`: calls before
returns, so calls with equal times overlap). Covered elsewhere: `TestRegisterModel`,
`TestNondeterministicRegisterModel(WithHash)` (`test_user_models.py`), `TestSetModel`
(`test_set_queue_models.py`), `TestEtcdJepsen*` and `TestKv*` with partitions
(`test_known_histories.py`, on `../shared/histories/porcupine`). Not histories: the
`NondeterministicModel.ToModel` and hashing tests, which test Porcupine's Go API.

Named differences: `TestCheckNoPartitions` calls an empty history `Ok`; kafkaspec answers
`unknown` (exit 3): nothing was recorded. `TestTimeoutCancelsStepContext` and
`TestIllegalCancelsBlockedPartition` cancel a model step that blocks (Go's `StepContext`);
kafkaspec checks a user model's parts in worker processes whatever the history's size, and
stops a worker at the deadline or when `--fail-fast` has an invalid part.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import run_cli

PORCUPINE_KV = Path(__file__).resolve().parents[3] / "shared" / "histories" / "porcupine" / "test_data" / "kv"


def events(operations: list[tuple[int, str, Any, int, Any, int]]) -> list[dict[str, Any]]:
    """Porcupine `Operation`s (client, f, input value, call time, output, return time) as
    invoke/ok lines in Porcupine's order: by time, a call before a return at the same time."""
    entries = []
    for client, f, value, call, output, ret in operations:
        entries.append((call, 0, {"process": client, "type": "invoke", "f": f, "value": value}))
        entries.append((ret, 1, {"process": client, "type": "ok", "f": f, "value": output}))
    entries.sort(key=lambda entry: (entry[0], entry[1]))
    return [line for _, _, line in entries]


def write_jsonl(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def verdict(capsys: pytest.CaptureFixture[str], path: Path, *flags: str) -> tuple[int, str]:
    code, out, err = run_cli(capsys, "verify", str(path), "--json", *flags)
    assert code in (0, 1, 3), err
    (history,) = json.loads(out)["histories"]
    return code, str(history["verdict"])


# ---------------------------------------------------------------------------------------
# TestZeroDuration, TestRegisterModelMetadata
# ---------------------------------------------------------------------------------------


def test_zero_duration_ok(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Two reads of 0 that take no time at 30, inside a put of 100 over [0, 100], and a read
    # of 100 over [25, 75]: the reads of 0 go before the put.
    lines = events(
        [
            (0, "write", 100, 0, 100, 100),
            (1, "read", None, 25, 100, 75),
            (2, "read", None, 30, 0, 30),
            (3, "read", None, 30, 0, 30),
        ]
    )
    path = write_jsonl(tmp_path / "h.jsonl", lines)
    assert verdict(capsys, path, "--model", "register", "--initial", "0") == (0, "valid")


def test_zero_duration_illegal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Two reads of 200 that take no time at 10 (concurrent with each other and the put), then
    # a read of 0 over [40, 90]: 0 cannot come back once 200 was read.
    lines = events(
        [
            (0, "write", 200, 0, 200, 100),
            (1, "read", None, 10, 200, 10),
            (2, "read", None, 10, 200, 10),
            (3, "read", None, 40, 0, 90),
        ]
    )
    path = write_jsonl(tmp_path / "h.jsonl", lines)
    assert verdict(capsys, path, "--model", "register", "--initial", "0") == (1, "invalid")


def test_register_model_metadata(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # TestRegisterModel's first history with metadata on each operation: fields a reader
    # does not know are carried along, not refused.
    lines = events(
        [(0, "write", 100, 0, 100, 100), (1, "read", None, 25, 100, 75), (2, "read", None, 30, 0, 60)]
    )
    for number, line in enumerate(lines):
        line["metadata"] = f"meta{number // 2 + 1}"
    path = write_jsonl(tmp_path / "h.jsonl", lines)
    assert verdict(capsys, path, "--model", "register", "--initial", "0") == (0, "valid")


# ---------------------------------------------------------------------------------------
# TestCheckNoPartitions: a named difference
# ---------------------------------------------------------------------------------------


def test_an_empty_history_is_unknown_where_porcupine_says_ok(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    assert verdict(capsys, path, "--model", "kv") == (3, "unknown")


# ---------------------------------------------------------------------------------------
# TestKvNoPartition*: Porcupine's kv model without its partition function, as a user's model
# ---------------------------------------------------------------------------------------

KV_WITHOUT_PARTITION = '''
"""Porcupine's kvNoPartitionModel: one state for every key (sorted (key, value) pairs)."""

from __future__ import annotations

from typing import Any

from kafkaspec.model import UNKNOWN, Input


class KvNoPartition:
    def init(self) -> tuple[tuple[str, str], ...]:
        return ()

    def step(self, state: tuple[tuple[str, str], ...], input: Input, output: Any) -> Any:
        values = dict(state)
        if input.f == "get":
            return state if output is UNKNOWN or output == values.get(input.key, "") else None
        old = values.get(input.key, "") if input.f == "append" else ""
        values[input.key] = old + input.value
        return tuple(sorted(values.items()))
'''


@pytest.fixture
def kv_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "porcupine_kv.py").write_text(KV_WITHOUT_PARTITION)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delitem(sys.modules, "porcupine_kv", raising=False)
    return "porcupine_kv:KvNoPartition"


@pytest.mark.skipif(not PORCUPINE_KV.is_dir(), reason="../shared/histories is not there")
@pytest.mark.parametrize(
    ("log", "expected"),
    [
        ("c01-ok", (0, "valid")),
        ("c01-bad", (1, "invalid")),
        pytest.param("c10-ok", (0, "valid"), marks=pytest.mark.slow),
        pytest.param("c10-bad", (1, "invalid"), marks=pytest.mark.slow),
    ],
)
def test_kv_without_partition(
    capsys: pytest.CaptureFixture[str], kv_model: str, log: str, expected: tuple[int, str]
) -> None:
    assert verdict(capsys, PORCUPINE_KV / f"{log}.txt", "--model", kv_model) == expected


# ---------------------------------------------------------------------------------------
# TestIllegalCancelsBlockedPartition, TestTimeoutCancelsStepContext
# ---------------------------------------------------------------------------------------

BLOCKING_MODEL = '''
"""A model whose step on key "blocked" never returns, and rejects every call on "illegal"."""

from __future__ import annotations

import time
from typing import Any

from kafkaspec.model import Input


class Blocking:
    def init(self) -> int:
        return 0

    def step(self, state: int, input: Input, output: Any) -> int | None:
        if input.key == "blocked":
            time.sleep(3600)
        return None

    def partition(self, input: Input) -> Any:
        return input.key
'''


def run_blocking(tmp_path: Path, keys: list[str], *flags: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "blocking.py").write_text(BLOCKING_MODEL)
    lines = [
        {"process": n, "type": "invoke", "f": "op", "value": None, "key": key} for n, key in enumerate(keys)
    ]
    lines += [
        {"process": n, "type": "ok", "f": "op", "value": None, "key": key} for n, key in enumerate(keys)
    ]
    path = write_jsonl(tmp_path / "h.jsonl", lines)
    command = [
        sys.executable,
        "-m",
        "kafkaspec.cli",
        "verify",
        str(path),
        "--model",
        "blocking:Blocking",
        *flags,
    ]
    return subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=8, check=False)


def test_an_illegal_part_ends_the_check_while_another_part_blocks(tmp_path: Path) -> None:
    completed = run_blocking(tmp_path, ["blocked", "illegal"], "--fail-fast", "--max-seconds", "2")
    assert completed.returncode == 1, completed.stderr  # Porcupine: Illegal


def test_a_step_that_blocks_is_unknown_at_the_deadline(tmp_path: Path) -> None:
    completed = run_blocking(tmp_path, ["blocked"], "--max-seconds", "2")
    assert completed.returncode == 3, completed.stderr  # Porcupine: Unknown
