"""`kafkaspec`: the command-line entry point.

Exit codes (the same for every command; the architecture page of `kafkaspec docs`): 0 success /
no violation / every outcome as expected, 1 a violation or an unexpected outcome, 2 a usage or
input error (one line on stderr, no traceback), 3 unknown (`verify`: a budget ran out, or the
history is empty), 70 an internal error, a bug in kafkaspec (EX_SOFTWARE of sysexits.h: one
line on stderr naming the exception and what was being processed; the traceback goes to a file
in the system's temporary folder, or to stderr with `kafkaspec --debug`). A crash must never read
as a verdict to a script.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import sys
import textwrap
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

# Only what every command needs is imported here: the checkers, readers, engines, rich and the
# spec are imported by the command that uses them, so `kafkaspec --help` and `verify` of a small
# history start fast (tests/test_startup.py guards what a command imports).
from spark_checks.choices import DEFAULT_MAX_MEMORY_BYTES, ENGINES, FORMATS, MODEL_NAMES
from spark_checks.uris import RemoteHistoryError, history_argument, is_remote, unreadable_message

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from rich.console import Console

    from spark_checks.engine import HistoryReport, VerifyOptions
    from spark_checks.explain import Lookup
    from spark_checks.history import Operation, Whereabouts
    from spark_checks.parallel import WorkerPool
    from spec.scenarios import Scenario, ScenarioOutcome

EXIT_OK = 0
EXIT_VIOLATION = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 70
"""A bug in kafkaspec (sysexits.h EX_SOFTWARE): distinct from every verdict and from bad input."""
MB = 1024 * 1024
SEARCHES_MEMORY_BYTES = 768 * MB
"""`verify`'s default memory budget of the linearizability searches running at once, in all:
one search alone gets `DEFAULT_MAX_MEMORY_BYTES`, several share this (so with the interpreters
all the processes together stay under 1 GB)."""


class RunState:
    """What one run of the command line knows about itself, for reporting a bug: whether
    `--debug` was given, and what a verification is processing (`Whereabouts`, updated by
    the engine; created by `verify`). Created by `main` and handed to click as the context
    object, not global. A plain class: `dataclasses` (with `inspect`) would cost every
    command, `--help` included, about 10 ms to import."""

    def __init__(self) -> None:
        self.debug = False
        self.whereabouts: Whereabouts | None = None
        self.command = ""


class UsageProblem(click.UsageError):
    """A problem with what the user asked for; reported in one line with exit code 2."""


def _stdout_console(soft_wrap: bool = True) -> Console:
    """A console for stdout: the terminal's width (or `COLUMNS`, when set), or a wide fixed
    width when piped/logged. `soft_wrap=False`: prose wraps at that width (tables always fit it)."""
    from rich.console import Console

    sized = sys.stdout.isatty() or os.environ.get("COLUMNS", "").isdigit()
    return Console(soft_wrap=soft_wrap, width=None if sized else 160)


class PlainLines:
    """Where `verify` prints its text: whole lines to stdout as they are, flushed one by one
    (files are printed as they are verified). Not rich's console: it would cost every `verify`
    ~20 ms to import, and it reads `:x:` in a path or a value as an emoji code."""

    def print(self, line: str) -> None:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def _parse_set(values: Sequence[str]) -> dict[str, str]:
    overrides: dict[str, str] = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageProblem(f"--set expects key=value, got {item!r}")
        overrides[key.strip()] = value.strip()
    return overrides


@contextmanager
def _progress(enabled: bool) -> Iterator[Callable[[str], Callable[[str], None]]]:
    """A spinner on stderr's terminal (nothing otherwise): `start(name)` returns `say(message)`.
    It appears once the command has worked `SPINNER_AFTER_SECONDS` (`_LateSpinner`)."""
    if not enabled:
        yield lambda _name: lambda _message: None
        return
    spinner = _LateSpinner()
    try:
        yield spinner.start
    finally:
        spinner.close()


SPINNER_AFTER_SECONDS = 0.3
"""A terminal's spinner appears once a command has worked this long: a shorter one (`verify` of
a small history) never loads rich's progress display, whose import costs more than the check."""


class _LateSpinner:
    """`_progress`'s spinner, drawn by a timer thread after `SPINNER_AFTER_SECONDS` (rich imported
    then) with what each task last said; until then `say` only remembers it."""

    def __init__(self) -> None:
        import threading  # only a terminal's commands start a thread

        self._lock = threading.Lock()
        self._said: list[str] = []  # each task's description, by task number
        self._shown: list[Any] = []  # rich's task ids, once drawn
        self._bar: Any = None
        self._closed = False
        self._timer = threading.Timer(SPINNER_AFTER_SECONDS, self._draw)
        self._timer.daemon = True
        self._timer.start()

    def start(self, name: str) -> Callable[[str], None]:
        with self._lock:
            number = len(self._said)
            self._said.append(name)
            if self._bar is not None:
                self._shown.append(self._bar.add_task(name, total=None))

        def say(message: str) -> None:
            with self._lock:
                self._said[number] = f"{name}: {message}"
                if self._bar is not None:
                    self._bar.update(self._shown[number], description=self._said[number])

        return say

    def _draw(self) -> None:
        # rich.progress imports multiprocessing and more: only a terminal shows the spinner
        from rich.console import Console
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        with self._lock:
            if self._closed:
                return
            bar = Progress(
                SpinnerColumn(),
                TextColumn("{task.description}"),
                TimeElapsedColumn(),
                console=Console(stderr=True),
                transient=True,
                redirect_stdout=False,  # stdout may be a file: `verify`'s lines go there as they are
            )
            self._shown = [bar.add_task(description, total=None) for description in self._said]
            bar.start()
            self._bar = bar

    def close(self) -> None:
        self._timer.cancel()
        self._timer.join()  # a drawing under way ends first
        with self._lock:
            self._closed = True
            bar, self._bar = self._bar, None
        if bar is not None:
            bar.stop()


