"""The documentation site (`kafkaspec docs`): generated pages, the build, and the site in a browser.

The site is built once per test session (`site`); the browser test opens every page in headless
Chromium over the DevTools protocol (through a pipe, `--remote-debugging-pipe`: no port, no
extra package), records console errors, exceptions, failed loads and any request that leaves
the machine, checks every internal link and anchor, runs a search, and saves screenshots of the
partition page and a scenario page (their paths are printed).
"""

from __future__ import annotations

import base64
import dataclasses
import fcntl
import html
import json
import os
import re
import select
import shutil
import signal
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kafkaspec.cli import main
from kafkaspec.docs import (
    STAMP,
    BuildResult,
    DocsError,
    build_docs,
    check_output_dir,
    diagram_dot,
    diagram_graph,
    highlight_changes,
    machine_page,
    read_machine,
    rst_text,
    witness_traces,
)
from kafkaspec.outcomes import FindingsCache
from spec.composed_scenarios import REPLICATION_WITH_CONTROLLER
from spec.controller.zk_scenarios import MACHINE as ZK_CONTROLLER
from spec.machines import run_scenario
from spec.partition_scenarios import PARTITION
from spec.scenarios import MACHINES, SCENARIOS, SCENARIOS_BY_NAME
from tests.test_explanations import COUNTEREXAMPLES, WITNESS_SENTENCES, WITNESS_STEPS

pytest.importorskip("sphinx")

GLOSSARY_TERMS = (
    "AR (assigned replicas)",
    "ISR (in-sync replicas)",
    "OSR (out-of-sync replicas)",
    "LEO (log end offset)",
    "HW (high watermark)",
    "log start offset",
    "leader epoch",
    "controller epoch",
    "generation",
    "member epoch",
)


# ---------------------------------------------------------------------------------------
# The build (once per session)
# ---------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory, findings: FindingsCache) -> BuildResult:
    out = tmp_path_factory.mktemp("docs") / "site"
    result = build_docs(out, cache=findings)  # reuses the outcomes `check --all` found (conftest.py)
    print(f"\ndocs built in {result.seconds:.1f} s: {result.index}")
    return result


def html_of(site: BuildResult, page: str) -> str:
    return (site.out / page).read_text()


@pytest.mark.slow
def test_the_site_builds_without_a_warning(site):
    assert site.warnings == ()
    assert (site.out / STAMP).is_file()
    for page in ("index", "glossary", "architecture", "reading-order", "search", "genindex"):
        assert (site.out / f"{page}.html").is_file(), page


@pytest.mark.slow
def test_every_machine_has_a_page_with_its_actions_and_properties(site):
    for machine in MACHINES:
        doc = read_machine(machine, SCENARIOS)
        page = html_of(site, f"machines/{machine.name}.html")
        assert doc.actions, machine.name
        for action_type, function in doc.actions:
            assert f'id="{machine.name}-action-{action_type.__name__.lower()}"' in page, action_type
            if function is not None:
                assert function.__name__ in page
        for name in (*doc.invariants, *doc.step_properties, *doc.witnesses):
            assert name in page, name
        for scenario in doc.scenarios:
            assert f"scenarios/{scenario.name}.html" in page


@pytest.mark.slow
def test_the_partition_page_says_what_the_spec_says(site):
    page = html_of(site, "machines/partition.html")
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    # the guard and effect of ProducerSend, from producer_send's docstring
    assert "refused with NOT_ENOUGH_REPLICAS when the leader" in page
    # a field comment of the configuration, and its Kafka name
    assert "unclean.leader.election.enable" in page
    # the source of an invariant, one click away
    assert "def committed_records_survive(state: PartitionState) -> bool:" in text
    # citations link to public sources
    assert 'href="https://cwiki.apache.org/confluence/display/KAFKA/Kafka+Improvement+Proposals"' in page
    # the references gathered from the docstrings of the machine and its modules
    references = text[text.index("References") :]
    for cited in (
        "KIP-101",
        "KIP-279",
        "KIP-320",
        "KAFKA-7128",
        "min.insync.replicas",
        "Partition.maybeIncrementLeaderHW",
    ):
        assert cited in references, cited
    for module in ("spec-log", "spec-isr", "spec-truncation", "spec-types"):
        assert f"../modules/{module}.html" in page


