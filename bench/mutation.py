"""Mutation testing of the conformance suite: does it catch deliberate single bugs in `impl/`?

Each mutant is one text substitution in one file of a scratch copy of the repository's
`impl/` package, placed first on PYTHONPATH of a subprocess that runs
`conformance.run.run_conformance("impl", ...)` with a fixed seed, on the suite that covers
the mutated file: the replica-log suite for the storage mutants, the partition (replication)
suite for the `impl/replication.py` mutants. A mutant is *detected* when the run reports a
divergence (or the mutated code fails outright: an exception, a crash or a timeout). Every
pattern must occur exactly once in its file: a pattern that is not found stops the script,
so no mutant is ever a silent no-op. The unmutated copy is run first, on every suite a
chosen mutant needs, and must conform.

Usage: ``python -m bench.mutation [--examples 300] [--seed 0] [--jobs 2] [--only NAME ...]
[--suite log|partition]``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TIMEOUT_SECONDS = 600


@dataclass(frozen=True, slots=True)
class Mutant:
    """One deliberate bug: replace `old` (which must occur exactly once) by `new` in `file`."""

    name: str
    file: str  # relative to impl/
    old: str
    new: str
    bug: str  # what the mutated code gets wrong
    suite: str = "log"  # the conformance suite that covers `file`


S = "storage.py"
E = "epoch_cache.py"
R = "replication.py"
PARTITION = "partition"

MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "index-lookup-off-by-one",
        S,
        "slot = bisect_right(self._relative_offsets, offset - self.base_offset) - 1",
        "slot = bisect_right(self._relative_offsets, offset - self.base_offset)",
        "the sparse-index lookup takes the entry after the wanted offset",
    ),
    Mutant(
        "index-wrong-position",
        S,
        "                self._positions.append(position)",
        "                self._positions.append(position + 8)",
        "appends record a wrong byte position in the in-memory sparse index",
    ),
    Mutant(
        "position-of-end-off-by-one",
        S,
        "        if offset == self.next_offset:",
        "        if offset == self.next_offset - 1:",
        "the last record's position is taken for the segment end",
    ),
    Mutant(
        "read-skips-first-segment",
        S,
        "slot = bisect_right(self._base_offsets, start) - 1",
        "slot = bisect_right(self._base_offsets, start)",
        "a fetch starts in the segment after the one holding the offset",
    ),
    Mutant(
        "crc-not-checked",
        S,
        "    if batch_crc(data, position, position + size) != crc:",
        "    if False:",
        "batches are accepted without checking their CRC (recovery keeps a damaged batch)",
    ),
    Mutant(
        "corrupt-tail-kept",
        S,
        "        if os.fstat(self._log_fd).st_size != scan.valid_bytes:",
        "        if False:",
        "recovery does not cut the data file after its last valid batch",
    ),
    Mutant(
        "recovery-point-boundary",
        S,
        "        if offset < self._recovery_point:",
        "        if offset <= self._recovery_point:",
        "a torn batch exactly at the recovery point is taken for lost flushed data",
    ),
    Mutant(
        "truncate-recovery-point-kept",
        S,
        "        self._recovery_point = min(self._recovery_point, end)",
        "        self._recovery_point = self._recovery_point",
        "truncate_to does not lower the recovery point",
    ),
    Mutant(
        "recovery-hw-unclamped",
        S,
        "        self._high_watermark = min(max(self._high_watermark, self._log_start_offset), "
        "self.log_end_offset)",
        "        self._high_watermark = self._high_watermark",
        "recovery does not cap the checkpointed HW at the recovered log end",
    ),
    Mutant(
        "crash-keeps-epoch-at-leo",
        S,
        "truncate_from_end(self.log_end_offset + 1 if clean else self.log_end_offset)",
        "truncate_from_end(self.log_end_offset + 1)",
        "after a crash an epoch assigned at the log end (no records) is kept",
    ),
    Mutant(
        "flush-checkpoints-wrong-hw",
        S,
        "HIGH_WATERMARK_CHECKPOINT, self._high_watermark)",
        "HIGH_WATERMARK_CHECKPOINT, self._log_start_offset)",
        "flush checkpoints the log start offset as the high watermark",
    ),
    Mutant(
        "truncate-to-off-by-one",
        S,
        "        end = max(min(offset, self.log_end_offset), self._log_start_offset)",
        "        end = max(min(offset + 1, self.log_end_offset), self._log_start_offset)",
        "truncate_to keeps one record too many",
    ),
    Mutant(
        "truncate-keeps-hw",
        S,
        "        self._high_watermark = min(self._high_watermark, end)",
        "        self._high_watermark = self._high_watermark",
        "truncate_to leaves the HW above the new log end",
    ),
    Mutant(
        "truncate-keeps-epoch-at-end",
        S,
        "        self._epoch_cache.truncate_from_end(end)",
        "        self._epoch_cache.truncate_from_end(end + 1)",
        "truncate_to keeps an epoch that starts at the new log end",
    ),
    Mutant(
        "truncate-fully-keeps-hw",
        S,
        "self._log_start_offset = self._high_watermark = self._recovery_point = offset",
        "self._log_start_offset = self._recovery_point = offset",
        "truncate_fully_and_start_at keeps the old high watermark",
    ),
    Mutant(
        "hw-not-capped-at-leo",
        S,
        "self._high_watermark = min(max(high_watermark, self._log_start_offset), self.log_end_offset)",
        "self._high_watermark = max(high_watermark, self._log_start_offset)",
        "update_high_watermark lets the HW pass the log end",
    ),
    Mutant(
        "delete-records-past-hw",
        S,
        "        target = min(offset, self._high_watermark)",
        "        target = offset",
        "DeleteRecords moves the log start offset past the high watermark",
    ),
    Mutant(
        "retention-past-hw",
        S,
        "            if upper > self._high_watermark:",
        "            if upper > self._high_watermark + 5:",
        "retention deletes segments holding offsets at or above the HW",
    ),
    Mutant(
        "retention-deletes-active-segment",
        S,
        "            doomed < len(self._segments) - 1 and",
        "            doomed < len(self._segments) and",
        "deleting segments below the log start offset may delete the active segment",
    ),
    Mutant(
        "truncate-mid-batch-drops-prefix",
        S,
        "            if base < offset:",
        "            if False:",
        "truncation inside a batch drops the whole batch instead of rewriting the kept prefix",
    ),
    Mutant(
        "read-inside-batch-from-batch-start",
        S,
        "    skip = first - base",
        "    skip = 0",
        "a read from an offset inside a batch returns the batch's records from its start",
    ),
    Mutant(
        "epoch-truncate-from-end-keeps-entry",
        E,
        "kept = [entry for entry in self._entries if entry.start_offset < end_offset]",
        "kept = [entry for entry in self._entries if entry.start_offset <= end_offset]",
        "truncateFromEnd keeps the entry starting exactly at the end offset",
    ),
    Mutant(
        "epoch-truncate-from-start-boundary",
        E,
        "removed = [entry for entry in self._entries if entry.start_offset <= start_offset]",
        "removed = [entry for entry in self._entries if entry.start_offset < start_offset]",
        "truncateFromStart duplicates an entry starting exactly at the new log start",
    ),
    Mutant(
        "epoch-assign-keeps-same-offset",
        E,
        "entries[-1].epoch >= epoch or entries[-1].start_offset >= start_offset",
        "entries[-1].epoch >= epoch or entries[-1].start_offset > start_offset",
        "assign keeps an older epoch starting at the same offset (cache not monotonic)",
    ),
    Mutant(
        "end-offset-wrong-boundary",
        E,
        "        return floor.epoch, higher.start_offset",
        "        return floor.epoch, higher.start_offset - 1",
        "endOffsetFor answers the last offset of the epoch instead of the next epoch's start",
    ),
    Mutant(
        "end-offset-latest-epoch",
        E,
        "            return requested_epoch, log_end_offset",
        "            return requested_epoch, log_end_offset - 1",
        "endOffsetFor the latest epoch answers LEO - 1",
    ),
    Mutant(
        "end-offset-floor-strict",
        E,
        "            if entry.epoch <= requested_epoch:",
        "            if entry.epoch < requested_epoch:",
        "endOffsetFor skips the requested epoch itself when looking for the floor entry",
    ),
    Mutant(
        "hw-off-by-one",
        R,
        "                candidate = min(candidate, follower_end)",
        "                candidate = min(candidate, follower_end + 1)",
        "the leader HW counts one record past the slowest ISR follower's LEO",
        PARTITION,
    ),
    Mutant(
        "epoch-truncation-to-hw",
        R,
        "        if self.config.truncation is TruncationRule.HIGH_WATERMARK:",
        "        if True:",
        "a follower truncates to its HW instead of the leader's epoch end offset (KIP-101 ignored)",
        PARTITION,
    ),
    Mutant(
        "kip-279-single-round",
        R,
        "            cache.truncate_from_end(end)\n            continue",
        "            return end",
        "truncation stops after one OffsetsForLeaderEpoch round when the leader answers an older epoch",
        PARTITION,
    ),
    Mutant(
        "isr-never-shrinks",
        R,
        "        leader.isr.discard(follower_id)",
        "        pass",
        "LeaderShrinkIsr is accepted but the follower stays in the ISR",
        PARTITION,
    ),
    Mutant(
        "shrink-within-lag",
        R,
        "        if self._ticks_since_caught_up(progress) <= self.config.replica_lag_ticks:",
        "        if self._ticks_since_caught_up(progress) < self.config.replica_lag_ticks:",
        "a follower is dropped from the ISR when it has lagged exactly replica.lag.time.max.ms",
        PARTITION,
    ),
    Mutant(
        "follower-hw-not-from-leader",
        R,
        "        log.set_high_watermark(min(response.leader_high_watermark, log.log_end_offset))",
        "        log.set_high_watermark(max(response.leader_high_watermark, log.log_end_offset))",
        "a follower takes its own LEO as its HW instead of min(leader HW, own LEO)",
        PARTITION,
    ),
    Mutant(
        "acks-all-completes-early",
        R,
        "        while waiting and waiting[0][0] < high_watermark:",
        "        while waiting and waiting[0][0] <= high_watermark:",
        "an acks=all produce is acknowledged when the HW reaches its offset, before it passes it",
        PARTITION,
    ),
    Mutant(
        "expand-ignores-epoch-start",
        R,
        "            if fetch_offset >= log.high_watermark and fetch_offset >= epoch_start:",
        "            if fetch_offset >= log.high_watermark:",
        "a follower rejoins the ISR at the HW without reaching the leader's epoch start (KAFKA-7128)",
        PARTITION,
    ),
    Mutant(
        "min-isr-off-by-one",
        R,
        "        if acks is Acks.ALL and len(leader.isr) < self.config.min_insync_replicas:",
        "        if acks is Acks.ALL and len(leader.isr) <= self.config.min_insync_replicas:",
        "acks=all is refused with NOT_ENOUGH_REPLICAS when the ISR has exactly min.insync.replicas",
        PARTITION,
    ),
    Mutant(
        "after-append-check-ignored",
        R,
        "        enough_replicas = len(leader.isr) >= self.config.min_insync_replicas",
        "        enough_replicas = True",
        "a waiting acks=all produce is acknowledged though the ISR shrank below min.insync.replicas",
        PARTITION,
    ),
    Mutant(
        "unclean-election-when-disabled",
        R,
        "        elif self.config.unclean_leader_election:",
        "        elif True:",
        "a restarted replica outside the ISR is elected although unclean election is disabled",
        PARTITION,
    ),
    Mutant(
        "fetch-not-fenced",
        R,
        "        if not leader.acts_as_leader or leader.leader_epoch != follower.leader_epoch:\n"
        "            return False\n        log = leader.log",
        "        if not leader.acts_as_leader:\n            return False\n        log = leader.log",
        "a leader answers fetches from a follower on another leader epoch (KIP-320 fencing lost)",
        PARTITION,
    ),
    Mutant(
        "new-leader-epoch-not-at-leo",
        R,
        "        replica.log.epoch_cache.assign(controller.leader_epoch, replica.log.log_end_offset)",
        "        pass",
        "a new leader does not record its epoch's start offset at its LEO (KAFKA-7415)",
        PARTITION,
    ),
    Mutant(
        "crash-keeps-isr",
        R,
        "        isr = controller.isr - {replica_id} if len(controller.isr) > 1 else controller.isr",
        "        isr = controller.isr",
        "the controller leaves a dead broker in the ISR",
        PARTITION,
    ),
    Mutant(
        "out-of-range-always-restarts-log",
        R,
        "            if log.log_end_offset > response.leader_log_end_offset:",
        "            if False:",
        "a follower ahead of its leader wipes its log instead of truncating to the leader's LEO",
        PARTITION,
    ),
)

SUITES = ("log", PARTITION)

CONFORMANCE_SUITES = {"log": "log", PARTITION: "exhaustive,partition"}
"""The conformance suites run for each kind of mutant, in order, until one detects it: the
replication mutants first meet the exhaustive suite (deterministic, every spec state within
its depth), then the random partition machine (deeper, sampled)."""

CHILD = """
import json, sys
import impl
from conformance.run import run_conformance
expected = sys.argv[1]
if not impl.__file__.startswith(expected):
    raise SystemExit(f"impl imported from {impl.__file__}, not the mutated copy in {expected}")