def _state_counter(say: Callable[[str], None]) -> Callable[[int, int], None]:
    def report(states: int, depth: int) -> None:
        say(f"{states:,} states, depth {depth}")

    return report


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kafkaspec")
@click.option(
    "--debug",
    is_flag=True,
    help="On an internal error (exit code 70, a bug), print its traceback instead of writing it to a file.",
)
@click.pass_context
def cli(context: click.Context, debug: bool) -> None:
    """kafkaspec: Kafka's replication protocol as an executable, model-checked specification."""
    state = context.ensure_object(RunState)
    state.debug = debug
    state.command = context.invoked_subcommand or ""


def _known_scenarios(names: Sequence[str]) -> list[Scenario[Any]]:
    # spec.scenarios loads every state machine (~0.25 s): only scenarios and check need it
    from spec.scenarios import SCENARIOS_BY_NAME

    unknown = [name for name in names if name not in SCENARIOS_BY_NAME]
    if unknown:
        raise UsageProblem(f"unknown scenario {unknown[0]!r} (known: {', '.join(SCENARIOS_BY_NAME)})")
    return [SCENARIOS_BY_NAME[name] for name in names]


def _scenario_json(scenario: Scenario[Any]) -> dict[str, Any]:
    from spec.machines import plain  # loaded with the scenarios anyway: see _known_scenarios

    return {
        "name": scenario.name,
        "machine": scenario.machine.name,
        "expected": scenario.expected,
        "summary": scenario.summary,
        "invariants": list(scenario.invariants),
        "witnesses": list(scenario.witnesses),
        "reference": scenario.reference,
        "max_depth": scenario.max_depth,
        "config": plain(scenario.config),
    }


@cli.command("scenarios")
@click.argument("names", nargs=-1, metavar="[SCENARIO]...")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def scenarios_command(names: tuple[str, ...], as_json: bool) -> None:
    """List the named scenarios (expected outcome, what each shows), or show the named ones
    in full: configuration, depth bound, checked properties, witnesses."""
    from spec.scenarios import SCENARIOS, override_keys  # every state machine: see _known_scenarios

    chosen = _known_scenarios(names) if names else list(SCENARIOS)
    if as_json:
        document = {
            "scenarios": [_scenario_json(scenario) for scenario in chosen],
            "set_keys": dict(override_keys(chosen)),
        }
        click.echo(json.dumps(document, indent=2))
        return
    console = _stdout_console(soft_wrap=False)
    if names:
        for scenario in chosen:
            _print_scenario(console, scenario)
        return
    # rich.table only for the scenario list and `check --all`; every table fits the console's
    # width (80 columns included): long names fold, descriptions wrap, nothing is cropped
    from rich import box
    from rich.padding import Padding
    from rich.table import Table

    machines = list({id(scenario.machine): scenario.machine for scenario in chosen}.values())
    for machine in machines:
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False, title_justify="left", title_style="bold")
        table.title = f"{machine.name}: {machine.title}"
        table.add_column("scenario (expected)", no_wrap=True)  # whole, so it can be copied
        table.add_column("what it shows", overflow="fold")
        for scenario in chosen:
            if scenario.machine is machine:
                table.add_row(f"{scenario.name}\n[dim]({scenario.expected})[/dim]", scenario.summary)
        console.print(table)
    console.print(
        "Configuration keys for `check --set key=value` (`kafkaspec scenarios NAME` for one in full):",
        highlight=False,
    )
    keys = Table(box=None, show_header=False, pad_edge=False, padding=(0, 2, 0, 0))
    keys.add_column("key", no_wrap=True)
    keys.add_column("description", overflow="fold")
    for key, description in override_keys(chosen).items():
        keys.add_row(key, description)
    console.print(Padding(keys, (0, 0, 0, 2)))


def _wrapped(console: Console, text: str, indent: int = 0, hanging: int = 4) -> None:
    """Print `text` wrapped at the console's width: `indent` spaces before the first line,
    `indent + hanging` before the others (so a wrapped line still reads as part of its item)."""
    lines = textwrap.wrap(
        text,
        width=max(console.width, 40),
        initial_indent=" " * indent,
        subsequent_indent=" " * (indent + hanging),
        break_on_hyphens=False,
    )
    for line in lines or [""]:
        console.print(line, highlight=False, markup=False, soft_wrap=True)


def _print_scenario(console: Console, scenario: Scenario[Any]) -> None:
    """One scenario in full, as `kafkaspec scenarios NAME` shows it."""
    from kafkaspec.witnesses import known_witnesses
    from spec.machines import plain  # loaded with the scenarios anyway: see _known_scenarios

    _wrapped(console, f"{scenario.name} ({scenario.machine.name}: {scenario.machine.title})")
    _wrapped(console, scenario.summary, 2, 0)
    _wrapped(console, f"expected: {scenario.expected}; depth bound {scenario.max_depth}", 2)
    if scenario.reference:
        _wrapped(console, f"source: {scenario.reference}", 2)
    _wrapped(console, f"invariants: {', '.join(scenario.invariants)}", 2)
    if scenario.witnesses:
        _wrapped(console, f"witnesses (must be reachable): {', '.join(scenario.witnesses)}", 2)
    others = [name for name in known_witnesses(scenario) if name not in scenario.witnesses]
    if others:
        _wrapped(console, f"other witnesses of the machine: {', '.join(others)}", 2)
    _wrapped(console, f"a witness's shortest trace: kafkaspec check {scenario.name} --witness WITNESS", 2)
    _wrapped(console, "configuration (--set key):", 2)
    keys = {setting.field: key for key, setting in scenario.machine.settings.items()}
    for name, value in plain(scenario.config).items():
        key = f" ({keys[name]})" if name in keys else ""
        _wrapped(console, f"{name}{key} = {json.dumps(value)}", 4)