@pytest.mark.slow
def test_scenario_pages_show_outcome_trace_and_explanation(site):
    for scenario in SCENARIOS:
        page = html_of(site, f"scenarios/{scenario.name}.html")
        assert f"kafkaspec check {scenario.name}" in html.unescape(re.sub(r"<[^>]+>", "", page))
        assert "(as expected)" in page, scenario.name
        if scenario.expect_violation:
            assert "<mark>" in page and " fails: " in page, scenario.name
        else:
            for witness in scenario.witnesses:
                assert f"Reached <code>{witness}</code>" in page, (scenario.name, witness)
    # the last line is the machine's explanation of the violation
    outcome = run_scenario(SCENARIOS_BY_NAME["acks1-loss"])
    assert outcome.explanation is not None
    page = html_of(site, "scenarios/acks1-loss.html")
    assert "Why <code>acknowledged_records_survive</code> fails: " in page
    assert outcome.explanation.replace("'", "&#x27;") in page


@pytest.mark.slow
def test_the_glossary_maps_kafkas_terms_and_nothing_cites_missing_documents(site):
    glossary = html_of(site, "glossary.html")
    for term in GLOSSARY_TERMS:
        assert re.search(rf"<dt[^>]*>{re.escape(term)}", glossary), term
    for page in site.out.rglob("*.html"):
        text = page.read_text()
        assert "ARCHITECTURE.md" not in text and "seed 003" not in text, page


@pytest.mark.slow
def test_pages_load_nothing_from_the_network(site):
    loads = re.compile(
        r"<(?:script|link|img|object|iframe|source)\b[^>]*\b(?:src|href|data)=\"(https?:)?//", re.I
    )
    for page in site.out.rglob("*.html"):
        assert not loads.search(page.read_text()), page
    for sheet in site.out.rglob("*.css"):
        assert not re.search(r"url\(\s*['\"]?(https?:)?//", sheet.read_text()), sheet


@pytest.mark.slow
@pytest.mark.parametrize("machine", MACHINES, ids=[machine.name for machine in MACHINES])
def test_every_machine_page_has_an_svg_diagram_of_the_explored_transitions(site, machine):
    if shutil.which("dot") is None:
        pytest.skip("Graphviz's dot is not installed (.ci/run installs Debian's graphviz)")
    graph = diagram_graph(machine)
    assert graph is not None, f"{machine.name} declares no diagram"
    page = html_of(site, f"machines/{machine.name}.html")
    svg_name = re.search(r'data="\.\./(_images/graphviz-[0-9a-f]+\.svg)"', page)
    assert svg_name, f"no diagram on the {machine.name} page"
    svg = html.unescape((site.out / svg_name.group(1)).read_text())
    for node in graph.nodes:
        assert f">{node}</text>" in svg, node
    for names in graph.edges.values():
        for name in names:
            assert name in svg


@pytest.mark.slow
def test_scenario_pages_end_with_the_pinned_sentences(site):
    """Each counterexample page ends with its explanation and each witness trace with what the
    witness shows: the sentences `tests/test_explanations.py` pins."""
    for name, (prop, steps, sentence) in COUNTEREXAMPLES.items():
        page = html.unescape(html_of(site, f"scenarios/{name}.html"))
        assert f"in {steps} steps" in page, name
        assert f"Why <code>{prop}</code> fails: {sentence}." in page, name
    for name, witnesses in WITNESS_STEPS.items():
        page = html.unescape(html_of(site, f"scenarios/{name}.html"))
        machine = SCENARIOS_BY_NAME[name].machine.name
        for witness, steps in witnesses.items():
            sentence = WITNESS_SENTENCES[(machine, witness)]
            assert f"Reached <code>{witness}</code> in {steps} steps: {sentence}." in page, (name, witness)


# ---------------------------------------------------------------------------------------
# Generation, without a build
# ---------------------------------------------------------------------------------------


def test_the_partition_diagram_has_every_role_and_phase():
    graph = diagram_graph(PARTITION)
    assert graph is not None
    assert graph.initial == ("leader",)
    assert set(graph.nodes) == {
        "leader",
        "leader on a stale epoch",
        "down",
        "restarted, awaiting LeaderAndIsr",
        "follower, truncating",
        "follower, fetching",
        "follower, fetch response in flight",
    }
    assert graph.edges[("follower, truncating", "follower, fetching")] == ("FollowerTruncate",)
    assert "BrokerRestart" in graph.edges[("down", "restarted, awaiting LeaderAndIsr")]
    dot = diagram_dot(graph)
    assert dot.count(" -> ") == len(graph.edges) + len(graph.initial)


def test_every_machine_declares_a_diagram():
    assert all(machine.diagram is not None for machine in MACHINES), [
        machine.name for machine in MACHINES if machine.diagram is None
    ]