for suite in sys.argv[4].split(","):
    result = run_conformance("impl", int(sys.argv[2]), seed=int(sys.argv[3]), suite=suite, shrink=False)
    if not result.passed:
        break
lines = (result.failure or "").strip().splitlines()
print(json.dumps({"passed": result.passed, "why": f"{suite}: {lines[-1]}" if lines else ""}))
"""


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the conformance run said about one mutant."""

    name: str
    detected: bool
    how: str
    seconds: float


def mutate(scratch: Path, mutant: Mutant | None) -> Path:
    """A copy of impl/ under `scratch` with `mutant` applied; fails loudly if it does not apply."""
    root = scratch / (mutant.name if mutant else "unmutated")
    shutil.copytree(REPO / "impl", root / "impl", ignore=shutil.ignore_patterns("__pycache__"))
    if mutant is not None:
        path = root / "impl" / mutant.file
        text = path.read_text(encoding="utf-8")
        count = text.count(mutant.old)
        if count != 1:
            raise SystemExit(
                f"mutant {mutant.name}: pattern occurs {count} times in impl/{mutant.file}: {mutant.old!r}"
            )
        path.write_text(text.replace(mutant.old, mutant.new), encoding="utf-8")
    return root


def run_one(root: Path, name: str, examples: int, seed: int, suite: str = "log") -> Outcome:
    """Run the conformance `suite` with `root` first on PYTHONPATH."""
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), str(REPO)]))
    suites = CONFORMANCE_SUITES[suite]
    started = time.perf_counter()
    try:
        completed = subprocess.run(
            [sys.executable, "-c", CHILD, str(root / "impl"), str(examples), str(seed), suites],
            capture_output=True,
            text=True,
            env=environment,
            timeout=TIMEOUT_SECONDS,
            check=False,
            cwd=root,
        )
    except subprocess.TimeoutExpired:
        return Outcome(name, True, f"timeout after {TIMEOUT_SECONDS}s", time.perf_counter() - started)
    seconds = time.perf_counter() - started
    if "not the mutated copy" in completed.stderr:
        raise SystemExit(completed.stderr.strip())
    if completed.returncode != 0:
        last = (completed.stderr.strip().splitlines() or ["(no output)"])[-1]
        return Outcome(name, True, f"error: {last[:100]}", seconds)
    report = json.loads(completed.stdout.strip().splitlines()[-1])
    return Outcome(name, not report["passed"], str(report["why"])[:100], seconds)


