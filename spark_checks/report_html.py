"""The HTML report of `kafkaspec verify --report FILE.html`: one self-contained page.

What it shows, in order
    * A summary: the verdict, what was checked (each file with its format, model, engine,
      operations, calls and parts) and under which conventions, then every anomaly in one
      sentence (`spark_checks.explain`), each linked to its part.
    * One section per failing part: its sentences, and a timeline of the operations around
      them: one lane per process, a bar per call from its invocation to its completion (its
      function and value written on it), the calls an explanation names outlined in red with
      their role above them (writer, reader, T1, "cannot be placed"), a legend and an axis of
      history indices (and of times, when the history has them).
    * For linearizability, the longest linearizable prefix as Porcupine's visualizer draws a
      partial linearization: a point on each linearized call where it takes effect, joined in
      linearization order, with the model's state after it, and the prefix's last steps as a
      table. The states are recomputed by replaying the prefix with the sequential model
      (`reference.models`), so the search itself stays untouched. A valid history shows the
      linearization the search found (its certificate) the same way.
    * For Kafka, a per-key view of the offsets around each anomaly as the sends and polls saw
      them (one row per poll, the anomaly's offsets marked), and Jepsen's realtime lag
      (`realtime-lag`: the greatest lag per process and key, and the worst) as a plot.

Large histories stay usable: a timeline shows only windows of `WINDOW_RADIUS` history indices
around the calls its part's sentences name (the gaps between windows are drawn as breaks that
say how many operations they hide), at most `MAX_BARS` calls per timeline and
`MAX_DETAILED_PARTS` parts in detail; the page of a 10^6-operation Kafka history with an
anomaly of each injectable type is 0.14 MB, and one with 80 failing parts stays under 3 MB
(both measured by tests/spark_checks/test_report.py).

Everything is drawn here, as inline SVG and HTML; a small inline script only adds focus (a
click on a sentence outlines its calls) and sets `data-rendered="yes"` on <body> when it ran
to the end, so a headless browser can tell a rendered page from a broken one. The page loads
nothing from the network. Elements carry data attributes for tests and tools: a call's bar is
`g.op[data-op=INVOKE_INDEX]` with `data-explanations` (the ids of the sentences that name it)
and `data-role`; a sentence is `li[data-explanation][data-type=TYPE]`.
"""

from __future__ import annotations

import bisect
import gc
import html
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from spark_checks.engine import HistoryReport
from spark_checks.explain import (
    CallSpan,
    Explanation,
    deviation_sentence,
    deviations_from_jepsen,
    explain_result,
    indices_to_look_up,
    show,
)
from spark_checks.history import Call, CheckResult, JsonValue, Operation, OpType, Outcome, Verdict, new_call

WINDOW_RADIUS: Final = 24
"""History indices shown on each side of a call an explanation names."""
FULL_SPAN: Final = 260
"""A part whose calls span at most this many history indices is drawn whole."""
MAX_BARS: Final = 200
MAX_SEGMENTS: Final = 10
MAX_DETAILED_PARTS: Final = 30
MAX_SENTENCES_IN_SUMMARY: Final = 60
MAX_KEY_COLUMNS: Final = 48
MAX_KEY_ROWS: Final = 30
MAX_PREFIX_ROWS: Final = 40
MAX_EVIDENCE_CHARS: Final = 8_000

_LANE: Final = 36
_BAR_TOP: Final = 14
_BAR_HEIGHT: Final = 17
_LEFT: Final = 112
_GAP: Final = 64
_AXIS: Final = 46
_CHAR: Final = 6.1  # width of a 10px monospace character


# ---------------------------------------------------------------------------------------
# Calls of the history (tolerant pairing: a window of a history may start mid-call)
# ---------------------------------------------------------------------------------------


_OUTCOMES: Final = {OpType.OK: Outcome.OK, OpType.FAIL: Outcome.FAIL, OpType.INFO: Outcome.INFO}


def history_calls(operations: Iterable[Operation]) -> list[Call]:
    """Each invocation paired with its process's next operation, sorted by invocation index;
    completions without an invocation (a window's start, a nemesis) are left out, and calls
    never completed end the list as `info` without a completion."""
    calls: list[Call] = []
    open_calls: dict[Any, Operation] = {}
    outcomes = _OUTCOMES
    for operation in operations:
        if operation.type is OpType.INVOKE:
            open_calls[operation.process] = operation
            continue
        invocation = open_calls.pop(operation.process, None)
        if invocation is None:
            continue
        calls.append(
            new_call(
                invocation.process,
                invocation.f,
                invocation.value,
                operation.value if operation.type is OpType.OK else None,
                outcomes[operation.type],
                invocation.index,
                operation.index,
                invocation.key,
                invocation.time,
                operation.time,
                operation.value,
            )
        )
    calls.extend(
        new_call(
            invocation.process,
            invocation.f,
            invocation.value,
            None,
            Outcome.INFO,
            invocation.index,
            None,
            invocation.key,
            invocation.time,
            None,
            None,
        )
        for invocation in open_calls.values()
    )
    calls.sort(key=lambda call: call.invoke_index)
    return calls


@dataclass(frozen=True)
class HistoryView:
    """A history's calls, indexed for windows: sorted by invocation index."""

    calls: list[Call]
    starts: list[int]
    first_time: int | None
    operations: Sequence[Operation]

    @classmethod
    def of(cls, operations: Sequence[Operation]) -> HistoryView:
        calls = history_calls(operations)
        times = [call.invoke_time for call in calls[:1] if call.invoke_time is not None]
        return cls(calls, [call.invoke_index for call in calls], times[0] if times else None, operations)

    def by_invoke(self, index: int) -> Call | None:
        position = bisect.bisect_left(self.starts, index)
        if position < len(self.starts) and self.starts[position] == index:
            return self.calls[position]
        return None

    def around(self, low: int, high: int, lookback: int = 4000) -> list[Call]:
        """Calls running at some point of [low, high] (invoked in it, or before it and
        completed in or after it, looking back at most `lookback` indices)."""
        start = bisect.bisect_left(self.starts, low - lookback)
        stop = bisect.bisect_right(self.starts, high)
        return [
            call
            for call in self.calls[start:stop]
            if call.invoke_index >= low or (call.complete_index is not None and call.complete_index >= low)
        ]

    def spans(self, indices: Iterable[int]) -> dict[int, CallSpan]:
        """The calls invoked at `indices`, as the sentences name them."""
        found = {}
        for index in indices:
            call = self.by_invoke(index)
            if call is not None:
                found[index] = CallSpan(call.process, call.f, index, call.complete_index)
        return found

    def time_at(self, index: int) -> int | None:
        """The time of the operation at `index`, when the history has one."""
        operations = self.operations
        if 0 <= index < len(operations) and operations[index].index == index:
            return operations[index].time
        call = self.by_invoke(index)
        return None if call is None else call.invoke_time


# ---------------------------------------------------------------------------------------
# Marks: what the explanations say about each call
# ---------------------------------------------------------------------------------------


@dataclass
class Mark:
    """Everything the sentences of one part say about one call."""

    ids: list[str] = field(default_factory=list)
    roles: list[str] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)


def _marks(explanations: Sequence[tuple[str, Explanation]]) -> dict[int, Mark]:
    marks: dict[int, Mark] = {}
    for ident, explanation in explanations:
        for ref in explanation.calls:
            mark = marks.setdefault(ref.invoke_index, Mark())
            if ident not in mark.ids:
                mark.ids.append(ident)
            # T1, T2 name a cycle's calls: say which cycle, as a call may be in several.
            role = (
                f"{ref.role} of {explanation.kind}"
                if ref.role[:1] == "T" and ref.role[1:].isdigit()
                else ref.role
            )
            if role not in mark.roles:
                mark.roles.append(role)
            if explanation.kind not in mark.kinds:
                mark.kinds.append(explanation.kind)
    return marks