def _print_outcome(
    console: Console, outcome: ScenarioOutcome[Any], show_trace: bool, full_state: bool
) -> None:
    result = outcome.result
    scenario = outcome.scenario
    verdict = "as expected" if outcome.as_expected else "NOT AS EXPECTED"
    console.print(
        f"[bold]{scenario.name}[/bold]: {outcome.found} ({verdict}; expected {scenario.expected})",
        highlight=False,
    )
    bound = "state space exhausted" if result.complete else f"depth bound {outcome.max_depth}"
    console.print(
        f"  {result.distinct_states:,} distinct states, {result.transitions:,} transitions, {bound}, "
        f"{result.seconds:.2f} s ({result.states_per_second:,.0f} states/s)",
        highlight=False,
    )
    if outcome.missing_witnesses:
        console.print(
            f"  never reached: {', '.join(outcome.missing_witnesses)} (the pass would be vacuous)",
            highlight=False,
        )
    violation = result.violation
    if violation is not None and show_trace:
        console.print(
            f"  violated {violation.kind} [bold]{violation.property_name}[/bold] after "
            f"{len(violation.trace) - 1} steps (found in {result.seconds_to_violation:.2f} s):",
            highlight=False,
        )
        from kafkaspec import render  # the model checker's trace printing: only check needs it

        for line in render.describe_trace(scenario.machine, violation.trace, full_state):
            console.print(f"  {line}", highlight=False, markup=False, soft_wrap=True)
        if outcome.explanation:
            console.print(f"  why: {outcome.explanation}", highlight=False, markup=False, soft_wrap=True)


def _parse_workers(context: click.Context, parameter: click.Parameter, value: str) -> int:
    if value == "auto":
        from spec.checker import default_workers  # the model checker: only check needs it

        return default_workers()
    try:
        workers = int(value)
    except ValueError:
        workers = 0
    if workers < 1:
        raise click.BadParameter(f"{value!r} is not a positive number or auto", context, parameter)
    # More processes than cores only wait for each other (and --workers 10000 would fork
    # that many): capped at the cores this process may use. The result is the same.
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return min(workers, cores)


@cli.command("check")
@click.argument("names", nargs=-1, metavar="[SCENARIO]...")
@click.option("--all", "check_all", is_flag=True, help="Check every scenario against its expected outcome.")
@click.option(
    "--max-depth",
    type=click.IntRange(min=0),
    default=None,
    help="Bound on the length of explored traces (default: each scenario's own; `kafkaspec scenarios NAME`).",
)
@click.option(
    "--set",
    "settings",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a configuration key (see `kafkaspec scenarios`). Repeatable.",
)
@click.option(
    "--workers",
    default="auto",
    show_default=True,
    callback=_parse_workers,
    help="Processes exploring each large level: a number (at most the cores this process may use), "
    "or auto (the idle cores, at most 4). The result is the same with any number.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.option("--no-trace", is_flag=True, help="Do not print counterexample traces.")
@click.option(
    "--full-state", is_flag=True, help="Print the whole state at every trace step, not what changed."
)
@click.option(
    "--witness",
    metavar="WITNESS",
    default=None,
    help="Print a shortest trace to a state where this witness holds (one scenario; its witnesses "
    "are listed by `kafkaspec scenarios NAME`).",
)
@click.option(
    "--docs",
    "docs_out",
    type=click.Path(file_okay=True, dir_okay=True, path_type=Path),
    default=None,
    metavar="DIR",
    help="With --all: then build the documentation site into DIR (as `kafkaspec docs --out DIR`) "
    "from the same findings, so no scenario is checked twice; built whatever the outcomes were.",
)
def check_command(
    names: tuple[str, ...],
    check_all: bool,
    max_depth: int | None,
    settings: tuple[str, ...],
    workers: int,
    as_json: bool,
    no_trace: bool,
    full_state: bool,
    witness: str | None,
    docs_out: Path | None,
) -> None:
    """Model-check scenarios; print the shortest counterexample of each violation.

    Exit 0 when no violation is found within the bound (with --all: when every scenario
    has its expected outcome), 1 otherwise, 2 on bad input. With --witness: exit 0 when the
    witness is reached within the bound, 1 when it is not. With --docs: the site is built
    after the checks whatever they found; exit as without it, or 1 when Sphinx warned.
    """
    from spec.scenarios import SCENARIOS, ConfigError, check_overrides, run_scenario  # see _known_scenarios

    if not names and not check_all:
        raise UsageProblem("name at least one scenario, or use --all (see `kafkaspec scenarios`)")
    if witness is not None and (check_all or len(names) != 1):
        raise UsageProblem("--witness needs exactly one scenario name")
    if docs_out is not None and (not check_all or as_json):
        raise UsageProblem("--docs goes with --all (and without --json): the site documents every scenario")
    chosen = list(SCENARIOS) if check_all else _known_scenarios(names)
    overrides = _parse_set(settings)
    try:
        check_overrides(chosen, overrides)
    except ConfigError as error:
        raise UsageProblem(str(error)) from None
    if witness is not None:
        sys.exit(_check_witness(chosen[0], witness, max_depth, overrides, workers, as_json, full_state))
    if docs_out is not None:
        from kafkaspec.outcomes import current_source_digest

        _refuse_docs_dir(docs_out)  # before minutes of checking, not after
        current_source_digest()  # of the source these checks run, for the site to reuse them

    console = _stdout_console(soft_wrap=False)
    outcomes: list[ScenarioOutcome[Any]] = []
    with _progress(sys.stderr.isatty() and not as_json) as progress_for:
        for scenario in chosen:
            outcome = run_scenario(
                scenario, max_depth, overrides, _state_counter(progress_for(scenario.name)), workers
            )
            outcomes.append(outcome)
            if not as_json:
                _print_outcome(console, outcome, not no_trace and not check_all, full_state)

    if as_json:
        from kafkaspec import render  # the model checker's JSON: only check needs it

        click.echo(
            json.dumps(
                {
                    "max_depth": max_depth,
                    "workers": workers,
                    "overrides": overrides,
                    "scenarios": [render.outcome_json(outcome) for outcome in outcomes],
                },
                indent=2,
            )
        )
    elif check_all:
        _print_summary(console, outcomes)
    if check_all:
        code = EXIT_OK if all(outcome.as_expected for outcome in outcomes) else EXIT_VIOLATION
    else:
        code = EXIT_VIOLATION if any(outcome.result.violation for outcome in outcomes) else EXIT_OK
    if docs_out is not None:
        code = max(code, _build_docs(docs_out, outcomes))
    sys.exit(code)


def _check_witness(
    scenario: Scenario[Any],
    name: str,
    max_depth: int | None,
    overrides: dict[str, str],
    workers: int,
    as_json: bool,
    full_state: bool,
) -> int:
    """`check NAME --witness W`: a shortest trace to the witness, rendered like a counterexample."""
    from kafkaspec import render  # the model checker's trace printing: only check needs it
    from kafkaspec.witnesses import known_witnesses, witness_trace

    known = known_witnesses(scenario)
    if name not in known:
        own = ", ".join(scenario.witnesses) or "none"
        others = ", ".join(item for item in known if item not in scenario.witnesses)
        raise UsageProblem(
            f"scenario {scenario.name!r} has no witness {name!r} (its witnesses: {own}"
            + (f"; its machine's others: {others})" if others else ")")
        )
    config = scenario.machine.apply_overrides(scenario.config, overrides)
    depth = scenario.max_depth if max_depth is None else max_depth
    with _progress(sys.stderr.isatty() and not as_json) as progress_for:
        found = witness_trace(
            scenario, config, name, depth, _state_counter(progress_for(f"{scenario.name} {name}")), workers
        )
    steps = len(found.trace) - 1 if found.trace is not None else None
    if as_json:
        document = {
            "scenario": scenario.name,
            "witness": name,
            "reached": found.reached,
            "steps": steps,
            "max_depth": depth,
            "states": found.states,
            "shows": found.sentence,
            "trace": render.trace_json(scenario.machine, found.trace) if found.trace is not None else None,
        }
        click.echo(json.dumps(document, indent=2))
        return EXIT_OK if found.reached else EXIT_VIOLATION
    console = _stdout_console(soft_wrap=False)
    if found.trace is None:
        console.print(
            f"[bold]{scenario.name}[/bold]: witness {name} not reached within depth bound {depth} "
            f"({found.states:,} distinct states)",
            highlight=False,
        )
        return EXIT_VIOLATION
    console.print(
        f"[bold]{scenario.name}[/bold]: witness [bold]{name}[/bold] reached after {steps} steps "
        f"(depth bound {depth}, {found.states:,} distinct states)",
        highlight=False,
    )
    console.print(
        "  a shortest trace (the scenario's invariants are not checked on the way):", highlight=False
    )
    for line in render.describe_trace(scenario.machine, found.trace, full_state):
        console.print(f"  {line}", highlight=False, markup=False, soft_wrap=True)
    console.print(f"  shows: {found.sentence}", highlight=False, markup=False)
    return EXIT_OK


def _parse_positive_seconds(context: click.Context, parameter: click.Parameter, value: str) -> float:
    """A number of seconds greater than zero, or inf; NaN, zero and negatives are bad input."""
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not seconds > 0:  # also catches NaN
        raise click.BadParameter(f"{value!r} is not a positive number of seconds", context, parameter)
    return seconds


def _parse_spark_conf(
    context: click.Context, parameter: click.Parameter, values: tuple[str, ...]
) -> dict[str, str]:
    """`--conf KEY=VALUE` pairs, as spark-submit takes them (the value may hold `=`)."""
    conf: dict[str, str] = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"expected KEY=VALUE, got {item!r}", context, parameter)
        conf[key.strip()] = value
    return conf


