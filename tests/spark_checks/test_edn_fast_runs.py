"""`readers.edn_fast`'s reading of a run of Jepsen's lines as one JSON text (`_jepsen_rows`):
brackets that do not pair up within a line (which the JSON text could pair across lines, or
read `{...]` as a map) leave the run to the full reader, as anything else it cannot be
certain of; Jepsen's keyword-valued lines are taken, and read as the full reader reads them.
"""

from __future__ import annotations

from typing import Any

import pytest

from spark_checks import distributed
from spark_checks.history import HistoryError
from spark_checks.readers import edn_fast
from spark_checks.readers.edn import iter_forms


def _line(index: int, value: str, process: str = "1") -> bytes:
    return (
        f"{{:index {index}, :time {index * 10}, :type :ok, :process {process}, :f :x, :value {value}}}"
    ).encode()


def _full_reading(lines: list[bytes]) -> list[Any] | HistoryError:
    try:
        return [value for value, _line in iter_forms([b"\n".join(lines).decode()], "h.edn")]
    except HistoryError as error:
        return error


@pytest.mark.parametrize(
    "values",
    [
        ["[[7", "5]]", "9] [8"],  # unbalanced lines that balance across them: the values would shift
        ["1 2", "", "3"],  # two forms in a line, none in the next
        ["{1 2]"],  # a map closed by `]`
        ["[1 2}"],  # a vector closed by `}`
        ["[{1 2]}"],
        ["{[1 2}]"],
    ],
)
def test_brackets_that_do_not_pair_up_in_a_line_leave_the_run_to_the_full_reader(values: list[str]) -> None:
    lines = [_line(index, value) for index, value in enumerate(values)]
    assert isinstance(_full_reading(lines), HistoryError)
    assert edn_fast.read_jepsen_ops(lines) is None
    assert edn_fast.read_op_maps(lines) is None


@pytest.mark.parametrize(
    "value",
    [
        "[[:send 36 [0 36]]]",
        "[[:poll {36 [[0 36] [1 37]], 7 []}] [:poll {}]]",
        "[[:send :nil nil] [nil nil nil] [:a:b :nil-x]]",
        '[[:poll {"k" [[0 1]], :k [], nil 3, 7 [nil]}]]',
        "{:a {:b {:c [1 2]}}, [1 2] 3}",
        "[[:send 36 [0 36]], [:send 37 [1 37]]]",
    ],
)
def test_jepsen_keyword_lines_are_taken_and_read_as_the_full_reader_reads_them(value: str) -> None:
    lines = [_line(0, value), _line(1, value, ":nemesis"), _line(2, "nil")]
    maps = edn_fast.read_op_maps(lines)
    ops = edn_fast.read_jepsen_ops(lines)
    assert maps is not None and ops is not None
    assert maps == _full_reading(lines)
    assert repr(ops) == repr([distributed.usual_op(m) for m in maps])


@pytest.mark.parametrize(
    "value",
    [
        "[:a[1]]",
        '[:a"s"]',
        "[1   2]",
        "[nil1]",
        "[:]",
        "[1 x:a]",
        "{:index 1, :time 2}",
        "[1, :value 2]",
        "[:a:b :b]",
        "[:send :sendx x:send]",
        "[nile]",
        "[1] [2]",
        " ",
        "[1]2",
    ],
)
def test_what_the_run_cannot_be_certain_of_is_never_taken_otherwise_than_read(value: str) -> None:
    lines = [_line(0, "[1]"), _line(1, value)]
    ops = edn_fast.read_jepsen_ops(lines)
    full = _full_reading(lines)
    if ops is not None:
        assert not isinstance(full, HistoryError)
        assert repr(ops) == repr([distributed.usual_op(m) for m in full])


def test_the_run_reading_is_the_line_by_line_reading_on_the_bench_shapes() -> None:
    """The slow path: each line alone (`_read_each`, which never takes `_jepsen_rows`)."""
    lines = [
        _line(0, "[2 6 10 14]"),
        _line(1, '[["send" 563 563]]'),
        _line(2, '[["poll" {"10" [[0 10] [1 74]]}]]'),
        _line(3, "[[:poll {10 [[0 10] [1 74]], 11 []}]]"),
        _line(4, '[["poll" {}]]'),
    ]
    together = edn_fast.read_op_maps(lines)
    assert together is not None
    assert together == edn_fast._read_each(lines, dict(edn_fast._PRESET))
    assert together == _full_reading(lines)