# ---------------------------------------------------------------------------------------
# Linearizability: the longest prefix, replayed with the model
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """One call of the longest linearizable prefix: where it takes effect and what follows."""

    order: int
    invoke_index: int
    point: float  # a history position inside the call's interval, nondecreasing along the prefix
    state: str | None  # the model's state after it (None when the replay could not follow)
    description: str


def prefix_steps(result: CheckResult, view: HistoryView) -> list[Step]:
    """The longest linearizable prefix (or the whole linearization of a valid part) with
    the model's state after each call, by replaying it with the sequential model exactly as
    the search applied it (an indeterminate call takes effect as `info`)."""
    evidence = result.evidence
    order = evidence.get("longest_linearizable_prefix", evidence.get("linearization"))
    if not isinstance(order, list):
        return []
    try:
        from reference.models import resolve_conventions
        from spark_checks.linearizability import get_model

        model = get_model(result.model)
        conventions = resolve_conventions(result.conventions)
        state: Any = model.init(conventions["initial"])
    except (ValueError, KeyError, TypeError, ImportError):
        model, conventions, state = None, {}, None
    steps: list[Step] = []
    point = -math.inf
    following = model is not None
    for number, index in enumerate(order, start=1):
        call = view.by_invoke(index) if isinstance(index, int) else None
        if call is None:
            following = False
            steps.append(Step(number, int(index), float(index), None, "?"))
            continue
        point = max(point + 0.001, float(call.invoke_index))
        if call.complete_index is not None:
            point = min(point, float(call.complete_index))
        description = call.f
        shown: str | None = None
        if following and model is not None:
            try:
                description = model.describe(call)
                prepared = model.prepare(call, conventions)
                if prepared is not None:
                    given, output, outcome = prepared
                    optional = (
                        outcome == "info" or call.outcome is Outcome.INFO or call.complete_index is None
                    )
                    after = model.step(state, given, output, "info" if optional else outcome)
                    if after is None:
                        following = False
                    else:
                        state = after
                shown = repr(state) if following else None
            except (ValueError, TypeError, KeyError, IndexError, AttributeError):
                following = False
        steps.append(Step(number, call.invoke_index, point, shown, description))
    return steps


# ---------------------------------------------------------------------------------------
# The timeline
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Axis:
    """History indices to x positions, with the windows drawn and breaks between them."""

    segments: tuple[tuple[int, int], ...]
    scale: float
    starts: tuple[float, ...]

    @classmethod
    def of(cls, segments: Sequence[tuple[int, int]]) -> Axis:
        span = sum(high - low + 1 for low, high in segments)
        scale = max(9.0, min(30.0, 2200.0 / max(span, 1)))
        starts = []
        x = float(_LEFT)
        for low, high in segments:
            starts.append(x)
            x += (high - low + 1) * scale + _GAP
        return cls(tuple(segments), scale, tuple(starts))

    @property
    def width(self) -> float:
        low, high = self.segments[-1]
        return self.starts[-1] + (high - low + 1) * self.scale + 20

    def x(self, index: float) -> float:
        for number, (low, high) in enumerate(self.segments):
            if index < low:
                if number == 0:
                    return self.starts[0] - 6
                previous_low, previous_high = self.segments[number - 1]
                return self.starts[number - 1] + (previous_high - previous_low + 1) * self.scale + _GAP / 2
            if index <= high + 1:
                return self.starts[number] + (index - low) * self.scale
        low, high = self.segments[-1]
        return self.starts[-1] + (high - low + 1) * self.scale + 10


def _segments(focus: Sequence[int], first: int, last: int, before: int, after: int) -> list[tuple[int, int]]:
    """Windows of [index - before, index + after] around the focus, merged when close."""
    merged: list[list[int]] = []
    for index in sorted(set(focus)):
        low, high = max(first, index - before), min(last, index + after)
        if merged and low <= merged[-1][1] + WINDOW_RADIUS:
            merged[-1][1] = max(merged[-1][1], high)
        else:
            merged.append([low, high])
    return [(low, high) for low, high in merged[:MAX_SEGMENTS]]


def _process_order(process: Any) -> tuple[int, float, str]:
    if isinstance(process, int | float) and not isinstance(process, bool):
        return (0, float(process), "")
    return (1, 0.0, str(process))


def _brief_value(call: Call) -> str:
    if call.f in ("send", "poll", "txn"):
        sends, polls = kafka_pairs(call)
        if sends or polls:
            said = [
                f"{key}={show(value, 12)}@{'?' if offset is None else offset}" for key, offset, value in sends
            ]
            read = [f"{key}@{offset}={show(value, 12)}" for key, offset, value in polls]
            return " ".join(said + read)
    value = call.output if call.outcome is Outcome.OK and call.output is not None else call.input
    return "" if value is None else show(value, 80)


def _tick_step(scale: float) -> int:
    for step in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000):
        if step * scale >= 56:
            return step
    return 20_000


def format_seconds(nanoseconds: float) -> str:
    """A duration in the history's nanoseconds as s, ms, us or ns."""
    magnitude = abs(nanoseconds)
    if magnitude >= 1e9:
        return f"{nanoseconds / 1e9:.3g} s"
    if magnitude >= 1e6:
        return f"{nanoseconds / 1e6:.3g} ms"
    if magnitude >= 1e3:
        return f"{nanoseconds / 1e3:.3g} us"
    return f"{nanoseconds:.3g} ns"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _a(value: object) -> str:
    return html.escape(str(value), quote=True)