def _command_started_at() -> float:
    """When this command started (`time.time()`), for `--max-seconds`: the process's start when
    it runs as the `kafkaspec` program, so the budget also covers loading Python and the tool
    (0.6-1.6 s measured on the 2-core machine, idle to loaded); now when called in-process (by
    tests, or a program that imports the CLI), or where the start cannot be read."""
    now = time.time()
    if Path(sys.argv[0]).name not in ("kafkaspec", "cli.py"):
        return now
    try:
        after_name = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        ticks = int(after_name[19])  # field 22, starttime: clock ticks after boot
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return now
    return now - age if 0 <= age < 60 else now


def _model_choice(context: click.Context, parameter: click.Parameter, value: str) -> str:
    """`--model`: a built-in model's name, or MODULE:CLASS, imported (from the current folder
    too, as `--target`) and checked to be a model now, so a bad one is one line and exit 2."""
    if value == "auto" or value in MODEL_NAMES:
        return value
    from spark_checks import user_models

    if not user_models.is_user_model(value):
        raise UsageProblem(f"--model {value}: expected auto, {', '.join(MODEL_NAMES)} or MODULE:CLASS")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        user_models.load_model(value)
    except user_models.ModelSpecError as error:
        raise UsageProblem(str(error)) from None
    return value


@cli.command("verify")
@click.argument("histories", nargs=-1, required=True, metavar="HISTORY...")
@click.option(
    "--model",
    default="auto",
    show_default=True,
    callback=_model_choice,
    help=f"What the history is checked against: auto, {', '.join(MODEL_NAMES)}, or MODULE:CLASS, your "
    "own model (see kafkaspec.model).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["auto", *FORMATS]),
    default="auto",
    show_default=True,
    help="History format; auto sniffs it.",
)
@click.option(
    "--engine",
    type=click.Choice(list(ENGINES)),
    default="auto",
    show_default=True,
    help="local: in this process; spark: on Spark; auto: by file size.",
)
@click.option("--master", metavar="URL", help="Spark master (default local[2]), e.g. spark://host:7077.")
@click.option(
    "--conf",
    "spark_conf",
    metavar="KEY=VALUE",
    multiple=True,
    callback=_parse_spark_conf,
    help="Spark engine: a Spark setting, as spark-submit's --conf (repeatable), e.g. "
    "spark.jars.packages=org.apache.hadoop:hadoop-aws:VERSION for s3a:// histories.",
)
@click.option(
    "--report",
    "report_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write a self-contained HTML report here (an existing file is never overwritten).",
)
@click.option("--initial", metavar="JSON", help="Initial value of register-like models (a JSON literal).")
@click.option(
    "--nil-read",
    type=click.Choice(["unconstrained", "absent", "knossos"]),
    help="A read of nil tells nothing (Knossos's registers), observed the nil value (Porcupine's "
    "etcd logs; an empty queue or set), or is read as Knossos's models read it (knossos: unknown "
    "for a register, a value like any other for a queue's dequeue or a set's read).",
)
@click.option(
    "--failed-cas",
    type=click.Choice(["did-not-happen", "no-effect"]),
    help="A failed CAS had no effect and is dropped (Knossos) or ran and returned false (etcd).",
)
@click.option(
    "--max-seconds",
    default="inf",
    show_default=True,
    callback=_parse_positive_seconds,
    help="Time budget of the whole verification (default none, as Porcupine and Knossos; --max-memory "
    "still bounds each search); parts not decided by then are unknown.",
)
@click.option(
    "--max-memory",
    "max_memory_mb",
    type=click.IntRange(min=1),
    default=None,
    help="Megabytes of search cache per linearizability part (estimated); past it the part is unknown "
    f"[default: {DEFAULT_MAX_MEMORY_BYTES // MB}; with several searches at once, their share of "
    f"{SEARCHES_MEMORY_BYTES // MB} in all].",
)
@click.option(
    "--fail-fast",
    is_flag=True,
    help="Stop checking a history at its first invalid part (as Porcupine does); its other parts are "
    "reported not checked.",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    help="Processes checking parts (or, with many files, files) at once [default: the cores available].",
)
@click.option(
    "--ww-deps",
    is_flag=True,
    help="Kafka: infer write-write dependencies from offsets (Jepsen's :ww-deps; G0 found, G1c allowed).",
)
@click.option(
    "--sub-via",
    type=click.Choice(["assign", "subscribe"]),
    multiple=True,
    help="Kafka: how the test subscribed (Jepsen's :sub-via; repeatable); else inferred from the history.",
)
@click.option(
    "--jepsen-unseen",
    is_flag=True,
    help="Kafka: compute unseen as Jepsen's fold does (it also counts keys first polled by the last call).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def verify_command(
    histories: tuple[str, ...],
    model: str,
    fmt: str,
    engine: str,
    master: str | None,
    spark_conf: dict[str, str],
    report_path: Path | None,
    initial: str | None,
    nil_read: str | None,
    failed_cas: str | None,
    max_seconds: float,
    max_memory_mb: int | None,
    fail_fast: bool,
    workers: int | None,
    ww_deps: bool,
    sub_via: tuple[str, ...],
    jepsen_unseen: bool,
    as_json: bool,
) -> int:
    """Verify histories for linearizability or Kafka anomalies. A directory stands for the
    history files in it (by extension; see the README).

    Exit 0 valid, 1 anomaly / not linearizable, 3 unknown (a budget ran out, or the history has
    no operation), 2 input error.
    With many files: 1 if any is invalid, else 2 if any is bad input, else 3 if any is unknown.
    """
    from spark_checks.checking import Budget
    from spark_checks.engine import VerifyOptions, verify_history
    from spark_checks.history import HistoryError, Whereabouts
    from spark_checks.parallel import WorkerPool, available_cores
    from spark_checks.report import ReportPathError, check_report_path
    from spark_checks.user_models import is_user_model  # the engine has imported it already

    if is_user_model(model) and (initial, nil_read, failed_cas) != (None, None, None):
        raise UsageProblem(
            "--initial, --nil-read and --failed-cas are the built-in models' conventions; "
            f"--model {model} reads the values as recorded (its init() gives the initial state)"
        )
    conventions: dict[str, object] = {}
    if initial is not None:
        conventions["initial"] = _initial_value(initial)
    if nil_read is not None:
        conventions["nil_read"] = nil_read
    if failed_cas is not None:
        conventions["failed_cas"] = failed_cas
    if ww_deps:
        conventions["ww_deps"] = True
    if sub_via:
        conventions["sub_via"] = sorted(set(sub_via))
    if jepsen_unseen:
        conventions["unseen"] = "jepsen"
    if report_path is not None:
        try:
            check_report_path(report_path)  # before the check, not after it
        except ReportPathError as error:
            raise UsageProblem(str(error)) from None
    options = VerifyOptions(
        model=model,
        fmt=fmt,
        engine=engine,
        master=master,
        conventions=conventions,
        budget=Budget(
            max_seconds=max_seconds,
            max_memory_bytes=(max_memory_mb * MB) if max_memory_mb is not None else DEFAULT_MAX_MEMORY_BYTES,
            deadline=_command_started_at() + max_seconds,
        ),
        fail_fast=fail_fast,
    )
    try:  # a file: URI is its local path; hdfs://, s3a:// ... go to Spark as given
        histories = tuple(history_argument(history, engine) for history in histories)
    except RemoteHistoryError as error:
        raise UsageProblem(str(error)) from None
    console = PlainLines()
    pool = WorkerPool(
        workers or available_cores(),
        SEARCHES_MEMORY_BYTES if max_memory_mb is None else None,
        isolate=is_user_model(model),  # its step may never return (WorkerPool.isolate)
    )
    state = click.get_current_context().ensure_object(RunState)
    whereabouts = state.whereabouts = state.whereabouts or Whereabouts()
    if _many_files(histories):
        with pool:
            return _verify_many(
                histories, options, pool, report_path, as_json, console, whereabouts, spark_conf
            )
    reports = []
    spark = None
    with pool, _progress(sys.stderr.isatty() and not as_json) as progress_for:
        for path in histories:
            update = progress_for(path)
            try:
                if spark is None and choose_engine_for(path, engine) == "spark":
                    spark = _started_spark(master, histories, update, spark_conf)
                report = verify_history(
                    path,
                    options,
                    spark=spark,
                    keep_history=report_path is not None,
                    progress=update,
                    whereabouts=whereabouts,
                    pool=pool,
                )
            except HistoryError as error:
                raise UsageProblem(str(error)) from None
            except (ValueError, FileExistsError) as error:
                raise UsageProblem(f"{path}: {error}") from None
            except Exception as error:  # Spark could not read the URI (no connector, no file), else a bug
                problem = unreadable_message(path, str(error)) if spark is not None else None
                if problem is None:
                    raise
                raise UsageProblem(problem) from None
            reports.append(report)
    return _print_reports(reports, report_path, as_json, console)