def test_the_zk_controller_diagram_is_kafkas_partition_state_machine():
    graph = diagram_graph(ZK_CONTROLLER)
    assert graph is not None
    assert {"NonExistentPartition", "NewPartition", "OnlinePartition", "OfflinePartition"} <= set(graph.nodes)
    assert graph.initial == ("NonExistentPartition",)  # the topic is created during the run
    # edges name the ControllerEvent Kafka handles, not only the action
    assert graph.edges[("NonExistentPartition", "NewPartition")] == ("ControllerProcessEvent: TopicChange",)
    assert "ControllerProcessEvent: BrokerChange" in graph.edges[("OnlinePartition", "OfflinePartition")]
    assert (
        "ControllerProcessEvent: Reelect"
        in graph.edges[("no controller (/controller deleted)", "OnlinePartition")]
    )
    assert graph.edges[
        ("controller crashed, its session not yet expired", "no controller (/controller deleted)")
    ] == ("SessionExpire",)


def test_the_composed_diagram_is_the_replica_moved_by_metadata_records():
    graph = diagram_graph(REPLICATION_WITH_CONTROLLER)
    assert graph is not None
    assert "restarted, awaiting metadata replay" in graph.nodes
    # on KRaft a replica changes role only by replaying the metadata log
    for (source, target), names in graph.edges.items():
        if source != "down" and target.startswith(("leader", "follower, truncating")) and source != target:
            assert set(names) <= {"BrokerReplayMetadata", "ControllerMoveLeadership"}, (source, target, names)


def test_a_machine_without_modules_or_diagram_still_gets_a_page():
    bare = dataclasses.replace(PARTITION, modules=(), diagram=None)
    scenarios = [
        dataclasses.replace(scenario, machine=bare) for scenario in SCENARIOS if scenario.machine is PARTITION
    ]
    doc = read_machine(bare, scenarios)
    assert doc.module.__name__ == "spec.partition"  # from the initial state's type
    assert {action.__name__ for action, _ in doc.actions} >= {"ProducerSend", "BrokerCrash"}
    assert all(function is not None for _, function in doc.actions)
    page = machine_page(doc, None, has_dot=False)
    assert "declares no diagram projection yet" in page
    assert "ProducerSend" in page and "committed_records_survive" in page


def test_changed_fields_are_highlighted_and_nothing_else():
    before = ["controller: leader 0  epoch 0  ISR {0,1}", "replica 0: leader  LEO 0  HW 0"]
    after = [
        "controller: leader 0  epoch 1  ISR {0,1}",
        "replica 0: leader  LEO 1  HW 0",
        "clients: acked {0}",
    ]
    shown = highlight_changes(before, after)
    assert shown[0] == "controller: leader 0  <mark>epoch 1</mark>  ISR {0,1}"
    assert shown[1] == "replica 0: leader  <mark>LEO 1</mark>  HW 0"
    assert shown[2] == "clients:<mark> acked {0}</mark>"
    assert "<mark>" not in "".join(highlight_changes(None, after))  # the initial state: nothing changed


def test_witness_traces_are_shortest_paths_to_the_witness():
    outcome = run_scenario(dataclasses.replace(SCENARIOS_BY_NAME["acks-all-min-isr-2"], max_depth=6))
    traces = {trace.name: trace for trace in witness_traces(outcome)}
    assert set(traces) == {"write_acknowledged", "produce_rejected"}
    model = PARTITION.model(outcome.config, (), ("produce_rejected",))
    rejected = model.witnesses["produce_rejected"]
    trace = traces["produce_rejected"].trace
    assert trace is not None
    assert rejected(trace[-1].state)
    assert not any(rejected(step.state) for step in trace[:-1])
    assert type(trace[-1].action).__name__ == "ProducerSend"


def test_docstrings_become_rest_and_unreadable_ones_stay_as_written():
    columns = "One line.\n\nActions\n    ProducerSend   a producer appends\n    ClockTick      time passes\n"
    converted = rst_text(columns)
    assert "Actions\n    ``ProducerSend``\n        a producer appends\n    ``ClockTick``\n" in converted
    broken = "A table\n\n===== =====\na b\n===== ==\n"
    assert rst_text(broken).startswith(".. code-block:: text")


def test_docs_refuses_an_output_directory_it_did_not_build(tmp_path, capsys):
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    with pytest.raises(SystemExit) as exit_info:
        main(["docs", "--out", str(foreign)])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "not a kafkaspec docs build" in err
    assert (foreign / "notes.txt").read_text() == "keep me"
    a_file = tmp_path / "file"
    a_file.write_text("x")
    with pytest.raises(SystemExit) as exit_info:
        main(["docs", "--out", str(a_file)])
    assert exit_info.value.code == 2
    assert "not a directory" in capsys.readouterr().err
    previous = tmp_path / "previous"
    previous.mkdir()
    (previous / STAMP).write_text("")
    (previous / "index.html").write_text("old")
    check_output_dir(previous)  # a previous build may be replaced
    check_output_dir(tmp_path / "new" / "dir")  # so may a directory that does not exist yet
    with pytest.raises(DocsError):
        check_output_dir(foreign)