def timeline_svg(
    view: HistoryView,
    belongs: Callable[[Call], bool],
    marks: Mapping[int, Mark],
    steps: Sequence[Step] = (),
    ident: str = "timeline",
    before: int = WINDOW_RADIUS,
    after: int = WINDOW_RADIUS,
) -> str:
    """The SVG timeline of the calls of one part: windows from `before` history indices
    before each marked call to `after` indices after it (the first `FULL_SPAN` indices of
    the part when nothing is marked)."""
    focus: list[int] = []
    for index in marks:
        call = view.by_invoke(index)
        focus.append(index)
        if call is not None and call.complete_index is not None:
            focus.append(call.complete_index)
    if focus:
        last_index = max(
            (call.complete_index if call.complete_index is not None else call.invoke_index)
            for call in view.calls[-64:]
        )
        segments = _segments(focus, view.calls[0].invoke_index, max(last_index, *focus), before, after)
    else:
        first = next((call.invoke_index for call in view.calls if belongs(call)), None)
        if first is None:
            return "<p>No call of this part is in the history at hand.</p>"
        segments = [(first, first + FULL_SPAN)]
    chosen: dict[int, Call] = {}
    for low, high in segments:
        for call in view.around(low, high):
            if call.invoke_index in marks or belongs(call):
                chosen[call.invoke_index] = call
    for index in marks:
        call = view.by_invoke(index)
        if call is not None:
            chosen[index] = call
    calls = sorted(chosen.values(), key=lambda call: call.invoke_index)
    hidden = 0
    if len(calls) > MAX_BARS:
        marked = [call for call in calls if call.invoke_index in marks]

        def distance(call: Call) -> int:
            return min((abs(call.invoke_index - index) for index in focus), default=0)

        rest = sorted((call for call in calls if call.invoke_index not in marks), key=distance)
        kept = marked + rest[: max(0, MAX_BARS - len(marked))]
        hidden = len(calls) - len(kept)
        calls = sorted(kept, key=lambda call: call.invoke_index)
    axis = Axis.of(segments)
    lanes = sorted({call.process for call in calls}, key=_process_order)
    lane_of = {process: number for number, process in enumerate(lanes)}
    height = len(lanes) * _LANE + _AXIS + 8
    step_of = {step.invoke_index: step for step in steps}
    parts: list[str] = []
    # The lane names stay in view when the timeline scrolls sideways (the script moves them).
    names: list[str] = [f"<rect class='names' x='0' y='0' width='{_LEFT - 6}' height='{height}'/>"]
    for number, process in enumerate(lanes):
        y = number * _LANE
        shade = " odd" if number % 2 else ""
        parts.append(f"<rect class='lane{shade}' x='0' y='{y}' width='{axis.width:.0f}' height='{_LANE}'/>")
        names.append(
            f"<rect class='lane{shade}' x='0' y='{y}' width='{_LEFT - 6}' height='{_LANE}'/>"
            f"<text class='lane-label' x='6' y='{y + _BAR_TOP + 12}'>process {_a(show(process, 12))}</text>"
        )
    names.append(f"<text class='axis-title' x='4' y='{len(lanes) * _LANE + 16}'>history index</text>")
    if view.first_time is not None:
        names.append(f"<text class='axis-title' x='4' y='{len(lanes) * _LANE + 30}'>time</text>")
    for number, (low, _) in enumerate(segments):
        if number:
            previous_high = segments[number - 1][1]
            x0 = axis.x(previous_high + 1)
            parts.append(
                f"<g class='gap'><rect x='{x0 + 4:.1f}' y='0' width='{_GAP - 8}' "
                f"height='{len(lanes) * _LANE}'/>"
                f"<text x='{x0 + _GAP / 2:.1f}' y='{len(lanes) * _LANE + 14}' text-anchor='middle'>"
                f"{low - previous_high - 1:,} ops</text></g>"
            )
    points: list[tuple[float, float, Step]] = []
    # A label may run past its bar up to the next bar of the same lane.
    room: dict[int, float] = {}
    by_lane: dict[Any, list[Call]] = {}
    for call in calls:
        by_lane.setdefault(call.process, []).append(call)
    for lane_calls in by_lane.values():
        for this, following in zip(lane_calls, [*lane_calls[1:], None], strict=True):
            room[this.invoke_index] = (
                axis.x(following.invoke_index) if following is not None else axis.width
            ) - axis.x(this.invoke_index)
    for call in calls:
        y = lane_of[call.process] * _LANE
        start = axis.x(call.invoke_index)
        end = axis.x(call.complete_index + 1) if call.complete_index is not None else axis.width - 12
        width = max(5.0, end - start - 2)
        mark = marks.get(call.invoke_index)
        classes = ["op", call.outcome.value]
        if call.complete_index is None:
            classes.append("open")
        if mark is not None:
            classes.append("bad")
        step = step_of.get(call.invoke_index)
        if step is not None:
            classes.append("linearized")
        completed = (
            f"completed at #{call.complete_index}" if call.complete_index is not None else "never completed"
        )
        title = (
            f"#{call.invoke_index} process {show(call.process)}: {call.f} {show(call.input, 200)} -> "
            f"{call.outcome.value} {show(call.completion_value, 200)} ({completed})"
        )
        if call.invoke_time is not None and view.first_time is not None:
            title += f", invoked at {format_seconds(call.invoke_time - view.first_time)}"
        attributes = f" data-op='{call.invoke_index}' data-process='{_a(json.dumps(call.process))}'"
        if call.complete_index is not None:
            attributes += f" data-complete='{call.complete_index}'"
        if mark is not None:
            title += "\n" + "; ".join(f"{role}" for role in mark.roles) + f" ({', '.join(mark.kinds)})"
            attributes += (
                f" data-explanations='{_a(' '.join(mark.ids))}' data-role='{_a(' / '.join(mark.roles))}'"
                f" data-anomaly='{_a(' '.join(mark.kinds))}'"
            )
        if step is not None:
            title += (
                f"\nlinearized {step.order}: state after it {step.state if step.state is not None else '?'}"
            )
            attributes += f" data-linearized='{step.order}'"
        label = f"{call.f} {_brief_value(call)}".strip()
        fits = int(max(width, room.get(call.invoke_index, width) - 6) / _CHAR) - 1
        text = label if len(label) <= fits else (label[: max(0, fits - 1)] + "…" if fits > 3 else "")
        body = (
            f"<rect x='{start + 1:.1f}' y='{y + _BAR_TOP}' width='{width:.1f}' "
            f"height='{_BAR_HEIGHT}' rx='3'/>"
            + (
                f"<text class='label' x='{start + 4:.1f}' y='{y + _BAR_TOP + 12}'>{_a(text)}</text>"
                if text
                else ""
            )
        )
        if mark is not None:
            symbol = "✗ " if "cannot be placed" in mark.roles else ""
            role = _cut(
                symbol + " / ".join(mark.roles), max(4, int(room.get(call.invoke_index, width) / 5.6))
            )
            symbol = ""
            body += f"<text class='mark-label' x='{start + 1:.1f}' y='{y + 11}'>{_a(symbol + role)}</text>"
        parts.append(f"<g class='{' '.join(classes)}'{attributes}><title>{_a(title)}</title>{body}</g>")
        if step is not None:
            points.append((axis.x(step.point + 0.5), y + _BAR_TOP, step))
    if points:
        points.sort(key=lambda item: item[2].order)
        runs: list[list[tuple[float, float, Step]]] = []
        for item in points:
            if runs and runs[-1][-1][2].order == item[2].order - 1:
                runs[-1].append(item)
            else:
                runs.append([item])
        for run in runs:
            if len(run) > 1:
                path = " ".join(f"{x:.1f},{y:.1f}" for x, y, _ in run)
                parts.append(f"<polyline class='linearization' points='{path}'/>")
        for x, middle, step in points:
            state = step.state if step.state is not None else "?"
            parts.append(
                f"<g class='point' data-order='{step.order}'>"
                f"<title>{_a(f'linearized {step.order}: {step.description}; state after: {state}')}</title>"
                f"<circle cx='{x:.1f}' cy='{middle:.1f}' r='4'/>"
                f"<text class='state' x='{x + 5:.1f}' y='{middle - 3:.1f}'>{_a(_cut(state, 14))}</text></g>"
            )
    parts.append(_axis_svg(axis, view, len(lanes) * _LANE))
    parts.append(f"<g class='lane-names'>{''.join(names)}</g>")
    note = f"<p class='note'>{hidden} more calls near these are not drawn.</p>" if hidden else ""
    return (
        f"<div class='timeline' id='{_a(ident)}'><svg xmlns='http://www.w3.org/2000/svg' data-timeline='yes' "
        f"width='{axis.width:.0f}' height='{height}' role='img' aria-label='timeline'>{''.join(parts)}"
        f"</svg></div>{note}"
    )