def _many_files(arguments: Sequence[str]) -> bool:
    """Whether `verify` runs over many files (`spark_checks.batch`, imported only then): more
    than one argument, or any directory. One file behaves as it always has."""
    return len(arguments) > 1 or any(os.path.isdir(argument) for argument in arguments)


def _print_reports(
    reports: list[HistoryReport],
    report_path: Path | None,
    as_json: bool,
    console: PlainLines,
    extra_json: dict[str, Any] | None = None,
    printed: bool = False,
    lookups: list[Lookup | None] | None = None,
) -> int:
    """Print the reports (text, unless `printed` already, or JSON with `extra_json`'s keys),
    write the HTML report; the exit code of the verdicts."""
    from spark_checks.report import exit_code, html_report, report_json, text_summary, write_report

    report_text = None
    if report_path is not None:
        windows = [r.history if r.history is not None else list(_window(r)) for r in reports]
        report_text = html_report(reports, windows)
    if as_json:
        click.echo(json.dumps({**report_json(reports, lookups), **(extra_json or {})}, indent=2))
    elif not printed:
        for line in text_summary(reports):
            console.print(line)
    if report_path is not None and report_text is not None:
        try:
            write_report(report_path, report_text)
        except FileExistsError:
            raise UsageProblem(
                f"{report_path} appeared while the histories were checked; not overwritten"
            ) from None
        except OSError as error:
            raise UsageProblem(f"cannot write the report {report_path}: {error.strerror}") from None
        if not as_json:
            console.print(f"report: {report_path}")
    return exit_code(reports)


