"""The README's controller sections agree with the code: the table of Kafka's settings names
only `--set` keys and actions the controller machines have (and every protocol setting they
have), and the counterexample read step by step is what `kafkaspec check` prints today."""

from __future__ import annotations

import re
import types
import typing
from pathlib import Path

import pytest

from spec.composed_scenarios import REPLICATION_WITH_CONTROLLER
from spec.controller import kraft
from spec.controller import zk_controller as zk
from spec.controller.kraft_scenarios import KRAFT_CONTROLLER
from spec.controller.zk_scenarios import MACHINE as ZK_CONTROLLER
from tests.helpers import run_cli

README = Path(__file__).resolve().parent.parent / "README.md"
MACHINES = (KRAFT_CONTROLLER, ZK_CONTROLLER, REPLICATION_WITH_CONTROLLER)


def section(heading: str) -> str:
    """The README's text under `heading`, up to the next heading of any level."""
    text = README.read_text()
    start = text.index(f"\n{heading}\n") + len(heading) + 2
    following = re.search(r"\n#{2,3} ", text[start:])
    return text[start : start + following.start()] if following else text[start:]


def settings_rows() -> list[list[str]]:
    rows = section("### Kafka's settings in the controller machines").splitlines()
    cells = [[cell.strip() for cell in row.strip("|").split("|")] for row in rows if row.startswith("| ")]
    assert cells[0] == ["Kafka", "in the spec", "`--set` key"]
    return cells[1:]


def keys_named(cell: str) -> set[str]:
    """The `--set` keys a cell names: backticked, outside parentheses (which give values)."""
    return set(re.findall(r"`([^`]+)`", re.sub(r"\([^)]*\)", "", cell)))


def action_names(module: types.ModuleType) -> set[str]:
    return {action.__name__ for action in typing.get_args(module.Action)}


def test_the_settings_table_names_only_keys_the_machines_have() -> None:
    known = {key for machine in MACHINES for key in machine.settings}
    named = set().union(*(keys_named(row[2]) for row in settings_rows()))
    assert named, "the table names no key"
    assert named <= known, named - known


def test_every_protocol_setting_of_the_controllers_is_in_the_table() -> None:
    named = set().union(*(keys_named(row[2]) for row in settings_rows()))
    protocol = {
        key
        for machine in (KRAFT_CONTROLLER, ZK_CONTROLLER)
        for key in machine.settings
        if not key.startswith("max.") and key not in {"brokers", "replicas"}
    }
    assert protocol <= named, protocol - named
    assert "controller" in named  # the composed machine's generation


@pytest.mark.parametrize(
    "kafka_name",
    [
        "unclean.leader.election.enable",
        "min.insync.replicas",
        "eligible.leader.replicas.version",
        "zookeeper.session.timeout.ms",
        "broker.heartbeat.interval.ms",
        "broker.session.timeout.ms",
        "controlled.shutdown.enable",
    ],
)
def test_kafkas_configuration_names_are_mapped(kafka_name: str) -> None:
    assert any(f"`{kafka_name}`" in row[0] for row in settings_rows()), kafka_name


def test_the_actions_the_table_names_are_the_specs() -> None:
    actions = action_names(kraft) | action_names(zk)
    named = {
        name
        for row in settings_rows()
        for name in re.findall(r"`([A-Z][A-Za-z]+)`", row[1])
        if not name.isupper() and name[1:] != name[1:].upper()
    }
    spec_words = {"KRaftConfig", "PartitionChangeBuilder", "OfflinePartitionLeaderElectionStrategy"}
    named -= spec_words
    assert named, "the table names no action"
    assert named <= actions, named - actions


def test_the_counterexample_read_step_by_step_is_what_check_prints(
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = section("### A controller counterexample, step by step (KAFKA-19522)")
    block = text[text.index("```\n") + 4 :]
    block = block[: block.index("```")]
    quoted = block.splitlines()
    assert quoted[0] == "$ kafkaspec check kraft-fenced-last-known-leader"
    code, out, _ = run_cli(capsys, "check", "kraft-fenced-last-known-leader", "--workers", "1")
    assert code == 1
    printed = out.splitlines()

    def trace(lines: list[str]) -> list[str]:
        start = next(index for index, line in enumerate(lines) if line.startswith("  step 0:"))
        end = next(index for index, line in enumerate(lines) if line.startswith("  why:"))
        return lines[start : end + 1]

    assert trace(quoted) == trace(printed)
    assert quoted[1] == printed[0]
    # the bullets below the trace read every step
    explained: set[int] = set()
    for first, last in re.findall(r"^\* steps? (\d+)(?:-(\d+))?:", text, flags=re.MULTILINE):
        explained.update(range(int(first), int(last or first) + 1))
    assert explained == set(range(sum(line.startswith("  step ") for line in printed)))


def test_the_witness_the_walkthrough_cites_is_reached(capsys: pytest.CaptureFixture[str]) -> None:
    assert "--witness last_known_leader_recorded" in " ".join(
        section("### A controller counterexample, step by step (KAFKA-19522)").split()
    )
    code, out, _ = run_cli(
        capsys, "check", "kraft-last-known-leader-fixed", "--witness", "last_known_leader_recorded"
    )
    assert code == 0
    assert "shows: the partition remembers its last known leader" in out


def test_every_controller_scenario_is_in_the_readme() -> None:
    """Named in full, as the second of a `name-a` / `-b` pair, or as `<scenario>-on-kraft|zk`."""
    from spec.scenarios import SCENARIOS

    text = README.read_text()
    controller = text[text.index("### The KRaft controller") : text.index("## Reading a counterexample")]
    shorthand = set(re.findall(r"`(-[a-z0-9-]+)`", controller))
    for scenario in SCENARIOS:
        if scenario.machine not in MACHINES:
            continue
        name = scenario.name
        composed = re.fullmatch(r"(.+)-on-(kraft|zk)", name)
        if composed and scenario.machine is REPLICATION_WITH_CONTROLLER:
            assert "`<scenario>-on-kraft`, `<scenario>-on-zk`" in controller
            continue
        paired = any(
            name.endswith(suffix) and f"`{name[: -len(suffix)]}" in controller for suffix in shorthand
        )
        assert f"`{name}`" in controller or paired, name


def without_timing(line: str) -> str:
    return re.sub(r"[\d.,]+ (s|states/s)\b", r"N \1", line)


def test_the_first_counterexample_of_the_readme_is_what_check_prints(
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = section("## Reading a counterexample")
    block = text[text.index("```\n") + 4 :]
    quoted = block[: block.index("```")].splitlines()
    assert quoted[0] == "$ kafkaspec check acks1-loss"
    code, out, _ = run_cli(capsys, "check", "acks1-loss", "--workers", "1")
    assert code == 1
    # seconds and states per second vary from run to run; the rest is the same text
    printed = out.splitlines()
    assert [without_timing(line) for line in quoted[1:]] == [without_timing(line) for line in printed]
