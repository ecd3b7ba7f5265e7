"""`kafkaspec docs --out DIR`: the documentation site, generated from the spec itself.

The hand-written pages (the architecture, the glossary, a reading order) are in `docs/`; every
other page is generated here, at build time, from what the code says, so the site cannot drift
from the spec:

* a page per state machine of `spec.scenarios.MACHINES`: its module's docstring (what it is and
  why it exists), its configuration with the `--set` keys (Kafka's names), its state (each
  field with the comment that follows it in the source), each action with the docstring and
  source of the function that applies it (its guard and its effect), each invariant, step
  property and witness with its docstring and source, and a state diagram: the machine's
  `Diagram` projection applied to every transition the model checker explores;
* a page per further module a machine is built from (`Machine.modules`): its docstring, types
  and functions (with their PEP 316 contracts);
* a page per scenario of `spec.scenarios.SCENARIOS`: its configuration, bounds, expected and
  found outcome, and the trace step by step with the fields that changed highlighted. A
  counterexample ends with the machine's sentence saying why the property fails; a scenario
  that expects no violation shows a shortest trace to each of its witnesses, found by checking
  the scenario with "not the witness" as its only invariant.

Sphinx (the Python ecosystem's documentation generator) builds the HTML with its standard
extensions only: `sphinx.ext.graphviz` draws the diagrams as SVG (with Graphviz's `dot`),
the search is Sphinx's own, offline, and no page loads anything from the network.

The pages read the spec's source (`inspect.getsource`) and its functions' annotations, which
the compiled spec (`spec._compiled`, the default where it is built) has not: a process running
it checks the scenarios itself and hands their findings to a process started with
`KAFKASPEC_NATIVE=0`, which renders the pages from the interpreted source and builds the site.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import html
import importlib
import inspect
import io
import multiprocessing
import os
import pickle
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import types
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafkaspec.outcomes import Findings, FindingsCache, scenario_witness_traces
from kafkaspec.render import action_name, describe_action
from kafkaspec.witnesses import WitnessTrace, witness_trace
from spec import _compiled
from spec.checker import CheckResult, Model, TraceStep, check, default_workers
from spec.machines import Machine, Scenario, ScenarioOutcome, run_scenario
from spec.scenarios import MACHINES, SCENARIOS

DOCS_SOURCE = Path(__file__).resolve().parent.parent / "docs"
"""The hand-written pages and Sphinx's configuration (`docs/conf.py`)."""

STAMP = ".kafkaspec-docs"
"""A file in every built site: `kafkaspec docs` replaces only a directory that holds it."""


class DocsError(Exception):
    """The site cannot be built: a bad output directory, or Sphinx or `docs/` missing."""


@dataclass(frozen=True)
class BuildResult:
    """A built site: where, which pages, what Sphinx warned about, how long it took."""

    out: Path
    pages: tuple[str, ...]  # Sphinx document names, e.g. "machines/partition"
    warnings: tuple[str, ...]
    seconds: float

    @property
    def index(self) -> Path:
        """The site's front page."""
        return self.out / "index.html"


# ---------------------------------------------------------------------------------------
# The output directory
# ---------------------------------------------------------------------------------------


def check_output_dir(out: Path) -> None:
    """Refuse (DocsError, one line) a path that is a file, or a non-empty directory that is
    not a previous `kafkaspec docs` build: the build never overwrites anything else."""
    if out.exists() and not out.is_dir():
        raise DocsError(f"{out} exists and is not a directory")
    if out.is_dir() and any(out.iterdir()) and not (out / STAMP).is_file():
        raise DocsError(
            f"{out} is not empty and is not a kafkaspec docs build; choose an empty or new directory"
        )


def _clear_previous_build(out: Path) -> None:
    for entry in out.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


# ---------------------------------------------------------------------------------------
# Reading the spec: docstrings, field comments, actions and properties
# ---------------------------------------------------------------------------------------

_COLUMN_LINE = re.compile(r"^(?P<indent>\s*)(?P<term>\S(?:\S| (?! ))*?)\s{2,}(?P<text>\S.*)$")
_FIELD_COMMENT = re.compile(r"^    (?P<name>\w+)\s*(?::[^=#]*)?(?:=[^#]*)?#\s*(?P<comment>.*)$")


def _docstring(obj: object) -> str:
    return inspect.cleandoc(obj.__doc__) if isinstance(obj.__doc__, str) else ""


_TABLE_BORDER = re.compile(r"^\s*=+(\s+=+)+\s*$")


def _in_simple_tables(lines: Sequence[str]) -> set[int]:
    """The lines of the paragraphs that hold a reST simple table (a border of `===`)."""
    inside: set[int] = set()
    start = 0
    for index in range(len(lines) + 1):
        if index == len(lines) or not lines[index].strip():
            if any(_TABLE_BORDER.match(line) for line in lines[start:index]):
                inside.update(range(start, index))
            start = index + 1
    return inside


def _docstring_as_rst(text: str) -> str:
    """The spec's docstring conventions made reST: a section title that wraps onto a second
    line becomes one line, a bullet list right after its paragraph gets the blank line reST
    needs, and aligned two-column blocks become definition lists."""
    lines = text.splitlines()
    tables = _in_simple_tables(lines)
    joined: list[str] = []
    for index, line in enumerate(lines):
        indent = len(line) - len(line.lstrip())
        previous = joined[-1] if joined else ""
        previous_indent = len(previous) - len(previous.lstrip())
        following = lines[index + 1] if index + 1 < len(lines) else ""
        title_continues = (
            index not in tables
            and line.strip()
            and indent == 0
            and previous.strip()
            and previous_indent == 0
            and following.startswith("    ")
            and not previous.lstrip().startswith(("* ", "- "))
        )
        if title_continues:
            joined[-1] = f"{previous} {line.strip()}"
            continue
        bullet = line.lstrip().startswith(("* ", "- ")) and index not in tables
        previous_in_list = previous.lstrip().startswith(("* ", "- ")) or previous_indent > indent
        if bullet and previous.strip() and not previous_in_list:
            joined.append("")
        joined.append(line)
    return _columns_as_definitions(joined, _in_simple_tables(joined))