def _axis_svg(axis: Axis, view: HistoryView, top: int) -> str:
    parts = [f"<line class='axis' x1='{_LEFT}' y1='{top + 2}' x2='{axis.width - 10:.0f}' y2='{top + 2}'/>"]
    step = _tick_step(axis.scale)
    for low, high in axis.segments:
        first_tick = ((low + step - 1) // step) * step
        for index in range(first_tick, high + 1, step):
            x = axis.x(index + 0.5)
            parts.append(
                f"<line class='tick' x1='{x:.1f}' y1='{top + 2}' x2='{x:.1f}' y2='{top + 7}'/>"
                f"<text class='tick-label' x='{x:.1f}' y='{top + 17}' text-anchor='middle'>#{index}</text>"
            )
            moment = view.time_at(index)
            if moment is not None and view.first_time is not None:
                parts.append(
                    f"<text class='tick-label time' x='{x:.1f}' y='{top + 30}' text-anchor='middle'>"
                    f"{_a(format_seconds(moment - view.first_time))}</text>"
                )
    return "".join(parts)


def _swatch(kind: str) -> str:
    rect = f"<rect class='swatch {kind}' x='1' y='1' width='24' height='10' rx='2'/>"
    return f"<svg width='26' height='12'>{rect}</svg>"


LEGEND: Final = (
    "<div class='legend'>"
    f"<span>{_swatch('ok')}ok</span>"
    f"<span>{_swatch('fail')}"
    "failed (no effect)</span>"
    f"<span>{_swatch('info')}"
    "indeterminate or never completed</span>"
    f"<span>{_swatch('bad')}"
    "named by a sentence (its role above it)</span>"
    "<span><svg width='26' height='12'><circle class='swatch-point' cx='13' cy='6' r='4'/></svg>"
    "linearization point, with the model's state after it</span>"
    "<span><svg width='26' height='12'><rect class='swatch gap' x='1' y='1' width='24' height='10'/></svg>"
    "operations not drawn</span>"
    "<span>Bars run from invocation to completion; hover a bar for its operation.</span>"
    "</div>"
)


# ---------------------------------------------------------------------------------------
# Kafka: the per-key view and the realtime lag plot
# ---------------------------------------------------------------------------------------


def _kafka_value(call: Call) -> Any:
    value = call.output if call.outcome is Outcome.OK else call.completion_value
    return call.input if value is None else value


def kafka_pairs(call: Call) -> tuple[list[tuple[str, Any, Any]], list[tuple[str, Any, Any]]]:
    """A Kafka call's sends and polls as (key, offset, value) triples, read leniently."""
    sends: list[tuple[str, Any, Any]] = []
    polls: list[tuple[str, Any, Any]] = []
    value = _kafka_value(call)
    if not isinstance(value, list):
        return sends, polls
    for mop in value:
        if not isinstance(mop, list) or not mop:
            continue
        name = str(mop[0]).lstrip(":")
        if name == "send" and len(mop) >= 3 and call.f != "poll":
            sent = mop[2]
            if isinstance(sent, list) and len(sent) == 2:
                sends.append((str(mop[1]), sent[0], sent[1]))
            else:
                sends.append((str(mop[1]), None, sent))
        elif name == "poll" and len(mop) >= 2 and isinstance(mop[1], dict) and call.f != "send":
            for key, pairs in mop[1].items():
                if isinstance(pairs, list):
                    polls.extend(
                        (str(key), pair[0], pair[1])
                        for pair in pairs
                        if isinstance(pair, list) and len(pair) == 2
                    )
    return sends, polls


def kafka_keys(call: Call) -> set[str]:
    """The keys a Kafka call sends to or polls (assign/subscribe name theirs)."""
    if call.f in ("assign", "subscribe"):
        return {str(key) for key in call.input} if isinstance(call.input, list) else set()
    sends, polls = kafka_pairs(call)
    return {key for key, _, _ in sends} | {key for key, _, _ in polls}


@dataclass
class KeyLog:
    """What the calls of one key said about some of its offsets."""

    sent: dict[int, list[tuple[Any, Call]]] = field(default_factory=dict)
    polled: dict[int, list[tuple[Any, Call]]] = field(default_factory=dict)
    offset_of_value: dict[Any, int] = field(default_factory=dict)


def key_logs(view: HistoryView, keys: Iterable[str]) -> dict[str, KeyLog]:
    """One pass over the history: for each key asked for, the values sent and polled at
    each offset, and the offset of each value (other keys' micro-operations are skipped
    before they are read, so a long history costs one loop over its calls)."""
    logs = {key: KeyLog() for key in keys}
    if not logs:
        return logs
    for call in view.calls:
        f = call.f
        if f not in _DATA:
            continue
        value = _kafka_value(call)
        if value.__class__ is not list:
            continue
        for mop in value:
            if mop.__class__ is not list or len(mop) < 2:
                continue
            name = mop[0]
            if name in _SENDS and f != "poll" and len(mop) >= 3:
                log = logs.get(mop[1] if mop[1].__class__ is str else str(mop[1]))
                sent = mop[2]
                if (
                    log is None
                    or sent.__class__ is not list
                    or len(sent) != 2
                    or call.outcome is Outcome.FAIL
                ):
                    continue
                offset, written = sent
                if isinstance(offset, int):
                    log.sent.setdefault(offset, []).append((written, call))
                    log.offset_of_value.setdefault(_hashable(written), offset)
            elif name in _POLLS and f != "send" and mop[1].__class__ is dict:
                for key, pairs in mop[1].items():
                    log = logs.get(key if key.__class__ is str else str(key))
                    if log is None or pairs.__class__ is not list:
                        continue
                    for pair in pairs:
                        if pair.__class__ is list and len(pair) == 2 and isinstance(pair[0], int):
                            log.polled.setdefault(pair[0], []).append((pair[1], call))
                            log.offset_of_value.setdefault(_hashable(pair[1]), pair[0])
    return logs


_DATA: Final = frozenset({"send", "poll", "txn"})
_SENDS: Final = frozenset({"send", ":send"})
_POLLS: Final = frozenset({"poll", ":poll"})


def _hashable(value: Any) -> Any:
    return json.dumps(value, sort_keys=True, default=str) if isinstance(value, list | dict) else value


def key_view_html(key: str, log: KeyLog, explanations: Sequence[tuple[str, Explanation]]) -> str:
    """A table of the offsets around the anomalies of `key`: the log as the sends were
    acknowledged, then one row per poll that read one of these offsets."""
    marked: dict[int, list[tuple[str, str]]] = {}
    for ident, explanation in explanations:
        offsets = set(explanation.offsets)
        offsets.update(
            log.offset_of_value[_hashable(value)]
            for value in explanation.values
            if _hashable(value) in log.offset_of_value
        )
        for offset in offsets:
            marked.setdefault(offset, []).append((ident, explanation.kind))
    if not marked:
        return ""
    columns: list[int] = []
    for offset in sorted(marked):
        for near in range(offset - 3, offset + 4):
            if (
                near >= 0
                and (near in log.sent or near in log.polled or near in marked)
                and near not in columns
            ):
                columns.append(near)
    columns = sorted(set(columns))[:MAX_KEY_COLUMNS]
    shown = set(columns)
    readers: dict[int, tuple[Call, dict[int, list[Any]]]] = {}
    for offset in columns:
        for value, call in log.polled.get(offset, []):
            row = readers.setdefault(call.invoke_index, (call, {}))
            row[1].setdefault(offset, []).append(value)
    involved = {ref.invoke_index for _, explanation in explanations for ref in explanation.calls}
    rows = sorted(readers.values(), key=lambda row: (_process_order(row[0].process), row[0].invoke_index))
    if len(rows) > MAX_KEY_ROWS:
        first_marked = [row for row in rows if row[0].invoke_index in involved]
        others = [row for row in rows if row[0].invoke_index not in involved]
        rows = sorted(
            first_marked + others[: max(0, MAX_KEY_ROWS - len(first_marked))],
            key=lambda row: (_process_order(row[0].process), row[0].invoke_index),
        )
    header = ["<th>offset</th>"]
    previous = None
    for offset in columns:
        if previous is not None and offset != previous + 1:
            header.append("<th class='skip'>…</th>")
        previous = offset
        kinds = marked.get(offset, [])
        cls = " class='marked'" if kinds else ""
        title = f" title='{_a(', '.join(sorted({kind for _, kind in kinds})))}'" if kinds else ""
        header.append(f"<th{cls}{title} data-offset='{offset}'>{offset}</th>")

    def cells(values_at: Callable[[int], list[Any]], row_calls: set[int]) -> str:
        out = []
        before = None
        for offset in columns:
            if before is not None and offset != before + 1:
                out.append("<td class='skip'></td>")
            before = offset
            values = values_at(offset)
            kinds = marked.get(offset, [])
            classes = []
            if kinds:
                classes.append("marked")
            if len({_hashable(value) for value in values}) > 1:
                classes.append("clash")
            ids = " ".join(sorted({ident for ident, _ in kinds}))
            attributes = f" data-offset='{offset}'"
            if ids and values:
                attributes += f" data-explanations='{_a(ids)}'"
            text = ", ".join(show(value, 16) for value in values)
            cls = f" class='{' '.join(classes)}'" if classes else ""
            out.append(f"<td{cls}{attributes}>{_a(text)}</td>")
        return "".join(out)

    body = [
        "<tr class='log-row'><th>sent (acknowledged or indeterminate)</th>"
        + cells(lambda offset: [value for value, _ in log.sent.get(offset, [])], set())
        + "</tr>"
    ]
    for call, values in rows:
        label = f"process {show(call.process)}'s {call.f} #{call.invoke_index}"
        cls = " class='involved'" if call.invoke_index in involved else ""
        body.append(
            f"<tr{cls} data-op='{call.invoke_index}'><th>{_a(label)}</th>"
            + cells(lambda offset, values=values: values.get(offset, []), {call.invoke_index})  # type: ignore[misc]
            + "</tr>"
        )
    more = len(readers) - len(rows)
    note = f"<p class='note'>{more} more polls read these offsets.</p>" if more > 0 else ""
    return (
        f"<h4>Key {_a(key)}: offsets around the anomalies, as the polls saw them</h4>"
        f"<div class='keyview'><table data-key='{_a(key)}'><tr>{''.join(header)}</tr>{''.join(body)}"
        "</table></div>"
        f"{note}<p class='note'>Marked columns are the offsets the sentences above name (and where their "
        "values "
        f"were seen); a cell with two values is an offset that held different values. Offsets {min(shown)}"
        f"–{max(shown)} shown where something was sent or read.</p>"
    )


_PALETTE: Final = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22")


LAG_SERIES_CALLS: Final = 50_000
"""Histories up to this many calls get Jepsen's lag-over-time lines (every poll's lag per
key, computed again from the history); longer ones the per-process-and-key maxima only."""
LAG_BUCKETS: Final = 300
MAX_LAG_KEYS: Final = 12


def lag_series(view: HistoryView) -> dict[str, list[tuple[float, float]]] | None:
    """Jepsen's `realtime-lag` of every `ok` poll and key (`kafka_checker.realtime_lags`), as
    one line per key of the greatest lag in each of `LAG_BUCKETS` time slices, for the keys
    with the greatest lags; None for a long history or one without times."""
    if not view.calls or len(view.calls) > LAG_SERIES_CALLS:
        return None
    from spark_checks.kafka_checker import realtime_lags

    lags = realtime_lags(view.calls)
    if not lags:
        return None
    times = [float(str(lag["time"])) for lag in lags]
    start, span = min(times), max(max(times) - min(times), 1.0)
    buckets: dict[str, dict[int, tuple[float, float]]] = {}
    for moment, lag in zip(times, lags, strict=True):
        slot = min(LAG_BUCKETS - 1, int((moment - start) / span * LAG_BUCKETS))
        value = float(str(lag["lag"]))
        kept = buckets.setdefault(str(lag["key"]), {}).get(slot)
        if kept is None or value > kept[1]:
            buckets[str(lag["key"])][slot] = (moment, value)
    greatest = sorted(buckets, key=lambda key: -max(value for _, value in buckets[key].values()))
    return {
        key: [buckets[key][slot] for slot in sorted(buckets[key])] for key in sorted(greatest[:MAX_LAG_KEYS])
    }


def lag_plot_svg(
    lag: Mapping[str, Any], series: Mapping[str, list[tuple[float, float]]] | None = None
) -> str:
    """Jepsen's realtime lag as a plot: with `series`, a line per key of the lag over time
    (as Jepsen's realtime-lag plot); else, for each process and key, a point at its greatest
    lag and the time of the poll that had it (colour by key). The worst lag is ringed."""
    rows = [] if series else [row for row in lag.get("by_process_key") or [] if isinstance(row, dict)]
    worst = lag.get("worst") if isinstance(lag.get("worst"), dict) else None
    points = [
        (float(row.get("time") or 0), float(row.get("max_lag") or 0), str(row.get("key")), row.get("process"))
        for row in rows
    ]
    for key, line in (series or {}).items():
        points.extend((moment, value, key, None) for moment, value in line)
    if worst is not None and isinstance(worst.get("lag"), int | float):
        points.append(
            (float(worst.get("time") or 0), float(worst["lag"]), str(worst.get("key")), worst.get("process"))
        )
    if not points:
        return ""
    width, height, left, bottom, top = 760, 300, 70, 40, 16
    max_time = max(point[0] for point in points) or 1.0
    min_time = min(point[0] for point in points)
    max_lag = max(point[1] for point in points) or 1.0
    span = max(max_time - min_time, 1.0)

    def px(moment: float) -> float:
        return left + (moment - min_time) / span * (width - left - 20)

    def py(value: float) -> float:
        return height - bottom - value / max_lag * (height - bottom - top)

    keys = sorted({point[2] for point in points})
    colour = {key: _PALETTE[number % len(_PALETTE)] for number, key in enumerate(keys)}
    parts = [
        f"<line class='axis' x1='{left}' y1='{height - bottom}' x2='{width - 10}' y2='{height - bottom}'/>",
        f"<line class='axis' x1='{left}' y1='{top}' x2='{left}' y2='{height - bottom}'/>",
        f"<text class='axis-title' x='{width / 2:.0f}' y='{height - 6}' text-anchor='middle'>"
        "time of the poll</text>",
        f"<text class='axis-title' x='12' y='{top + 4}' >lag</text>",
    ]
    for tick in range(5):
        moment = min_time + span * tick / 4
        value = max_lag * tick / 4
        parts.append(
            f"<text class='tick-label' x='{px(moment):.1f}' y='{height - bottom + 14}' text-anchor='middle'>"
            f"{_a(format_seconds(moment))}</text>"
            f"<text class='tick-label' x='{left - 4}' y='{py(value) + 4:.1f}' text-anchor='end'>"
            f"{_a(format_seconds(value))}</text>"
            f"<line class='grid' x1='{left}' y1='{py(value):.1f}' x2='{width - 10}' y2='{py(value):.1f}'/>"
        )
    for key, line in (series or {}).items():
        path = " ".join(f"{px(moment):.1f},{py(value):.1f}" for moment, value in line)
        parts.append(
            f"<polyline class='lag-line' data-key='{_a(key)}' points='{path}' stroke='{colour[key]}'>"
            f"<title>key {_a(key)}</title></polyline>"
        )
    for moment, value, key, process in points[: len(rows)]:
        parts.append(
            f"<circle class='lag-point' cx='{px(moment):.1f}' cy='{py(value):.1f}' r='3.5' "
            f"fill='{colour[key]}'><title>{_a(f'process {show(process)}, key {key}: lag ')}"
            f"{_a(f'{format_seconds(value)} at {format_seconds(moment)}')}</title></circle>"
        )
    if worst is not None and isinstance(worst.get("lag"), int | float):
        moment, value = float(worst.get("time") or 0), float(worst["lag"])
        parts.append(
            f"<circle class='worst' cx='{px(moment):.1f}' cy='{py(value):.1f}' r='8'/>"
            f"<text class='worst-label' x='{min(px(moment) + 10, width - 200):.1f}' "
            f"y='{max(py(value) + 4, top + 10):.1f}'>worst: {_a(format_seconds(value))} "
            f"(process {_a(show(worst.get('process')))}, key {_a(worst.get('key'))})</text>"
        )
    legend = "".join(
        f"<span><svg width='10' height='10'><circle cx='5' cy='5' r='4' fill='{colour[key]}'/></svg> "
        f"key {_a(key)}</span>"
        for key in keys[:24]
    )
    return (
        f"<svg xmlns='http://www.w3.org/2000/svg' class='lag-plot' data-plot='realtime-lag' width='{width}' "
        f"height='{height}'>{''.join(parts)}</svg><div class='legend'>{legend}</div>"
    )


def _worst_sentence(worst: Any) -> str:
    if not isinstance(worst, dict) or not worst.get("lag"):
        return "No poll lagged."
    return (
        f"The worst lag: {format_seconds(float(worst['lag']))}, process {show(worst.get('process'))} on key "
        f"{worst.get('key')}, at its poll invoked at {format_seconds(float(worst.get('time') or 0))} "
        "(times in the history's time field, read as nanoseconds)."
    )


def lag_html(report: HistoryReport, view: HistoryView) -> str:
    """The realtime lag: the plot, the worst lag and the greatest per process and key."""
    lag = None
    for result in report.results:
        found = result.evidence.get("realtime_lag")
        if isinstance(found, dict) and found.get("available"):
            lag = found
    if lag is None:
        return ""
    rows = lag.get("by_process_key")
    listed = rows[:200] if isinstance(rows, list) else []
    body = "".join(
        f"<tr><td>{_a(json.dumps(row.get('process')))}</td><td>{_a(row.get('key'))}</td>"
        f"<td>{_a(json.dumps(row.get('max_lag')))}</td></tr>"
        for row in listed
        if isinstance(row, dict)
    )
    count = lag.get("by_process_key_count")
    series = lag_series(view)
    drawn = (
        f"Each line is a key: the greatest lag of its polls in each of {LAG_BUCKETS} slices of time"
        + (
            f" (the {MAX_LAG_KEYS} keys with the greatest lags)"
            if series and len(series) >= MAX_LAG_KEYS
            else ""
        )
        if series
        else "Each point is a process and key at the poll where its lag was greatest"
        + (f" ({len(listed)} of {count} shown)" if isinstance(count, int) and count > len(listed) else "")
    )
    return (
        "<h3>Realtime lag</h3><p>Jepsen's <i>realtime lag</i>: how long before a poll an offset beyond "
        "what its process had reached was known to exist (a lower bound on the poll's staleness). "
        + drawn
        + f".</p>{lag_plot_svg(lag, series)}<p>{_a(_worst_sentence(lag.get('worst')))}</p>"
        "<details><summary>greatest lag per process and key</summary>"
        f"<table><tr><th>process</th><th>key</th><th>greatest lag</th></tr>{body}</table></details>"
    )


# ---------------------------------------------------------------------------------------
# The page
# ---------------------------------------------------------------------------------------


_STYLE: Final = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222;max-width:1400px}
h1{font-size:1.35em}h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ddd}h3{font-size:1.02em}
h4{font-size:.95em;margin:.8em 0 .3em}
.valid{color:#1a7f37}.invalid{color:#cf222e}.unknown{color:#9a6700}
table{border-collapse:collapse;margin:.5em 0}
td,th{border:1px solid #ccc;padding:.2em .5em;font-size:.86em;text-align:left}
pre{background:#f6f8fa;padding:.6em;overflow:auto;max-height:24em;font-size:.8em}
.note{color:#555;font-size:.85em}
ol.explanations li{margin:.25em 0;cursor:pointer}ol.explanations li.allowed{color:#666}
ol.explanations li:hover,ol.explanations li.active{background:#fff3c4}
.timeline{border:1px solid #ddd;overflow:auto;max-height:46em;margin:.4em 0}
.lane{fill:#fff}.lane.odd{fill:#f7f7fa}.names{fill:#fff}.lane-label{font:11px monospace;fill:#444}
.op rect{fill:#9ec5fe;stroke:#4a78c2;stroke-width:.6}.op.fail rect{fill:#d6d6d6;stroke:#999}
.op.info rect{fill:#f2dc8d;stroke:#b8951b}.op.open rect{stroke-dasharray:4 2}
.op.bad rect{stroke:#cf222e;stroke-width:2.2}.op.focus rect{stroke:#000;stroke-width:3}
.label{font:10px monospace;fill:#111;pointer-events:none}
.mark-label{font:bold 10px sans-serif;fill:#cf222e}
.gap rect{fill:url(#none);fill:#eee;stroke:#ccc;stroke-dasharray:3 3}.gap text{font:10px sans-serif;fill:#666}
.axis{stroke:#555}.tick{stroke:#555}.tick-label{font:10px sans-serif;fill:#444}.tick-label.time{fill:#777}
.axis-title{font:10px sans-serif;fill:#333}.grid{stroke:#eee}
.linearization{fill:none;stroke:#2b8a3e;stroke-width:1.4;stroke-dasharray:2 2}
.point circle{fill:#2b8a3e;stroke:#fff}.state{font:9px monospace;fill:#2b8a3e}
.legend{display:flex;flex-wrap:wrap;gap:1em;font-size:.82em;margin:.3em 0;align-items:center}
.legend svg{vertical-align:middle;margin-right:.3em}
.swatch.ok{fill:#9ec5fe;stroke:#4a78c2}.swatch.fail{fill:#d6d6d6;stroke:#999}.swatch.info{fill:#f2dc8d;stroke:#b8951b}
.swatch.bad{fill:#9ec5fe;stroke:#cf222e;stroke-width:2}.swatch-point{fill:#2b8a3e}.swatch.gap{fill:#eee;stroke:#ccc}
.keyview{overflow:auto}.keyview th.marked{background:#ffd7d5}.keyview td.marked{background:#fff0ef}
.keyview td.clash{background:#ffb3ad;font-weight:bold}.keyview tr.involved th{color:#cf222e}
.keyview .skip{background:#eee;border:none}
.worst{fill:none;stroke:#cf222e;stroke-width:2}.lag-line{fill:none;stroke-width:1.5}
.worst-label{font:11px sans-serif;fill:#cf222e}
"""

_SCRIPT: Final = """
(function(){
  function focus(id){
    document.querySelectorAll('.focus').forEach(function(e){e.classList.remove('focus');});
    document.querySelectorAll('li.active').forEach(function(e){e.classList.remove('active');});
    var first = null;
    document.querySelectorAll('[data-explanations]').forEach(function(e){
      if ((' ' + e.getAttribute('data-explanations') + ' ').indexOf(' ' + id + ' ') >= 0) {
        e.classList.add('focus'); if (!first && e.tagName.toLowerCase() === 'g') first = e;
      }
    });
    var item = document.getElementById(id); if (item) item.classList.add('active');
    if (first && first.scrollIntoView) first.scrollIntoView({block: 'nearest', inline: 'center'});
  }
  // Open each timeline on its first named call (a wide timeline scrolls sideways).
  document.querySelectorAll('div.timeline').forEach(function(holder){
    var bad = holder.querySelector('g.op.bad rect');
    var names = holder.querySelector('g.lane-names');
    var follow = function(){
      if (names) names.setAttribute('transform', 'translate(' + holder.scrollLeft + ',0)');
    };
    holder.addEventListener('scroll', follow);
    if (bad) holder.scrollLeft = Math.max(0, bad.x.baseVal.value - holder.clientWidth * 0.6);
    follow();
  });
  document.querySelectorAll('li[data-explanation]').forEach(function(li){
    li.addEventListener('click', function(){ focus(li.id); });
  });
  document.body.setAttribute('data-rendered', 'yes');
})();
"""

_CONVENTION_MEANINGS: Final = {
    "initial": "the register's value before the first operation",
    "nil_read": "what a read of nil means: unconstrained, the nil value was observed (absent: etcd logs), "
    "or Knossos's reading per model (knossos)",
    "failed_cas": "a failed CAS did not happen (Knossos) or ran and saw another value (etcd)",
    "failed_read": "a failed read did not happen, or its result is unknown",
    "sub_via": "how consumers took their partitions (Jepsen's :sub-via)",
    "sub_via_inferred": "whether sub_via was inferred from the history",
    "ww_deps": "write-write dependencies inferred from offsets (Jepsen's :ww-deps)",
    "allowed_error_types": "anomaly types that do not make the history invalid",
    "unseen": "how unseen values are counted",
    "unseen_is_error": "values never polled make the history invalid (Jepsen's checker)",
    "conflicting_offset_representative": "which value stands for an offset that holds several",
    "fail_info_value": "which value of a failed or indeterminate call is analysed",
    "info_commit_evidence": "where the proof that an indeterminate send committed comes from",
    "info_send_committed_if_a_value_was_read": "an indeterminate send committed if a value it sent was read",
    "keys": "how keys are compared",
    "max_listed_values": "longest list of values in one record (counts stay exact)",
    "no_writer_of_value_is_error": "a value read that no call sent is an error (upstream throws)",
    "rebalance_log": "Jepsen's :rebalance-log",
    "source": "the definitions these checks follow",
    "subscribe_allows_poll_skips": "under subscribe, rebalances may skip or repeat offsets",
}


def _verdict(verdict: Verdict) -> str:
    return f"<span class='{verdict.value}'>{verdict.value.upper()}</span>"


def _size(report: HistoryReport) -> str:
    return f"{report.operations:,} operations, {report.calls:,} calls, {len(report.results):,} parts"


def _conventions_html(conventions: Mapping[str, JsonValue]) -> str:
    if not conventions:
        return "<p>No convention applies.</p>"
    rows = "".join(
        f"<tr><td><code>{_a(name)}</code></td><td><code>{_a(show(value, 200))}</code></td>"
        f"<td>{_a(_CONVENTION_MEANINGS.get(name, ''))}</td></tr>"
        for name, value in sorted(conventions.items())
    )
    return (
        f"<table class='conventions'><tr><th>convention</th><th>value</th><th>meaning</th></tr>{rows}</table>"
    )


def _part_name(result: CheckResult) -> str:
    if result.partition is None:
        return "the whole history"
    return f"part {show(result.partition)}"


def _belongs(report: HistoryReport, result: CheckResult) -> Callable[[Call], bool]:
    """Which calls a part's timeline draws: the key's calls for a Kafka key, every data call
    for the Kafka whole-history part, the model's partition for linearizability."""
    if result.checker == "kafka":
        if not isinstance(result.partition, str) or result.partition == "cross-key cycles":
            return lambda call: call.f in ("send", "poll", "txn")
        key = result.partition
        return lambda call: key in kafka_keys(call)
    try:
        from spark_checks.linearizability import get_model

        model = get_model(result.model)
    except ValueError:
        return lambda call: True
    wanted = result.partition

    def same_part(call: Call) -> bool:
        try:
            return bool(_jsonable(model.partition_key(call)) == wanted)
        except (ValueError, TypeError, AttributeError):
            return False

    return same_part


def _jsonable(key: Any) -> Any:
    if isinstance(key, tuple):
        return [_jsonable(item) for item in key]
    if isinstance(key, frozenset):
        return sorted((_jsonable(item) for item in key), key=repr)
    return key


def _prefix_table(steps: Sequence[Step], result: CheckResult, blocked: Explanation | None) -> str:
    if not steps:
        return ""
    shown = steps[-MAX_PREFIX_ROWS:]
    rows = "".join(
        f"<tr data-op='{step.invoke_index}'><td>{step.order}</td><td>#{step.invoke_index}</td>"
        f"<td>{_a(step.description)}</td><td>{_a(step.state if step.state is not None else '?')}</td></tr>"
        for step in shown
    )
    if blocked is not None:
        ref = blocked.calls[0] if blocked.calls else None
        rows += (
            f"<tr class='blocked'><td>✗</td><td>#{ref.invoke_index if ref else '?'}</td>"
            f"<td colspan='2'>{_a('cannot be placed next: ' + blocked.sentence)}</td></tr>"
        )
    final = result.evidence.get("state_after_prefix")
    check = ""
    if isinstance(final, str) and steps[-1].state is not None and steps[-1].state != final:
        check = f"<p class='note'>The search reported the state {_a(final)} after the prefix.</p>"
    earlier = len(steps) - len(shown)
    what = (
        "longest linearizable prefix" if "longest_linearizable_prefix" in result.evidence else "linearization"
    )
    return (
        f"<h4>The {what}, step by step (the model's state after each call)</h4>"
        + (f"<p class='note'>{earlier} earlier steps not listed.</p>" if earlier else "")
        + "<table class='prefix'><tr><th>step</th><th>call</th><th>operation</th><th>state after</th></tr>"
        + f"{rows}</table>{check}"
    )


def _evidence_html(result: CheckResult) -> str:
    text = json.dumps(result.evidence, indent=1, default=str)
    if len(text) > MAX_EVIDENCE_CHARS:
        text = text[:MAX_EVIDENCE_CHARS] + "\n... (cut; see --json)"
    return f"<details><summary>the checker's evidence</summary><pre>{_a(text)}</pre></details>"


def _part_section(
    report: HistoryReport,
    result: CheckResult,
    view: HistoryView,
    explanations: Sequence[tuple[str, Explanation]],
    logs: Mapping[str, KeyLog],
    ident: str,
) -> str:
    items = "".join(
        f"<li id='{_a(i)}' data-explanation='{_a(i)}' data-type='{_a(e.kind)}'"
        f"{' class=allowed' if e.allowed else ''}>{_a(e.sentence)}</li>"
        for i, e in explanations
    )
    marks = _marks(explanations)
    steps = prefix_steps(result, view) if result.checker != "kafka" else []
    # A linearizability timeline reaches further back: the prefix's last steps lead to the failure.
    before = FULL_SPAN // 2 if result.checker != "kafka" else WINDOW_RADIUS
    timeline = (
        timeline_svg(view, _belongs(report, result), marks, steps, f"{ident}-timeline", before)
        if view.calls
        else ""
    )
    blocked = next((e for _, e in explanations if e.kind == "not-linearizable"), None)
    keys = ""
    if result.checker == "kafka":
        by_key: dict[str, list[tuple[str, Explanation]]] = {}
        for i, e in explanations:
            if e.key is not None:
                by_key.setdefault(e.key, []).append((i, e))
        keys = "".join(key_view_html(key, logs[key], named) for key, named in by_key.items() if key in logs)
    return (
        f"<section class='part' id='{_a(ident)}' data-part='{_a(json.dumps(result.partition))}'>"
        f"<h3>{_a(_part_name(result))}: {_verdict(result.verdict)}</h3>"
        f"<p class='note'>{result.checker}, {result.operations:,} calls, {result.seconds:.3f} s</p>"
        f"<ol class='explanations'>{items}</ol>"
        + (f"<h4>Timeline</h4>{timeline}" if timeline else "")
        + _prefix_table(steps, result, blocked)
        + keys
        + _evidence_html(result)
        + "</section>"
    )


def _valid_html(report: HistoryReport, view: HistoryView, number: int) -> str:
    """For a valid history, the linearization the search found of its first part (the
    certificate), drawn as the prefix of a failing part is."""
    shown = next((r for r in report.results if isinstance(r.evidence.get("linearization"), list)), None)
    if shown is None or not view.calls:
        return "<p>Every part is valid.</p>"
    steps = prefix_steps(shown, view)
    ident = f"h{number}-valid"
    timeline = timeline_svg(view, _belongs(report, shown), {}, steps, f"{ident}-timeline")
    return (
        f"<p>Every part is valid. A linearization of {_a(_part_name(shown))} (the first "
        f"{FULL_SPAN} history indices of it):</p>{timeline}{_prefix_table(steps, shown, None)}"
    )


def _sentence_case(text: str) -> str:
    return text[:1].upper() + text[1:]


def _history_section(
    number: int, report: HistoryReport, operations: Sequence[Operation]
) -> tuple[str, list[str]]:
    view = HistoryView.of(operations)
    failing = report.failing()
    # Valid Kafka parts can hold allowed anomalies (Jepsen lists them too): drawn after the failing.
    allowed_only = [
        result
        for result in report.results
        if result.verdict is Verdict.VALID and result.evidence.get("allowed_error_types_found")
    ]
    detailed = [*failing, *allowed_only][:MAX_DETAILED_PARTS]
    explained: list[tuple[CheckResult, list[tuple[str, Explanation]]]] = []
    summary: list[str] = []
    for part_number, result in enumerate(detailed):
        lookup = view.spans(indices_to_look_up([result]))
        named = [
            (f"h{number}-p{part_number}-e{index}", explanation)
            for index, explanation in enumerate(explain_result(result, lookup))
        ]
        explained.append((result, named))
        summary.extend(
            f"<li data-type='{_a(e.kind)}'><a href='#{_a(i)}'>{_a(e.sentence)}</a></li>"
            for i, e in named
            if not e.allowed
        )
    wanted_keys = {e.key for _, named in explained for _, e in named if e.key is not None}
    logs = key_logs(view, {key for key in wanted_keys if key is not None}) if report.model == "kafka" else {}
    sections = [
        _part_section(report, result, view, named, logs, f"h{number}-p{part_number}")
        for part_number, (result, named) in enumerate(explained)
    ]
    not_detailed = max(0, len(failing) - len(detailed))
    allowed = sorted(
        {
            str(name)
            for result in report.results
            for name in (result.evidence.get("allowed_error_types_found") or [])
            if isinstance(result.evidence.get("allowed_error_types_found"), list)
        }
    )
    rows = "".join(
        f"<tr><td>{_a(show(result.partition))}</td>"
        f"<td class='{result.verdict.value}'>{result.verdict.value}</td>"
        f"<td>{result.operations:,}</td><td>{result.seconds:.3f}</td></tr>"
        for result in (failing + [r for r in report.results if r.verdict is Verdict.VALID])[:500]
    )
    window_note = (
        ""
        if report.history is not None or not operations
        else "<p class='note'>This history was checked on Spark: the timelines show the operations near the "
        "evidence only, read again from the file.</p>"
    )
    body = (
        f"<section class='history' id='h{number}'><h2>{_a(report.path)}: {_verdict(report.verdict)}</h2>"
        f"{window_note}"
        + (f"<p>Allowed anomaly types found: {_a(', '.join(allowed))}</p>" if allowed else "")
        + "".join(
            f"<p class='note'>{_a(_sentence_case(deviation_sentence(d)))}</p>"
            for d in deviations_from_jepsen(report.results)
        )
        + (lag_html(report, view) if report.model == "kafka" else "")
        + ("".join(sections) if sections else _valid_html(report, view, number))
        + (
            f"<p class='note'>{not_detailed} more failing parts are listed below, not drawn.</p>"
            if not_detailed
            else ""
        )
        + "<details><summary>every part</summary><table><tr><th>part</th><th>verdict</th><th>calls</th>"
        f"<th>seconds</th></tr>{rows}</table></details></section>"
    )
    return body, summary


def html_page(reports: Sequence[HistoryReport], histories: Sequence[Sequence[Operation]]) -> str:
    """The whole page for `reports`, each with its history's operations (all of them, or a
    window around the evidence)."""
    enabled = gc.isenabled()
    gc.disable()  # the page makes no reference cycles; collections would rescan the whole history
    try:
        return _page(reports, histories)
    finally:
        if enabled:
            gc.enable()


def _page(reports: Sequence[HistoryReport], histories: Sequence[Sequence[Operation]]) -> str:
    from spark_checks.report import overall_verdict  # the report module owns the verdict rules

    verdict = overall_verdict(reports)
    sections: list[str] = []
    sentences: list[str] = []
    for number, (report, operations) in enumerate(zip(reports, histories, strict=True)):
        body, summary = _history_section(number, report, operations)
        sections.append(body)
        sentences.extend(summary)
    checked = "".join(
        f"<tr><td><a href='#h{number}'>{_a(report.path)}</a></td><td>{_verdict(report.verdict)}</td>"
        f"<td>{_a(report.format)}</td><td>{_a(report.model)}</td><td>{_a(report.engine)}</td>"
        f"<td>{report.operations:,}</td><td>{report.calls:,}</td><td>{len(report.results):,} "
        f"({len(report.failing()):,} not valid)</td><td>{report.seconds:.2f}</td></tr>"
        for number, report in enumerate(reports)
    )
    conventions = "".join(
        f"<h4>{_a(report.path)}</h4>{_conventions_html(report.conventions)}" for report in reports
    )
    counted = len(sentences)
    listed = "".join(sentences[:MAX_SENTENCES_IN_SUMMARY])
    more = (
        f"<p class='note'>{counted - MAX_SENTENCES_IN_SUMMARY} more below, by part.</p>"
        if counted > MAX_SENTENCES_IN_SUMMARY
        else ""
    )
    lead = {
        Verdict.VALID: "Every part of every history is valid.",
        Verdict.INVALID: "At least one part is not valid; each sentence below says why, linked to its part.",
        Verdict.UNKNOWN: "No part is invalid, but some could not be decided within the budget.",
    }[verdict]
    title = f"kafkaspec verify: {verdict.value}"
    return (
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{_a(title)}</title>"
        f"<style>{_STYLE}</style></head><body><h1>kafkaspec verify: {_verdict(verdict)}</h1>"
        f"<section class='summary'><p>{lead}</p>"
        "<h3>What was checked</h3><table><tr><th>history</th><th>verdict</th><th>format</th><th>model</th>"
        f"<th>engine</th><th>operations</th><th>calls</th><th>parts</th><th>seconds</th></tr>{checked}</table>"
        f"<h3>Under which conventions</h3>{conventions}"
        + (f"<h3>What went wrong</h3><ol class='summary-sentences'>{listed}</ol>{more}" if sentences else "")
        + f"<h3>How to read the timelines</h3>{LEGEND}</section>"
        + "".join(sections)
        + f"<script>{_SCRIPT}</script></body></html>"
    )