def _started_spark(
    master: str | None,
    histories: Sequence[str],
    progress: Callable[[str], None],
    conf: dict[str, str] | None,
) -> SparkSession:
    """The Spark session for these histories (`spark_session`); a JVM that does not start (a
    setting it refuses, no Java) is a usage problem, not a bug."""
    from spark_checks.spark_session import SparkStartError, spark_session  # Spark's runs only

    try:
        return spark_session(
            master, history_bytes=sum(_size(path) for path in histories), progress=progress, conf=conf
        )
    except SparkStartError as error:
        raise UsageProblem(str(error)) from None


def _verify_many(
    arguments: Sequence[str],
    options: VerifyOptions,
    pool: WorkerPool,
    report_path: Path | None,
    as_json: bool,
    console: PlainLines,
    whereabouts: Whereabouts,
    spark_conf: dict[str, str] | None = None,
) -> int:
    """`verify` over many files (`spark_checks.batch`): each file's verdict as soon as it and
    those before it are done, a bad file's one-line message on stderr, then the summary."""
    from spark_checks.batch import Counts, FileOutcome, history_files, summary_line, verify_files
    from spark_checks.batch import exit_code as batch_exit_code
    from spark_checks.report import text_summary

    started = time.perf_counter()
    paths = history_files(arguments)
    spark = any(choose_engine_for(path, options.engine) == "spark" for path in paths)
    found: dict[int, FileOutcome] = {}
    shown = 0

    def on_outcome(index: int, outcome: FileOutcome) -> None:
        nonlocal shown
        found[index] = outcome
        while shown in found:
            done = found[shown]
            shown += 1
            if done.problem is not None:
                click.echo(f"kafkaspec: error: {_one_line(done.problem)}", err=True)
            elif as_json:
                continue
            elif done.report is not None:
                for line in text_summary([done.report], [done.lookup]):
                    console.print(line)
            else:
                console.print(f"{done.path}: UNKNOWN ({done.unfinished})")

    showing = sys.stderr.isatty() and not as_json
    with _progress(showing) as progress_for:
        say = progress_for("verify")
        if spark:  # started here to be seen starting; the engine's spark_session() reuses it
            _started_spark(options.master, paths, say, spark_conf)
        outcomes = verify_files(
            paths,
            options,
            pool,
            keep_history=report_path is not None,
            progress=say if showing else None,  # None: the workers send no progress to show
            on_outcome=on_outcome,
            whereabouts=whereabouts,
            in_this_process=spark,
        )
    counts = Counts()
    for outcome in outcomes:
        counts = counts.add(outcome)
    summary = summary_line(counts, time.perf_counter() - started)
    extra = {
        "summary": {
            "histories": counts.files,
            "valid": counts.valid,
            "invalid": counts.invalid,
            "unknown": counts.unknown,
            "bad_input": counts.bad_input,
        },
        "bad_input": [{"path": o.path, "error": o.problem} for o in outcomes if o.problem is not None],
        "unfinished": [
            {"path": o.path, "reason": o.unfinished} for o in outcomes if o.unfinished is not None
        ],
    }
    reports = [outcome.report for outcome in outcomes if outcome.report is not None]
    lookups = [outcome.lookup for outcome in outcomes if outcome.report is not None]
    _print_reports(reports, report_path, as_json, console, extra, printed=True, lookups=lookups)
    if not as_json:
        console.print(summary)
    return batch_exit_code(counts)