def _columns_as_definitions(lines: Sequence[str], tables: set[int]) -> str:
    """Rewrite aligned two-column blocks (`ProducerSend      a producer appends ...`, with
    continuation lines indented to the second column), as the spec's module docstrings write
    them, into reST definition lists; everything else (and simple tables) is left as it is."""
    result: list[str] = []
    index = 0
    while index < len(lines):
        if index in tables:
            result.append(lines[index])
            index += 1
            continue
        match = _COLUMN_LINE.match(lines[index])
        following = lines[index + 1] if index + 1 < len(lines) else ""
        if match is None or match["term"].endswith((".", ",", ":")):
            result.append(lines[index])
            index += 1
            continue
        indent = match["indent"]
        column = len(lines[index]) - len(match["text"])
        next_match = _COLUMN_LINE.match(following)
        next_head = following[len(indent) : column - 1]
        aligned = (
            following.startswith(indent)
            and bool(next_head)
            and " " not in next_head
            and following[column - 1 : column] == " "
            and bool(following[column : column + 1].strip())
        )
        continues = following.startswith(" " * 8) and following[:column].strip() == ""
        if not ((next_match and next_match["indent"] == indent) or aligned or continues):
            result.append(lines[index])
            index += 1
            continue
        previous = result[-1] if result else ""
        if previous.strip() and len(previous) - len(previous.lstrip()) >= len(indent):
            result.append("")  # after a paragraph; right after a term, the list is its definition
        while index < len(lines) and index not in tables:
            line = lines[index]
            match = _COLUMN_LINE.match(line)
            head = line[len(indent) : column - 1]
            if match is not None and match["indent"] == indent:
                term, text = match["term"], match["text"]
            elif line.startswith(indent) and head and " " not in head and line[column - 1 : column] == " ":
                term, text = head, line[column:]  # a term as wide as its column: one space before the text
            else:
                break
            result.append(f"{indent}``{term.strip('`')}``")
            result.append(f"{indent}    {text}")
            index += 1
            while index < len(lines) and lines[index].strip() and lines[index][:column].strip() == "":
                result.append(f"{indent}    {lines[index].strip()}")
                index += 1
        if index < len(lines) and lines[index].strip():
            result.append("")
    return "\n".join(result)


def _parses_cleanly(text: str) -> bool:
    """reST that docutils reads without a warning (so Sphinx will too)."""
    from docutils import nodes
    from docutils.core import publish_doctree
    from docutils.parsers.rst import roles

    stream = io.StringIO()
    # Sphinx's roles are unknown to plain docutils: parse them as literal text.
    for name in ("ref", "doc", "py:obj", "py:class", "py:func", "term"):
        roles.register_generic_role(name, nodes.literal)
    tree = publish_doctree(
        text,
        settings_overrides={"report_level": 2, "halt_level": 5, "warning_stream": stream},
    )
    return not any(True for _ in tree.findall(nodes.system_message)) and not stream.getvalue()


def rst_text(text: str) -> str:
    """A docstring as reST: aligned columns become definition lists; text docutils cannot
    read without a warning is shown as it is written, in a literal block."""
    text = inspect.cleandoc(text)
    if not text:
        return ""
    converted = _docstring_as_rst(text)
    if _parses_cleanly(converted):
        return converted
    return ".. code-block:: text\n\n" + textwrap.indent(text, "    ")


def first_sentence(text: str) -> str:
    """The docstring's first sentence, on one line."""
    paragraph = " ".join(inspect.cleandoc(text).split("\n\n")[0].split())
    match = re.match(r"(.+?[.!?])(\s|$)", paragraph)
    return match.group(1) if match else paragraph


def field_comments(cls: type) -> dict[str, str]:
    """Each field's (or enum member's) trailing `# comment` in the class's source."""
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):
        return {}
    comments: dict[str, str] = {}
    for line in source.splitlines():
        match = _FIELD_COMMENT.match(line)
        if match:
            comments[match["name"]] = match["comment"].strip()
    return comments


def _source(obj: object) -> str:
    try:
        return textwrap.dedent(inspect.getsource(obj))  # type: ignore[arg-type]
    except (OSError, TypeError):
        return ""


def _defined_in(module: types.ModuleType, obj: object) -> bool:
    return getattr(obj, "__module__", None) == module.__name__


def _annotation_names(function: Callable[..., Any]) -> set[str]:
    names: set[str] = set()
    for parameter in inspect.signature(function).parameters.values():
        annotation = parameter.annotation
        names.add(annotation if isinstance(annotation, str) else getattr(annotation, "__name__", ""))
    return names


def action_function(module: types.ModuleType, action_type: type) -> Callable[..., Any] | None:
    """The function of `module` that applies `action_type` (a parameter annotated with it)."""
    for _, function in inspect.getmembers(module, inspect.isfunction):
        if _defined_in(module, function) and action_type.__name__ in _annotation_names(function):
            return function
    return None


def _union_members(alias: object) -> tuple[type, ...]:
    if isinstance(alias, types.UnionType) or typing.get_origin(alias) is typing.Union:
        return tuple(member for member in typing.get_args(alias) if isinstance(member, type))
    return ()


def _explored(
    model: Model[Any, Any], max_depth: int, on_step: Callable[[Any, Any, Any], None]
) -> CheckResult[Any, Any]:
    """Check `model` with no property, calling `on_step(before, action, after)` on every
    transition the checker applies (the checker calls `step` once per enabled candidate)."""

    def step(state: Any, action: Any) -> Any:
        after = model.step(state, action)
        if after is not None:
            on_step(state, action, after)
        return after

    return check(
        Model(model.initial_states, model.candidate_actions, step, {}, canonical=model.canonical),
        max_depth,
    )


@dataclass(frozen=True)
class MachineDoc:
    """What a machine's page shows, read from the spec."""

    machine: Machine[Any, Any, Any]
    module: types.ModuleType  # where its state and actions are defined
    config_type: type
    state_type: type
    actions: tuple[tuple[type, Callable[..., Any] | None], ...]
    invariants: Mapping[str, Callable[..., Any]]
    step_properties: Mapping[str, Callable[..., Any]]
    witnesses: Mapping[str, Callable[..., Any]]
    scenarios: tuple[Scenario[Any], ...]

    def kind_of(self, name: str) -> str:
        """Under which heading a property is documented: invariant, step or witness."""
        if name in self.step_properties and name not in self.invariants:
            return "step"
        return "witness" if name in self.witnesses and name not in self.invariants else "invariant"