def main(argv: list[str] | None = None) -> int:
    """Run every mutant and print the table; exit 1 when a mutant survives."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--examples", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--only", nargs="*", default=None, help="mutant names to run")
    parser.add_argument("--suite", choices=SUITES, default=None, help="only the mutants this suite covers")
    arguments = parser.parse_args(argv)
    chosen = [
        mutant
        for mutant in MUTANTS
        if (arguments.only is None or mutant.name in arguments.only)
        and (arguments.suite is None or mutant.suite == arguments.suite)
    ]
    if not chosen:
        parser.error("no mutant matches --only/--suite")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="kafkaspec-mutants-") as scratch_name:
        scratch = Path(scratch_name)
        roots = [mutate(scratch, mutant) for mutant in chosen]  # every pattern checked up front
        unmutated = mutate(scratch, None)
        for suite in sorted({mutant.suite for mutant in chosen}):
            baseline = run_one(unmutated, "unmutated", arguments.examples, arguments.seed, suite)
            if baseline.detected:
                print(f"the unmutated impl does not conform to the {suite} suite: {baseline.how}")
                return 2
        with ThreadPoolExecutor(max_workers=max(1, arguments.jobs)) as pool:
            outcomes = list(
                pool.map(
                    lambda pair: run_one(
                        pair[1], pair[0].name, arguments.examples, arguments.seed, pair[0].suite
                    ),
                    zip(chosen, roots, strict=True),
                )
            )
    width = max(len(mutant.name) for mutant in chosen)
    print(f"conformance run per mutant: target impl, {arguments.examples} examples, seed {arguments.seed}")
    print(f"{'mutant':<{width}}  {'suite':<9}  detected  seconds  how")
    for mutant, outcome in zip(chosen, outcomes, strict=True):
        verdict = "yes" if outcome.detected else "NO"
        print(
            f"{mutant.name:<{width}}  {mutant.suite:<9}  {verdict:<8}  {outcome.seconds:7.1f}  {outcome.how}"
        )
    for suite in SUITES:
        in_suite = [
            outcome for mutant, outcome in zip(chosen, outcomes, strict=True) if mutant.suite == suite
        ]
        if in_suite:
            found = sum(outcome.detected for outcome in in_suite)
            print(f"{suite} suite: detected {found}/{len(in_suite)}")
    detected = sum(outcome.detected for outcome in outcomes)
    elapsed = time.perf_counter() - started
    print(f"detected {detected}/{len(outcomes)} (target: all of them); {elapsed:.0f}s in all")
    return 0 if detected == len(outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