@cli.command("conformance")
@click.option(
    "--target",
    default="impl",
    show_default=True,
    metavar="impl|reference|MODULE:FACTORY",
    help="The system under test: kafkaspec's optimized implementation, the reference, or your own "
    "adapter (MODULE:FACTORY: FACTORY() returns a conformance.sut.LogUnderTest for --suite log, "
    "FACTORY(settings) a conformance.partition_sut.PartitionUnderTest for --suite partition or exhaustive, "
    "FACTORY(settings) a conformance.coordinator_sut.ClassicCoordinatorUnderTest for --suite coordinator, "
    "FACTORY(settings) a conformance.controller_sut.ControllerUnderTest for --suite controller, "
    "FACTORY(settings) a conformance.consumer_group_sut.ConsumerGroupCoordinatorUnderTest for "
    "--suite consumer-group, FACTORY(settings) a conformance.zk_broker_sut.ZkBrokerUnderTest for "
    "--suite zk-broker).",
)
@click.option(
    "--suite",
    type=click.Choice(
        [
            "log",
            "partition",
            "exhaustive",
            "coordinator",
            "coordinator-exhaustive",
            "coordinator-machine",
            "controller",
            "controller-exhaustive",
            "controller-machine",
            "consumer-group",
            "consumer-group-exhaustive",
            "consumer-group-machine",
            "zk-broker",
            "zk-broker-exhaustive",
            "zk-broker-machine",
            "all",
        ]
    ),
    default=None,
    help="Which suite to run: the replica log, the replicated partition (random command "
    "sequences), every spec state within --depth (exhaustive), the classic group coordinator "
    "(coordinator: its exhaustive suite and its random machine), the KRaft controller (controller: "
    "the same two), the KIP-848 consumer-group coordinator (consumer-group: the same two), the ZooKeeper-era "
    "broker's handling of control requests (zk-broker: the same two), or all of them "
    "[default: all for impl and reference, log for MODULE:FACTORY, which must name one suite].",
)
@click.option(
    "--examples",
    type=click.IntRange(min=1),
    default=200,
    show_default=True,
    help="Command sequences to run (per suite).",
)
@click.option(
    "--depth",
    type=click.IntRange(min=1),
    default=None,
    help="Exhaustive suite: replay every state the spec reaches within this many actions "
    "[default: conformance.exhaustive.DEFAULT_DEPTH, 6].",
)
@click.option("--seed", type=int, default=None, help="Fix the generated sequences (reproducible runs).")
@click.option(
    "--command-timeout",
    "command_seconds",
    default="10",
    show_default=True,
    callback=_parse_positive_seconds,
    help="Seconds one call into the target may take; a call that takes longer is stopped and "
    "reported as a divergence (a hang).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def conformance_command(
    target: str,
    suite: str | None,
    examples: int,
    depth: int | None,
    seed: int | None,
    command_seconds: float,
    as_json: bool,
) -> int:
    """Run the conformance suites: the target and the reference get the same commands and
    must give the same answers. The log suite covers one replica's log (append, read,
    truncation, high watermark, retention, DeleteRecords, epochs, flush, crash and recovery);
    the partition suite a replicated partition driven by the replication spec's actions
    (produce with acks 0/1/all, fetch, truncation, ISR shrink, leader moves, crashes,
    restarts, retention), checking every step of the reference against the spec; the
    exhaustive suite replays, on the same interface, every state the spec reaches within
    --depth actions in each named scenario, with every action the spec refuses there. The
    coordinator suites drive a classic group coordinator with JoinGroup, SyncGroup,
    Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch and its timers: every state of the
    classic group spec within --depth actions, then random requests with near misses. The
    controller suites drive a KRaft controller with BrokerRegistration, BrokerHeartbeat,
    session expiries, AlterPartition, partition creation and reassignment: every state of the
    KRaft spec within --depth actions, then random requests with near misses.

    Exit 0 conforms, 1 divergence (printed as the minimal failing command sequence), 2 error.
    """
    from conformance.exhaustive import DEFAULT_DEPTH
    from conformance.run import run_conformance

    depth = DEFAULT_DEPTH if depth is None else depth
    if not math.isfinite(command_seconds):
        raise UsageProblem(f"--command-timeout must be a finite number of seconds, got {command_seconds}")

    if ":" in target and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # MODULE:FACTORY names a module of the user's project (as uvicorn)
    try:
        result = run_conformance(
            target, examples, seed, suite=suite, depth=depth, command_seconds=command_seconds
        )
    except (ValueError, ImportError, AttributeError) as error:
        raise UsageProblem(f"--target {target}: {error}") from None
    if as_json:
        click.echo(
            json.dumps(
                {
                    "target": result.target,
                    "suites": list(result.suite_names),
                    "examples": result.examples,
                    "depth": depth,
                    "conforms": result.passed,
                    "seconds": round(result.seconds, 3),
                    "failure": result.failure,
                    "results": [
                        {
                            "suite": suite_result.suite,
                            "conforms": suite_result.passed,
                            "seconds": round(suite_result.seconds, 3),
                            "failure": suite_result.failure,
                        }
                        for suite_result in result.suites
                    ],
                },
                indent=2,
            )
        )
    else:
        console = _stdout_console()
        for suite_result in result.suites:
            verdict = "conforms" if suite_result.passed else "DIVERGES from the reference"
            scope = (
                f"every spec state within {depth} actions"
                if suite_result.suite.endswith("exhaustive")
                else f"{examples} command sequences"
            )
            console.print(
                f"{target}, {suite_result.suite} suite: {verdict} ({scope}, {suite_result.seconds:.1f} s)",
                highlight=False,
                markup=False,
            )
        verdict = "conforms" if result.passed else "DIVERGES from the reference"
        console.print(f"{target}: {verdict}", highlight=False, markup=False)
        if result.failure:
            console.print(result.failure, highlight=False, markup=False)
    return EXIT_OK if result.passed else EXIT_VIOLATION


def _initial_value(text: str) -> object:
    """`--initial`: a JSON literal, held to what a history's values may be (no NaN or
    infinities, nesting within `MAX_NESTING`)."""
    from spark_checks.readers._common import (
        MAX_NESTING,
        NESTING_MESSAGE,
        finite_float,
        nests_deeper,
        refuse_constant,
    )

    usage = '--initial must be a JSON literal (e.g. 0, null, "")'
    if nests_deeper(text, MAX_NESTING):
        raise UsageProblem(f"{usage}: {NESTING_MESSAGE}")
    try:
        return json.loads(text, parse_constant=refuse_constant, parse_float=finite_float)
    except json.JSONDecodeError as error:
        raise UsageProblem(f"{usage}: {error.msg}") from None
    except ValueError as error:  # NaN, an infinity, an integer beyond int()'s digit limit
        raise UsageProblem(f"{usage}: {error}") from None


def choose_engine_for(path: str, engine: str) -> str:
    """`auto` resolved by size (a URI only Spark reads: Spark); a missing file is reported by
    the engine."""
    if is_remote(path):
        return "local" if engine == "local" else "spark"
    from spark_checks.engine import choose_engine

    file = Path(path)
    return choose_engine(file, engine) if file.is_file() else "local"


def _size(path: str) -> int:
    """A history's size in bytes (0 if it cannot be read: its reader reports that)."""
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _window(report: HistoryReport) -> list[Operation]:
    """The operations near the evidence, streamed from the file (for Spark-checked histories)."""
    from spark_checks.readers import open_history
    from spark_checks.report import evidence_indices

    highlight = set().union(*(evidence_indices(result.evidence) for result in report.failing()))
    _, operations = open_history(report.path, report.format)
    near = (
        op for op in operations if not highlight or any(abs(op.index - index) <= 60 for index in highlight)
    )
    return list(itertools.islice(near, 2000))