def _named_callables(module: types.ModuleType, attribute: str) -> dict[str, Callable[..., Any]]:
    table = getattr(module, attribute, None)
    if isinstance(table, Mapping):
        return {str(name): value for name, value in table.items() if callable(value)}
    return {}


def read_machine(machine: Machine[Any, Any, Any], scenarios: Sequence[Scenario[Any]]) -> MachineDoc:
    """The machine's module, types, actions and properties. The module is `machine.modules[0]`
    or, when the machine names none, the module of its initial state's type; the actions are
    the members of the module's `Action` union or else the actions the checker meets in a short
    exploration; the properties are the module's INVARIANTS, STEP_PROPERTIES and WITNESSES
    tables, or else those its scenarios check."""
    mine = tuple(scenario for scenario in scenarios if scenario.machine is machine)
    models = [
        scenario.machine.model(scenario.config, scenario.invariants, scenario.witnesses) for scenario in mine
    ]
    state_type = type(models[0].initial_states[0])
    module = importlib.import_module(machine.modules[0] if machine.modules else state_type.__module__)
    action_types = _union_members(getattr(module, "Action", None))
    if not action_types:
        seen: dict[type, None] = {}
        _explored(models[0], 6, lambda _before, action, _after: seen.setdefault(type(action)))
        action_types = tuple(seen)
    invariants = _named_callables(module, "INVARIANTS")
    step_properties = _named_callables(module, "STEP_PROPERTIES")
    witnesses = _named_callables(module, "WITNESSES")
    for model in models:
        for name, function in model.invariants.items():
            invariants.setdefault(name, function)
        for name, relation in model.step_properties.items():
            step_properties.setdefault(name, relation)
        for name, function in model.witnesses.items():
            witnesses.setdefault(name, function)
    return MachineDoc(
        machine=machine,
        module=module,
        config_type=type(mine[0].config),
        state_type=state_type,
        actions=tuple((action, action_function(module, action)) for action in action_types),
        invariants=invariants,
        step_properties=step_properties,
        witnesses=witnesses,
        scenarios=mine,
    )


# ---------------------------------------------------------------------------------------
# The state diagram
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DiagramGraph:
    """The projected transition graph: nodes, the initial node, edges labelled by actions."""

    initial: tuple[str, ...]
    nodes: tuple[str, ...]  # in order of discovery
    edges: Mapping[tuple[str, str], tuple[str, ...]]  # (from, to) -> action names
    states: int
    transitions: int


def diagram_graph(machine: Machine[Any, Any, Any]) -> DiagramGraph | None:
    """Every transition the checker explores under the diagram's configuration, projected
    onto the diagram's nodes (transitions within one node are left out)."""
    diagram = machine.diagram
    if diagram is None:
        return None
    model = machine.model(diagram.config, (), ())
    nodes: dict[str, None] = {}
    edges: dict[tuple[str, str], dict[str, None]] = {}
    initial = tuple(dict.fromkeys(diagram.project(state) for state in model.initial_states))
    nodes.update(dict.fromkeys(initial))

    def record(before: Any, action: Any, after: Any) -> None:
        source, target = diagram.project(before), diagram.project(after)
        nodes.setdefault(source)
        nodes.setdefault(target)
        if source != target:
            name = diagram.label(action) if diagram.label is not None else action_name(action)
            edges.setdefault((source, target), {}).setdefault(name)

    result = _explored(model, diagram.max_depth, record)
    return DiagramGraph(
        initial=initial,
        nodes=tuple(nodes),
        edges={pair: tuple(names) for pair, names in edges.items()},
        states=result.distinct_states,
        transitions=result.transitions,
    )