# ---------------------------------------------------------------------------------------
# The site in headless Chromium
# ---------------------------------------------------------------------------------------


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


class DevTools:
    """Headless Chromium driven over the DevTools protocol through `--remote-debugging-pipe`:
    Chromium reads JSON commands on its fd 3 and writes answers and events on its fd 4, each
    message ended by a NUL byte."""

    def __init__(self, browser: str, profile: Path, log: Path) -> None:
        commands_read, commands_write = os.pipe()
        answers_read, answers_write = os.pipe()
        # Move the child's ends above 3 and 4 so the dup2 calls below cannot clobber each other.
        child_read = fcntl.fcntl(commands_read, fcntl.F_DUPFD_CLOEXEC, 10)
        child_write = fcntl.fcntl(answers_write, fcntl.F_DUPFD_CLOEXEC, 10)
        for descriptor in (commands_read, answers_write):
            os.close(descriptor)
        arguments = [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--remote-debugging-pipe",
            f"--user-data-dir={profile}",
            "--window-size=1300,900",
        ]
        self.pid = os.posix_spawn(
            browser,
            arguments,
            dict(os.environ),
            file_actions=[
                (os.POSIX_SPAWN_DUP2, child_read, 3),
                (os.POSIX_SPAWN_DUP2, child_write, 4),
                (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                (os.POSIX_SPAWN_OPEN, 2, str(log), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644),
            ],
        )
        os.close(child_read)
        os.close(child_write)
        self.commands = commands_write
        self.answers = answers_read
        self.buffer = b""
        self.next_id = 0
        self.events: list[dict[str, Any]] = []
        self.session = ""

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self.buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([self.answers], [], [], remaining)[0]:
                raise TimeoutError("Chromium did not answer in time")
            chunk = os.read(self.answers, 1 << 20)
            if not chunk:
                raise ConnectionError("Chromium closed the DevTools pipe")
            self.buffer += chunk
        message, _, self.buffer = self.buffer.partition(b"\0")
        return json.loads(message)  # type: ignore[no-any-return]

    def call(self, method: str, timeout: float = 60, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        message: dict[str, Any] = {"id": self.next_id, "method": method, "params": params}
        if self.session and not method.startswith(("Target.", "Browser.")):
            message["sessionId"] = self.session
        os.write(self.commands, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            answer = self._read_message(deadline)
            if answer.get("id") == self.next_id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer.get("result", {})  # type: ignore[no-any-return]
            if "method" in answer:
                self.events.append(answer)

    def wait_for(self, event: str, timeout: float = 60) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            for index, seen in enumerate(self.events):
                if seen["method"] == event:
                    return self.events.pop(index)
            message = self._read_message(deadline)
            if "method" in message:
                self.events.append(message)

    def open_page(self) -> None:
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable")

    def evaluate(self, expression: str) -> Any:
        answer = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in answer:
            raise RuntimeError(f"{expression}: {answer['exceptionDetails']}")
        return answer["result"].get("value")

    def visit(self, url: str) -> list[dict[str, Any]]:
        """Load `url`; return the events of the load (console, exceptions, network)."""
        self.events.clear()
        self.call("Page.navigate", url=url)
        self.wait_for("Page.loadEventFired")
        self.evaluate("new Promise(done => setTimeout(done, 150))")  # let late scripts run
        events, self.events = self.events, []
        return events

    def screenshot(self, path: Path, height: int) -> None:
        self.call(
            "Emulation.setDeviceMetricsOverride", width=1300, height=height, deviceScaleFactor=1, mobile=False
        )
        data = self.call("Page.captureScreenshot", format="png")["data"]
        path.write_bytes(base64.b64decode(data))
        self.call("Emulation.clearDeviceMetricsOverride")

    def close(self) -> None:
        try:
            self.call("Browser.close", timeout=10)
        except (TimeoutError, ConnectionError, RuntimeError, OSError):
            os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        os.close(self.commands)
        os.close(self.answers)


@pytest.fixture
def devtools(tmp_path: Path) -> Iterator[DevTools]:
    browser = chromium()
    if browser is None:
        pytest.skip("no Chromium on this machine (.ci/run installs Debian's chromium)")
    tools = DevTools(browser, tmp_path / "profile", tmp_path / "chromium.log")
    try:
        tools.open_page()
        yield tools
    finally:
        tools.close()


def problems_in(events: list[dict[str, Any]]) -> list[str]:
    """Console errors, uncaught exceptions, failed loads and requests that leave the machine."""
    found = []
    for event in events:
        method, params = event["method"], event.get("params", {})
        if method == "Runtime.exceptionThrown":
            found.append(f"exception: {params['exceptionDetails'].get('text')}")
        elif method == "Runtime.consoleAPICalled" and params.get("type") in {"error", "assert"}:
            found.append(f"console.{params['type']}: {[arg.get('value') for arg in params.get('args', [])]}")
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            found.append(f"log: {params['entry'].get('text')} {params['entry'].get('url', '')}")
        elif method == "Network.loadingFailed":
            found.append(f"failed load: {params.get('errorText')}")
        elif method == "Network.requestWillBeSent":
            url = params["request"]["url"]
            if urllib.parse.urlparse(url).scheme not in {"file", "data", "about", "blob"}:
                found.append(f"network request: {url}")
    return found


LINKS = """(() => ({
  links: [...document.querySelectorAll('a[href]')].map(a => a.href),
  resources: [
    ...[...document.querySelectorAll('img[src], script[src]')].map(e => e.src),
    ...[...document.querySelectorAll('link[href]')].map(e => e.href),
    ...[...document.querySelectorAll('object[data]')].map(e => e.data),
  ],
  ids: [...document.querySelectorAll('[id]')].map(e => e.id),
  text: document.body.innerText.length,
}))()"""


@pytest.mark.slow
def test_every_page_renders_in_headless_chromium_with_working_links(site, devtools, tmp_path):
    pages = sorted(site.out.rglob("*.html"))
    assert len(pages) >= len(MACHINES) + len(SCENARIOS) + 5
    ids: dict[Path, set[str]] = {}
    links: list[tuple[Path, str]] = []
    problems: dict[str, list[str]] = {}
    for page in pages:
        events = problems_in(devtools.visit(page.as_uri()))
        found = devtools.evaluate(LINKS)
        assert found["text"] > 100, f"{page} rendered almost nothing"
        if events:
            problems[str(page.relative_to(site.out))] = events
        ids[page.resolve()] = set(found["ids"])
        links += [(page, url) for url in (*found["links"], *found["resources"])]
    assert problems == {}
    broken = []
    for page, url in links:
        parsed = urllib.parse.urlparse(url)
        if parsed.scheme in {"http", "https"}:
            continue  # citations (KIPs, JIRA): links for the reader, never loaded
        if parsed.scheme != "file":
            broken.append(f"{page.name}: {url}")
            continue
        target = Path(urllib.parse.unquote(parsed.path)).resolve()
        if not target.is_file():
            broken.append(f"{page.name}: {url} (no such file)")
        elif (
            parsed.fragment
            and target.suffix == ".html"
            and urllib.parse.unquote(parsed.fragment) not in ids.get(target, set())
        ):
            broken.append(f"{page.name}: {url} (no such anchor)")
    assert broken == []


@pytest.mark.slow
def test_search_finds_the_high_watermark_offline(site, devtools):
    url = (site.out / "search.html").as_uri() + "?q=high+watermark"
    assert problems_in(devtools.visit(url)) == []
    deadline = time.monotonic() + 30
    results: list[str] = []
    while time.monotonic() < deadline and not results:
        results = devtools.evaluate("[...document.querySelectorAll('#search-results li a')].map(a => a.href)")
        time.sleep(0.2)
    assert any(result.endswith(("machines/partition.html", "modules/spec-isr.html")) for result in results), (
        results
    )


@pytest.mark.slow
def test_screenshots_of_the_partition_page_and_a_scenario_page(site, devtools, capsys):
    shots = {}
    for name, page, height in (
        ("partition", "machines/partition.html", 2400),
        ("scenario", "scenarios/hw-truncation-loss.html", 3000),
    ):
        assert problems_in(devtools.visit((site.out / page).as_uri())) == []
        if name == "partition":
            diagram_height = devtools.evaluate(
                "Math.round(document.querySelector('object.graphviz, .graphviz object')"
                "?.getBoundingClientRect().height || 0)"
            )
            if shutil.which("dot") is not None:
                assert diagram_height > 200, "the state diagram did not render"
        shot = site.out.parent / f"screenshot-{name}.png"
        devtools.screenshot(shot, height)
        assert shot.stat().st_size > 20_000
        shots[name] = shot
    with capsys.disabled():
        for name, shot in shots.items():
            print(f"\nscreenshot of the {name} page: {shot}")