def _print_summary(console: Console, outcomes: list[ScenarioOutcome[Any]]) -> None:
    """The table of `check --all`: one row per scenario, fitting the console's width (80
    columns included: only a name longer than the room left folds onto a second line). The
    expected outcome is not a column: the mark says whether the found one is it."""
    from rich.table import Table  # rich.table only for the scenario list and `check --all`

    # no box (its column dividers cost a character each) and one space between columns
    table = Table(title="kafkaspec check --all", box=None, pad_edge=False, padding=(0, 1, 0, 0))
    table.add_column("scenario", overflow="fold")
    table.add_column("found", no_wrap=True)
    for column in ("states", "seconds", "trace"):
        table.add_column(column, justify="right", no_wrap=True)
    table.add_column("", no_wrap=True)
    for outcome in outcomes:
        result = outcome.result
        steps = str(len(result.violation.trace) - 1) if result.violation else "-"
        if outcome.as_expected:
            mark = "ok"
        elif outcome.found == outcome.scenario.expected:
            mark = "VACUOUS"  # no violation, as expected, but a witness was never reached
        else:
            mark = "MISMATCH"
        table.add_row(
            outcome.scenario.name,
            outcome.found,
            f"{result.distinct_states:,}",
            f"{result.seconds:.1f}",
            steps,
            mark,
        )
    console.print(table)
    from spec import _compiled  # imported with the scenarios: which spec ran, compiled or the source

    total = sum(outcome.result.seconds for outcome in outcomes)
    matched = sum(outcome.as_expected for outcome in outcomes)
    console.print(
        f"{matched}/{len(outcomes)} scenarios as expected in {total:.1f} s (spec: {_compiled.describe()}). "
        "Run `kafkaspec check NAME` to see a counterexample step by step, "
        "`kafkaspec check NAME --witness W` a witness.",
        highlight=False,
    )


def _refuse_docs_dir(out: Path) -> None:
    """A `--docs`/`--out` directory the site may not be built into is bad input (exit 2)."""
    from kafkaspec.docs import DocsError, check_output_dir

    try:
        check_output_dir(out)
    except DocsError as error:
        raise UsageProblem(str(error)) from None


def _build_docs(out: Path, outcomes: Sequence[ScenarioOutcome[Any]] = ()) -> int:
    """Build the site into `out`, reusing `outcomes` where they answer a scenario as defined
    (`kafkaspec.outcomes.reusable`: outcomes under `--set` or another bound are checked again);
    print where its front page is. EXIT_VIOLATION when Sphinx warned (listed on stderr)."""
    from kafkaspec.docs import DocsError, build_docs
    from kafkaspec.outcomes import Findings, FindingsCache

    cache = FindingsCache()
    for outcome in outcomes:
        cache.put(Findings(outcome, None, cache.digest))
    try:
        with _progress(sys.stderr.isatty()) as progress_for:
            result = build_docs(out, say=progress_for("docs"), cache=cache)
    except DocsError as error:
        raise UsageProblem(str(error)) from None
    for warning in result.warnings:
        click.echo(f"kafkaspec docs: {warning}", err=True)
    click.echo(f"docs: {len(result.pages)} pages in {result.seconds:.1f} s; open {result.index.resolve()}")
    return EXIT_VIOLATION if result.warnings else EXIT_OK


@cli.command("docs")
@click.option(
    "--out",
    "out",
    required=True,
    type=click.Path(file_okay=True, dir_okay=True, path_type=Path),
    help="Directory for the site: new, empty, or a previous `kafkaspec docs` build (replaced).",
)
def docs_command(out: Path) -> int:
    """Build the documentation site from the spec (Sphinx; a page per state machine and per
    scenario, the glossary and the architecture); print where its front page is.

    Exit 0 when built, 1 when Sphinx warned (listed on stderr), 2 for a bad --out directory.
    """
    _refuse_docs_dir(out)
    return _build_docs(out)


def main(argv: Sequence[str] | None = None) -> None:
    """Run the CLI and exit; usage errors become one line on stderr and exit code 2, any
    other exception (a bug) one line on stderr and exit code 70 (`_report_bug`)."""
    state = RunState()
    try:
        result: Any = cli.main(
            args=list(argv) if argv is not None else None,
            prog_name="kafkaspec",
            standalone_mode=False,
            obj=state,
        )
        sys.exit(result if isinstance(result, int) else EXIT_OK)
    except click.exceptions.Abort:
        click.echo("kafkaspec: interrupted", err=True)
        sys.exit(130)
    except click.ClickException as error:
        click.echo(f"kafkaspec: error: {_one_line(error.format_message())}", err=True)
        sys.exit(EXIT_USAGE)
    except KeyboardInterrupt:
        click.echo("kafkaspec: interrupted", err=True)
        sys.exit(130)
    except Exception as error:  # everything else is a bug in kafkaspec: never a verdict's exit code
        _report_bug(error, state, list(argv) if argv is not None else sys.argv[1:])
        sys.exit(EXIT_INTERNAL)


def _one_line(text: str, limit: int = 400) -> str:
    """A message on one line (an exception's text may hold newlines), cut to `limit`."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _report_bug(error: Exception, state: RunState, argv: list[str]) -> None:
    """One stderr line: the exception, what was being processed, where the traceback is."""
    doing = (
        state.whereabouts.describe() if state.whereabouts else ""
    ) or f"running `kafkaspec {state.command or ' '.join(argv)}`"
    import traceback  # only a bug's report needs it

    trace = "".join(traceback.format_exception(error))
    if state.debug:
        sys.stderr.write(trace)
        where = "traceback above"
    else:
        where = _write_traceback(trace, argv)
    click.echo(
        "kafkaspec: internal error (a bug in kafkaspec, please report it): "
        f"{_one_line(f'{type(error).__name__}: {error}')} while {_one_line(doing)}; {where}",
        err=True,
    )


def _write_traceback(trace: str, argv: list[str]) -> str:
    """Write the traceback to a new file in the system's temporary folder (never next to the
    user's files); say where, or why not."""
    import tempfile

    try:
        descriptor, name = tempfile.mkstemp(prefix="kafkaspec-crash-", suffix=".log")
        with os.fdopen(descriptor, "w", encoding="utf-8", errors="backslashreplace") as handle:
            handle.write(f"kafkaspec {' '.join(argv)}\n\n{trace}")
    except OSError as problem:
        return f"the traceback could not be written ({problem.strerror}); run with --debug to see it"
    return f"traceback written to {name}"


if __name__ == "__main__":
    main()