def _dot_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def diagram_dot(graph: DiagramGraph) -> str:
    """The graph in Graphviz's language."""
    lines = [
        "digraph machine {",
        '  rankdir=TB; bgcolor="transparent"; nodesep=0.5; ranksep=0.6;',
        '  node [shape=box, style="rounded,filled", fillcolor="#eef4fb", color="#3a6ea5", '
        'fontname="Helvetica", fontsize=14];',
        '  edge [fontname="Helvetica", fontsize=11, color="#555555"];',
        '  start [shape=point, width=0.12, label=""];',
    ]
    lines += [f"  {_dot_string(node)};" for node in graph.nodes]
    lines += [f"  start -> {_dot_string(node)};" for node in graph.initial]
    for (source, target), names in graph.edges.items():
        lines.append(
            f"  {_dot_string(source)} -> {_dot_string(target)} [label={_dot_string(chr(10).join(names))}];"
        )
    lines.append("}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------
# reST helpers
# ---------------------------------------------------------------------------------------


def _heading(text: str, underline: str, overline: bool = False) -> str:
    rule = underline * max(len(text), 3)
    return f"{rule}\n{text}\n{rule}\n" if overline else f"{text}\n{rule}\n"


def _label(*parts: str) -> str:
    return "-".join(re.sub(r"[^a-z0-9]+", "-", part.lower()).strip("-") for part in parts)


def _table(header: Sequence[str] | None, rows: Iterable[Sequence[str]], widths: str = "") -> str:
    """A reST list-table (cells are reST); no header row when `header` is None."""
    out = [".. list-table::", f"   :header-rows: {0 if header is None else 1}"]
    if widths:
        out.append(f"   :widths: {widths}")
    out.append("")
    for row in (*([header] if header is not None else []), *rows):
        for column, cell in enumerate(row):
            bullet = "   * - " if column == 0 else "     - "
            cell_lines = (cell or " ").splitlines() or [" "]
            out.append(bullet + cell_lines[0])
            out += ["       " + line for line in cell_lines[1:]]
    return "\n".join(out) + "\n"


def _literal(text: str) -> str:
    return f"``{text}``" if text else ""


def _source_block(obj: object, summary: str = "source") -> str:
    """The object's source, folded, highlighted as Sphinx highlights code (its `highlight` CSS
    class). Raw HTML rather than a code-block: Sphinx then neither parses nor indexes it, which
    halves the build of the pages that show every action's source."""
    from sphinx.highlighting import PygmentsBridge

    source = _source(obj)
    if not source:
        return ""
    code = PygmentsBridge("html").highlight_block(source.rstrip(), "python")
    markup = (
        f'<details class="ks-source"><summary>{html.escape(summary)}</summary>'
        f'<div class="highlight-python notranslate">{code}</div></details>'
    )
    return _raw_html(markup)


def _type_text(annotation: object) -> str:
    if isinstance(annotation, str):
        return annotation
    if isinstance(annotation, type):
        return annotation.__name__
    return str(annotation).replace("typing.", "")


def _value_text(value: object) -> str:
    if isinstance(value, enum.Enum):
        return str(value) if type(value).__str__ is not enum.Enum.__str__ else str(value.value)
    if isinstance(value, tuple | list | frozenset | set):
        return ", ".join(_value_text(item) for item in value) or "(none)"
    return str(value)


def _config_text(config: object) -> str:
    """`PartitionConfig(max_records=1)`: the fields that differ from the defaults."""
    try:
        defaults = type(config)()
    except TypeError:
        return str(config)
    changed = [
        f"{field.name}={_value_text(getattr(config, field.name))}"
        for field in dataclasses.fields(config)  # type: ignore[arg-type]
        if not field.name.startswith("_") and getattr(config, field.name) != getattr(defaults, field.name)
    ]
    return f"{type(config).__name__}({', '.join(changed)})"


def _html_code(text: str) -> str:
    """Escape, and show `backticked` names as code."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text))


def _dataclass_fields(cls: type) -> list[tuple[str, str, str]]:
    """(name, type, comment) of each public field."""
    if not dataclasses.is_dataclass(cls):
        return []
    comments = field_comments(cls)
    return [
        (item.name, _type_text(item.type), comments.get(item.name, ""))
        for item in dataclasses.fields(cls)
        if not item.name.startswith("_")
    ]


def _type_section(cls: type, level: str, label: str) -> str:
    """A dataclass or enum: its docstring and its fields or members with their comments."""
    parts = [f".. _{label}:\n", _heading(cls.__name__, level), rst_text(_docstring(cls)), ""]
    if isinstance(cls, type) and issubclass(cls, enum.Enum):
        comments = field_comments(cls)
        rows = [
            (_literal(member.name), _literal(str(member.value)), comments.get(member.name, ""))
            for member in cls
        ]
        parts.append(_table(("member", "value", "note"), rows, "25 20 55"))
    elif dataclasses.is_dataclass(cls):
        rows = [(_literal(name), _literal(kind), comment) for name, kind, comment in _dataclass_fields(cls)]
        if rows:
            parts.append(_table(("field", "type", "meaning"), rows, "25 25 50"))
    return "\n".join(parts) + "\n"


def _nested_types(root: type) -> list[type]:
    """`root` and the spec's dataclasses and enums its fields hold, in order of discovery."""
    found: dict[type, None] = {}

    def visit(kind: object) -> None:
        if isinstance(kind, type):
            if kind in found or not kind.__module__.startswith("spec"):
                return
            if dataclasses.is_dataclass(kind):
                found[kind] = None
                try:
                    hints = typing.get_type_hints(kind)
                except (NameError, TypeError):
                    hints = {}
                for name, hint in hints.items():
                    if not name.startswith("_"):
                        visit(hint)
            elif issubclass(kind, enum.Enum):
                found[kind] = None
            return
        for argument in typing.get_args(kind):
            visit(argument)

    visit(root)
    return list(found)


# ---------------------------------------------------------------------------------------
# Traces, as HTML with the changed fields highlighted
# ---------------------------------------------------------------------------------------

_FIELD_SPLIT = re.compile(r"(\s{2,})")


def _label_and_fields(line: str) -> tuple[str, list[str]]:
    label, colon, rest = line.partition(":")
    if not colon:
        return "", _FIELD_SPLIT.split(line)
    return label + ":", _FIELD_SPLIT.split(rest)


def highlight_changes(previous: Sequence[str] | None, current: Sequence[str]) -> list[str]:
    """The state's lines as HTML, with each field that changed since `previous` in <mark>
    (fields are the parts of a line separated by two or more spaces; a line is matched with
    the previous line of the same label, the text before its first colon)."""
    before: dict[str, set[str]] = {}
    for line in previous or ():
        label, fields = _label_and_fields(line)
        before[label] = {field.strip() for field in fields if field.strip()}
    shown: list[str] = []
    for line in current:
        label, fields = _label_and_fields(line)
        old = before.get(label)
        pieces = [html.escape(label)]
        for field in fields:
            text = html.escape(field)
            changed = previous is not None and field.strip() and (old is None or field.strip() not in old)
            pieces.append(f"<mark>{text}</mark>" if changed else text)
        shown.append("".join(pieces))
    return shown


def trace_html(
    machine: Machine[Any, Any, Any],
    trace: Sequence[TraceStep[Any, Any]],
    last_line: str,
    reached: bool = False,
) -> str:
    """A trace as HTML: per step the action (with the first sentence of its docstring) and the
    whole state, changed fields highlighted; then `last_line`."""
    out = ['<div class="ks-trace">']
    previous: Sequence[str] | None = None
    for number, step in enumerate(trace):
        current = machine.describe_state(step.state)
        doc = (
            first_sentence(_docstring(type(step.action))) if step.action is not None else "the initial state"
        )
        out.append('<div class="ks-step">')
        out.append(
            f'<div class="ks-action"><span class="ks-number">step {number}</span> '
            f"<code>{html.escape(describe_action(step.action) if step.action is not None else 'Init')}</code>"
            f' <span class="ks-doc">{_html_code(doc)}</span></div>'
        )
        out.append("<pre>" + "\n".join(highlight_changes(previous, current)) + "</pre>")
        out.append("</div>")
        previous = current
    out.append(f'<p class="{"ks-reached" if reached else "ks-why"}">{last_line}</p>')
    out.append("</div>")
    return "\n".join(out)


def _raw_html(markup: str) -> str:
    return ".. raw:: html\n\n" + textwrap.indent(markup, "   ") + "\n"


# ---------------------------------------------------------------------------------------
# Pages
# ---------------------------------------------------------------------------------------


def _module_page_name(module_name: str) -> str:
    return "modules/" + module_name.replace(".", "-")


def _unwrapped(function: Callable[..., Any]) -> Callable[..., Any]:
    """The function a `functools.partial` (e.g. an invariant bound to its configuration) calls."""
    while isinstance(function, functools.partial):
        function = function.func
    return function


def _property_section(machine: str, kind: str, name: str, function: Callable[..., Any]) -> str:
    function = _unwrapped(function)
    return "\n".join(
        [
            f".. _{_label(machine, kind, name)}:\n",
            _heading(name, "~"),
            rst_text(_docstring(function)),
            "",
            _source_block(function),
        ]
    )


def machine_page(doc: MachineDoc, graph: DiagramGraph | None, has_dot: bool) -> str:
    """The page of one state machine."""
    machine = doc.machine
    name = machine.name
    out = [
        f".. _{_label('machine', name)}:\n",
        _heading(f"The {name} state machine", "=", overline=True),
        f"*{machine.title}.* Specified in ``{doc.module.__name__}``"
        + (
            "; built from "
            + ", ".join(f":doc:`{module} </{_module_page_name(module)}>`" for module in machine.modules[1:])
            if len(machine.modules) > 1
            else ""
        )
        + ".\n",
        _heading("Overview", "-"),
        rst_text(_docstring(doc.module)),
        "",
        f".. _{_label(name, 'diagram')}:\n",
        _heading("State diagram", "-"),
    ]
    if graph is None:
        out.append(
            "This machine declares no diagram projection yet (`Machine.diagram` in `spec.machines`).\n"
        )
    else:
        assert machine.diagram is not None
        out.append(
            f"Nodes: {machine.diagram.title}. The edges are every transition the model checker "
            f"explores under the configuration below ({graph.states:,} states, {graph.transitions:,} "
            "transitions), each projected onto its two nodes and labelled with the actions that make it "
            "(transitions that stay within one node are left out); the dot marks the initial state. "
            f"Configuration: ``{_config_text(machine.diagram.config)}``.\n"
        )
        if has_dot:
            out.append(
                ".. graphviz::\n   :align: center\n   :class: ks-diagram\n\n"
                + textwrap.indent(diagram_dot(graph), "   ")
                + "\n"
            )
        else:
            out.append(
                "*(Graphviz's* ``dot`` *was not installed when this site was built: the table alone.)*\n"
            )
        rows = [
            (source, target, ", ".join(f"``{n}``" for n in names))
            for (source, target), names in graph.edges.items()
        ]
        out.append(".. rubric:: The diagram's edges\n")
        out.append(_table(("from", "to", "actions"), rows, "30 30 40"))
    out.append(f".. _{_label(name, 'configuration')}:\n")
    out.append(_heading("Configuration", "-"))
    out.append(rst_text(_docstring(doc.config_type)) + "\n")
    keys = {setting.field: key for key, setting in machine.settings.items()}
    descriptions = {setting.field: setting.description for setting in machine.settings.values()}
    rows = [
        (_literal(field), _literal(keys.get(field, "")), comment or descriptions.get(field, ""))
        for field, _kind, comment in _dataclass_fields(doc.config_type)
    ]
    out.append(
        "Each field with its ``--set`` key (Kafka's configuration name where Kafka has one; "
        "the others bound the exploration):\n"
    )
    out.append(_table(("field", "--set key", "meaning"), rows, "25 30 45"))
    out.append(f".. _{_label(name, 'state')}:\n")
    out.append(_heading("State", "-"))
    out += [
        _type_section(cls, "~", _label(name, "type", cls.__name__)) for cls in _nested_types(doc.state_type)
    ]
    out.append(f".. _{_label(name, 'actions')}:\n")
    out.append(_heading("Actions", "-"))
    out.append(
        "Each action is a frozen value; the function that applies it returns the next state, or "
        "``None`` when the action is not enabled (its guard). Its docstring says the guard and the "
        "effect, and the source is the definition.\n"
    )
    for action_type, function in doc.actions:
        out.append(f".. _{_label(name, 'action', action_type.__name__)}:\n")
        out.append(_heading(action_type.__name__, "~"))
        fields = ", ".join(f"{field}: {kind}" for field, kind, _ in _dataclass_fields(action_type))
        out.append(
            f"``{action_type.__name__}({fields})``: {rst_text(first_sentence(_docstring(action_type)))}\n"
        )
        if function is not None:
            out.append(f"**Guard and effect** (``{function.__name__}``):\n")
            out.append(rst_text(_docstring(function)) + "\n")
            out.append(_source_block(function, f"source of {function.__name__}"))
    for kind, title, table, intro in (
        (
            "invariant",
            "Invariants",
            doc.invariants,
            "Safety properties: each must hold in every reachable state.",
        ),
        (
            "step",
            "Step properties",
            doc.step_properties,
            "Relations between a state and its successor, checked on every transition.",
        ),
        (
            "witness",
            "Witnesses",
            doc.witnesses,
            "States that must be reachable, so that a scenario expecting no violation cannot pass vacuously.",
        ),
    ):
        if not table:
            continue
        out.append(f".. _{_label(name, kind + 's')}:\n")
        out.append(_heading(title, "-"))
        out.append(intro + "\n")
        out += [_property_section(name, kind, prop, function) for prop, function in table.items()]
    out.append(_references(doc))
    out.append(_heading("Scenarios", "-"))
    rows = [
        (f":ref:`{scenario.name} <{_label('scenario', scenario.name)}>`", scenario.expected, scenario.summary)
        for scenario in doc.scenarios
    ]
    out.append(_table(("scenario", "expected", "question"), rows, "25 15 60"))
    return "\n".join(out)


_KIP = re.compile(r"\bKIP-(\d+)\b")
_JIRA = re.compile(r"\bKAFKA-(\d+)\b")
# `CamelCase`, `CamelCase.method` or `Word.method`: how the docstrings name Kafka's classes.
_KAFKA_NAME = re.compile(r"`((?:[A-Z][a-z]+){2,}[A-Za-z]*(?:\.[a-z][A-Za-z]+)?|[A-Z][a-z]+\.[a-z][A-Za-z]+)`")
_KAFKA_SETTING = re.compile(r"`([a-z]+(?:\.[a-z]+)+)`")


def _references(doc: MachineDoc) -> str:
    """What the machine's docstrings cite: KIPs, JIRA issues, Kafka's configuration names (its
    `--set` keys that are Kafka's) and the Kafka classes and methods named in backquotes."""
    modules = [doc.module, *(importlib.import_module(name) for name in doc.machine.modules[1:])]
    texts = [_docstring(module) for module in modules]
    texts += [_docstring(function) for _, function in doc.actions if function is not None]
    texts += [
        _docstring(_unwrapped(function)) for function in (*doc.invariants.values(), *doc.witnesses.values())
    ]
    text = "\n".join(texts)
    kips = sorted({int(number) for number in _KIP.findall(text)})
    jiras = sorted({int(number) for number in _JIRA.findall(text)})
    spec_prefixes = ("spec.", "reference.", "impl.", "conformance.", "kafkaspec.", "spark_checks.")
    # Kafka's settings as the prose names them, and the machine's --set keys that are Kafka's.
    kafka_settings = sorted(
        {name for name in _KAFKA_SETTING.findall(text) if not name.startswith((*spec_prefixes, "max."))}
        | {
            key
            for key in doc.machine.settings
            if f"`{key}`" in text and "." in key and not key.startswith("max.")
        }
    )
    # Kafka's classes, not the spec's own types of the same name (those have their sections here).
    classes = sorted(
        name
        for name in set(_KAFKA_NAME.findall(text))
        if not name.endswith(".json")
        and ("." in name or not any(hasattr(module, name) for module in modules))
    )
    rows = [
        ("KIPs", ", ".join(f"KIP-{number}" for number in kips) or "-"),
        ("JIRA issues", ", ".join(f"KAFKA-{number}" for number in jiras) or "-"),
        ("Kafka configuration", ", ".join(_literal(key) for key in kafka_settings) or "-"),
        ("Kafka classes and methods", ", ".join(_literal(name) for name in classes) or "-"),
    ]
    intro = (
        "Everything the docstrings of this machine and of the modules it is built from cite, gathered "
        "(KIPs link to the list of Kafka Improvement Proposals, issues to Apache's JIRA).\n"
    )
    return _heading("References", "-") + "\n" + intro + "\n" + _table(None, rows, "20 80")


def module_page(module_name: str) -> str:
    """The page of a module a machine is built from: docstring, types, functions."""
    module = importlib.import_module(module_name)
    out = [
        f".. _{_label('module', module_name)}:\n",
        _heading(f"{module_name}: {first_sentence(_docstring(module)).rstrip('.')}", "=", overline=True),
        rst_text(_docstring(module)),
        "",
    ]
    classes = [
        cls
        for name, cls in inspect.getmembers(module, inspect.isclass)
        # by the name it has in the module: a private alias (`_P = PartitionState`) is not a second type
        if _defined_in(module, cls) and not name.startswith("_") and name == cls.__name__
    ]
    classes.sort(key=lambda cls: inspect.getsourcelines(cls)[1])
    if classes:
        out.append(_heading("Types", "-"))
        out += [_type_section(cls, "~", _label(module_name, "type", cls.__name__)) for cls in classes]
    functions = [
        function
        for name, function in inspect.getmembers(module, inspect.isfunction)
        if _defined_in(module, function) and not name.startswith("_") and name == function.__name__
    ]
    functions.sort(key=lambda function: inspect.getsourcelines(function)[1])
    if functions:
        out.append(_heading("Functions", "-"))
        for function in functions:
            out.append(f".. _{_label(module_name, 'function', function.__name__)}:\n")
            out.append(_heading(function.__name__, "~"))
            signature = str(inspect.signature(function)).replace("'", "")
            out.append(f"``{function.__name__}{signature}``\n")
            out.append(rst_text(_docstring(function)) + "\n")
            out.append(_source_block(function))
    return "\n".join(out)


def witness_traces(outcome: ScenarioOutcome[Any]) -> list[WitnessTrace]:
    """For each witness of the scenario, a shortest trace to it (`kafkaspec.witnesses`: the
    scenario's model checked with "not the witness" as its only invariant, so the checker's
    breadth-first counterexample is a shortest path to the first such state)."""
    scenario = outcome.scenario
    return [witness_trace(scenario, outcome.config, name, outcome.max_depth) for name in scenario.witnesses]


def scenario_page(outcome: ScenarioOutcome[Any], witnesses: Sequence[WitnessTrace], doc: MachineDoc) -> str:
    """The page of one scenario."""
    scenario = outcome.scenario
    machine = scenario.machine
    result = outcome.result
    mark = "as expected" if outcome.as_expected else "**NOT as expected**"
    out = [
        f".. _{_label('scenario', scenario.name)}:\n",
        _heading(f"Scenario {scenario.name}", "=", overline=True),
        scenario.summary[:1].upper() + scenario.summary[1:] + ".\n",
        _table(
            None,
            [
                ("state machine", f":ref:`{machine.name} <{_label('machine', machine.name)}>`"),
                ("expected", scenario.expected),
                ("found", f"{outcome.found} ({mark})"),
                ("reference", scenario.reference or "-"),
                (
                    "explored",
                    f"{result.distinct_states:,} distinct states, {result.transitions:,} transitions, depth "
                    f"{result.depth} of at most {outcome.max_depth}"
                    + (" (the whole reachable space)" if result.complete else ""),
                ),
                ("reproduce", f"``kafkaspec check {scenario.name}``"),
            ],
            "20 80",
        ),
        _heading("Configuration and bounds", "-"),
    ]
    keys = {setting.field: key for key, setting in machine.settings.items()}
    defaults = type(outcome.config)()
    rows = []
    for field in dataclasses.fields(outcome.config):
        if field.name.startswith("_"):
            continue
        value, default = getattr(outcome.config, field.name), getattr(defaults, field.name)
        rows.append(
            (
                _literal(field.name),
                _literal(keys.get(field.name, "")),
                _literal(_value_text(value)),
                "" if value == default else _literal(_value_text(default)),
            )
        )
    rows.append(("trace length", "``--max-depth``", _literal(str(outcome.max_depth)), ""))
    out.append("The last column gives the machine's default where this scenario differs from it.\n")
    out.append(_table(("field", "--set key", "value", "default"), rows, "28 34 19 19"))
    out.append(_heading("Properties checked", "-"))
    checked = [
        f"* :ref:`{name} <{_label(machine.name, doc.kind_of(name), name)}>`" for name in scenario.invariants
    ]
    out.append("\n".join(checked) + "\n")
    if scenario.witnesses:
        out.append("Witnesses (states that must be reachable):\n")
        out.append(
            "\n".join(
                f"* :ref:`{name} <{_label(machine.name, 'witness', name)}>`: "
                + ("reached" if result.witnesses_reached.get(name) else "**not reached**")
                for name in scenario.witnesses
            )
            + "\n"
        )
    violation = result.violation
    if violation is not None:
        out.append(_heading("Counterexample", "-"))
        out.append(
            f"A shortest trace (the checker explores breadth first) to a state that breaks "
            f"``{violation.property_name}``, in {len(violation.trace) - 1} steps. Each step shows the "
            "action, the first sentence of its docstring, and the whole state; the fields the step "
            "changed are highlighted.\n"
        )
        why = outcome.explanation or f"the {violation.kind} {violation.property_name} fails here"
        last = f"Why <code>{html.escape(violation.property_name)}</code> fails: {_html_code(why)}."
        out.append(_raw_html(trace_html(machine, violation.trace, last.replace("..", "."))))
    else:
        out.append(_heading("Witness traces", "-"))
        out.append(
            "No state within the bound breaks the properties above. What the scenario *can* reach, each "
            "by a shortest trace: the traces are found by checking the same configuration with the "
            "witness negated as the only invariant, so the checker's counterexample is a shortest path to "
            "the witness.\n"
        )
        for witness in witnesses:
            out.append(_heading(f"How {witness.name.replace('_', ' ')} is reached", "~"))
            out.append(f"``kafkaspec check {scenario.name} --witness {witness.name}`` prints this trace.\n")
            if witness.trace is None:
                out.append("Not reached within the bound.\n")
                continue
            reached = _html_code(witness.sentence)
            steps = len(witness.trace) - 1
            last = f"Reached <code>{html.escape(witness.name)}</code> in {steps} steps: {reached}."
            out.append(_raw_html(trace_html(machine, witness.trace, last, reached=True)))
    return "\n".join(out)


def _index_page(title: str, intro: str, entries: Sequence[tuple[str, str]]) -> str:
    toctree = ".. toctree::\n   :maxdepth: 1\n\n" + "\n".join(f"   {label} <{doc}>" for label, doc in entries)
    return _heading(title, "=", overline=True) + "\n" + intro + "\n\n" + toctree + "\n"


def _scenario_index() -> str:
    """The scenarios, machine by machine: a table each (name, expected outcome, question)."""
    out = [
        _heading("Scenarios", "=", overline=True),
        "Each named question the model checker settles (``kafkaspec check --all`` runs them all). "
        "A page shows the configuration, the bounds, the outcome, and the trace step by step.\n",
    ]
    for machine in MACHINES:
        mine = [scenario for scenario in SCENARIOS if scenario.machine is machine]
        out.append(_heading(f"{machine.name}: {machine.title}", "-"))
        rows = [
            (f":doc:`{scenario.name} <{scenario.name}>`", scenario.expected, scenario.summary)
            for scenario in mine
        ]
        out.append(_table(("scenario", "expected", "question"), rows, "25 15 60"))
    toctree = "\n".join(f"   {scenario.name}" for scenario in SCENARIOS)
    out.append(f".. toctree::\n   :hidden:\n   :maxdepth: 1\n\n{toctree}\n")
    return "\n".join(out)


def _findings_for_page(
    task: tuple[int, bool],
) -> tuple[CheckResult[Any, Any] | None, tuple[WitnessTrace, ...]]:
    """In a worker process: what the page of `SCENARIOS[index]` still lacks. With its outcome
    known (so without violation: a page with a counterexample lacks nothing), its witness
    traces; otherwise its check result and, without violation, its witness traces."""
    index, outcome_known = task
    scenario = SCENARIOS[index]
    if outcome_known:
        return None, tuple(
            witness_trace(scenario, scenario.config, name, scenario.max_depth) for name in scenario.witnesses
        )
    outcome = run_scenario(scenario)
    return outcome.result, scenario_witness_traces(outcome)


def scenario_findings(
    scenarios: Sequence[Scenario[Any]], cache: FindingsCache, workers: int = 1
) -> list[Findings]:
    """Every scenario's findings (outcome and witness traces), in order: reused from `cache`
    when `kafkaspec.outcomes.reusable`, otherwise computed and added to it. Computed in
    `workers` forked processes when above one and the scenarios are the named ones of
    `spec.scenarios` (each scenario is one task: they are independent, and the large ones come
    first)."""
    lacking = [scenario for scenario in scenarios if not _complete(cache.get(scenario))]
    indexes = {id(scenario): index for index, scenario in enumerate(SCENARIOS)}
    if (
        workers > 1
        and len(lacking) > 1
        and "fork" in multiprocessing.get_all_start_methods()
        and all(id(scenario) in indexes for scenario in lacking)
    ):
        tasks = [(indexes[id(scenario)], cache.get(scenario) is not None) for scenario in lacking]
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            for scenario, (result, traces) in zip(lacking, pool.map(_findings_for_page, tasks), strict=True):
                known = cache.get(scenario)
                if known is not None:
                    outcome = known.outcome
                else:
                    assert result is not None
                    outcome = ScenarioOutcome(scenario, scenario.config, scenario.max_depth, result)
                cache.put(Findings(outcome, traces, cache.digest))
    return [cache.findings(scenario) for scenario in scenarios]


def _complete(findings: Findings | None) -> bool:
    return findings is not None and findings.complete


def generate_pages(
    srcdir: Path,
    has_dot: bool,
    workers: int = 1,
    say: Callable[[str], None] = lambda _: None,
    cache: FindingsCache | None = None,
) -> list[str]:
    """Write the generated pages into `srcdir` (beside the hand-written ones); returns their
    document names. `workers` processes check the scenarios whose findings `cache` does not
    hold already (it gains them); `say` hears what is being done."""
    written: list[str] = []

    def write(docname: str, text: str) -> None:
        path = srcdir / f"{docname}.rst"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written.append(docname)

    machine_entries: list[tuple[str, str]] = []
    module_entries: list[tuple[str, str]] = []
    docs = {id(machine): read_machine(machine, SCENARIOS) for machine in MACHINES}
    for machine in MACHINES:
        doc = docs[id(machine)]
        say(f"the {machine.name} page and its diagram")
        write(f"machines/{machine.name}", machine_page(doc, diagram_graph(machine), has_dot))
        machine_entries.append((f"{machine.name}: {machine.title}", f"{machine.name}"))
        for module_name in machine.modules[1:]:
            if (label := _module_page_name(module_name)) not in written:
                write(label, module_page(module_name))
                module = importlib.import_module(module_name)
                summary = first_sentence(_docstring(module)).replace("`", "")  # a toctree label is plain text
                module_entries.append((f"{module_name}: {summary}", f"/{label}"))
    write(
        "machines/index",
        _index_page(
            "State machines",
            "Each page is generated from the spec's code: docstrings, signatures, field comments and "
            "the model checker's transitions. The modules a machine is built from have pages of their own.",
            [*machine_entries, *module_entries],
        ),
    )
    say(f"checking {len(SCENARIOS)} scenarios for their pages")
    cache = FindingsCache() if cache is None else cache
    for findings in scenario_findings(SCENARIOS, cache, workers):
        scenario = findings.outcome.scenario
        page = scenario_page(findings.outcome, findings.witnesses or (), docs[id(scenario.machine)])
        write(f"scenarios/{scenario.name}", page)
    write("scenarios/index", _scenario_index())
    return written


# ---------------------------------------------------------------------------------------
# The build
# ---------------------------------------------------------------------------------------


def build_docs(
    out: Path,
    workers: int | None = None,
    say: Callable[[str], None] = lambda _: None,
    cache: FindingsCache | None = None,
) -> BuildResult:
    """Generate the pages and build the site into `out` (a new or empty directory, or a
    previous build, which is replaced). `workers` processes (default: the idle cores, as
    `kafkaspec check --workers auto`) check the scenarios and run Sphinx. The scenario pages
    reuse the findings `cache` holds for the scenarios as defined and the spec's current
    source (`kafkaspec.outcomes`), and the cache gains what the build computed."""
    started = time.perf_counter()
    check_output_dir(out)
    try:
        from sphinx.application import Sphinx
    except ImportError:
        raise DocsError("kafkaspec docs needs Sphinx: pip install 'kafkaspec[docs]'") from None
    if not (DOCS_SOURCE / "conf.py").is_file():
        raise DocsError(f"the documentation sources are missing ({DOCS_SOURCE}/conf.py)")
    has_dot = shutil.which("dot") is not None
    workers = default_workers() if workers is None else workers
    if _compiled.active():
        return _build_from_source(out, workers, say, FindingsCache() if cache is None else cache, started)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise DocsError(f"cannot create {out}: {error.strerror}") from None
    _clear_previous_build(out)
    (out / STAMP).write_text("built by kafkaspec docs; the next build replaces this directory\n")
    with tempfile.TemporaryDirectory(prefix="kafkaspec-docs-") as scratch:
        srcdir = Path(scratch) / "src"
        shutil.copytree(DOCS_SOURCE, srcdir, ignore=shutil.ignore_patterns("__pycache__", "_build"))
        generated = generate_pages(srcdir, has_dot, workers, say, cache)
        say("Sphinx: building the HTML")
        warnings = io.StringIO()
        app = Sphinx(
            srcdir=str(srcdir),
            confdir=str(srcdir),
            outdir=str(out),
            doctreedir=str(Path(scratch) / "doctrees"),
            buildername="html",
            status=io.StringIO(),
            warning=warnings,
            freshenv=True,
            parallel=workers if workers > 1 else 0,
        )
        app.build()
        pages = tuple(sorted(app.env.found_docs))
    assert set(generated) <= set(pages)
    lines = tuple(line for line in warnings.getvalue().splitlines() if line.strip())
    return BuildResult(out, pages, lines, time.perf_counter() - started)


_SOURCE_BUILD = "from kafkaspec.docs import build_requested; build_requested()"


def _build_from_source(
    out: Path, workers: int, say: Callable[[str], None], cache: FindingsCache, started: float
) -> BuildResult:
    """`build_docs` in a process that runs the compiled spec: the scenarios' findings are
    computed here (compiled, `workers` processes; `cache` gains them), then a process started
    with `KAFKASPEC_NATIVE=0` renders the pages from the interpreted source with them and
    builds the site (`build_requested`). The findings cross by pickle: each state names its
    class, which that process takes from the source."""
    say(f"checking {len(SCENARIOS)} scenarios for their pages")
    found = [
        (findings.outcome.scenario.name, findings.outcome.result, findings.witnesses)
        for findings in scenario_findings(SCENARIOS, cache, workers)
    ]
    say("rendering the pages from the interpreted spec")
    with tempfile.TemporaryDirectory(prefix="kafkaspec-docs-") as scratch:
        request, answer = Path(scratch) / "request.pickle", Path(scratch) / "answer.pickle"
        request.write_bytes(pickle.dumps((out, workers, cache.digest, found)))
        subprocess.run(
            [sys.executable, "-c", _SOURCE_BUILD, str(request), str(answer)],
            env={**os.environ, _compiled.SWITCH: "0"},
            check=False,
        )
        if not answer.exists():  # it failed, and said why on stderr
            raise RuntimeError("the documentation build from the interpreted spec failed")
        built: BuildResult | str = pickle.loads(answer.read_bytes())
    if isinstance(built, str):
        raise DocsError(built)
    return dataclasses.replace(built, seconds=time.perf_counter() - started)


def build_requested() -> None:
    """The other side of `_build_from_source` (`sys.argv[1:3]`: the request's file and the
    answer's): build the site from the source with the findings it was handed; answer the
    `BuildResult`, or the `DocsError`'s message."""
    request, answer = Path(sys.argv[1]), Path(sys.argv[2])
    out, workers, digest, found = pickle.loads(request.read_bytes())
    cache = FindingsCache()  # refuses them if the source changed since they were found (`digest`)
    scenarios = {scenario.name: scenario for scenario in SCENARIOS}
    for name, result, witnesses in found:
        scenario = scenarios[name]
        outcome = ScenarioOutcome(scenario, scenario.config, scenario.max_depth, result)
        cache.put(Findings(outcome, witnesses, digest))
    built: BuildResult | str
    try:
        built = build_docs(out, workers, cache=cache)
    except DocsError as error:
        built = str(error)
    answer.write_bytes(pickle.dumps(built))


__all__ = [
    "DOCS_SOURCE",
    "STAMP",
    "BuildResult",
    "DiagramGraph",
    "DocsError",
    "MachineDoc",
    "WitnessTrace",
    "build_docs",
    "build_requested",
    "check_output_dir",
    "diagram_dot",
    "diagram_graph",
    "field_comments",
    "first_sentence",
    "generate_pages",
    "highlight_changes",
    "machine_page",
    "module_page",
    "read_machine",
    "rst_text",
    "scenario_findings",
    "scenario_page",
    "trace_html",
    "witness_traces",
]
