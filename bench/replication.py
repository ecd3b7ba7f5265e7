"""Replication and storage performance of `impl/`, measured side by side in one run.

Usage: python -m bench.replication [--quick] [--max-exponent E] [--reference-seconds S]

1. Replication throughput: the same workload (3 replicas, min.insync.replicas=2, acks=all;
   rounds of `--batch` produces, then each follower fetches and handles its response, then a
   consumer reads what is committed) on `impl.replication` and on the reference. The
   reference is `reference.partition.ReferencePartition`, one `spec.partition.step` on
   frozen state per operation (appends cost O(log length)), so it runs on the record
   counts that fit `--reference-seconds`; impl runs the same counts, then alone on
   `--records` (1,000,000 by default). Target: impl >= 50x the reference.
2. Offset lookup latency of `impl.storage` as one log grows through 10^3 .. 10^E small
   records (E = 7 by default, ~290 MB of segments; lower it with --max-exponent). Target:
   flat (sparse index: bisect over segments and index entries, then a bounded scan).
3. `impl.storage` append throughput to disk vs a plain sequential write of the same bytes
   in the same chunks, both ending with fsync, for `append_batch` (producer-encoded record
   batches, the broker's path) and for the record-level `append`. Target: >= 50%.
4. Resident memory of the sparse index (the in-memory index arrays) per million records.

The machine is shared and noisy: ratios measured in the same run matter, absolute numbers
less so.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from impl import storage
from impl.replication import ReplicatedPartition, ReplicationConfig
from reference.partition import ReferencePartition, running_config
from spec.log import readable_records
from spec.types import Acks, TruncationRule

TARGET_SPEEDUP = 50.0
TARGET_APPEND_RATIO = 0.5
REPLICAS = 3
MIN_INSYNC_REPLICAS = 2
SMALL_VALUE = b"v"  # a 1-byte value: 5 bytes in a batch (its length and itself)
LOOKUPS = 2000


# ---------------------------------------------------------------------------------------
# 1. Replication throughput
# ---------------------------------------------------------------------------------------


class ReplicationDriver(Protocol):
    """The three operations of the workload, on one implementation."""

    def produce(self, value: int) -> None: ...

    def replicate(self, follower: int) -> None: ...

    def consume(self, offset: int) -> int: ...

    def summary(self) -> tuple[int, int, int]: ...  # (leader LEO, leader HW, acknowledged)


class ImplDriver:
    """`impl.replication`, called directly."""

    def __init__(self) -> None:
        self.partition = ReplicatedPartition(ReplicationConfig(REPLICAS, MIN_INSYNC_REPLICAS))

    def produce(self, value: int) -> None:
        self.partition.produce(0, Acks.ALL, value)

    def replicate(self, follower: int) -> None:
        self.partition.leader_handle_fetch(follower)
        self.partition.follower_handle_fetch_response(follower)

    def consume(self, offset: int) -> int:
        return len(self.partition.consumer_fetch(0, offset))

    def summary(self) -> tuple[int, int, int]:
        log = self.partition.replicas[0].log
        return log.log_end_offset, log.high_watermark, len(self.partition.acknowledged)


class ReferenceDriver:
    """`reference.partition.ReferencePartition`: every operation is one `spec.partition.step`
    on frozen state (the definitional behaviour), so each costs O(log length)."""

    def __init__(self) -> None:
        self.partition = ReferencePartition(
            running_config(
                replication_factor=REPLICAS,
                min_insync_replicas=MIN_INSYNC_REPLICAS,
                unclean_leader_election=False,
                truncation=TruncationRule.LEADER_EPOCH,
                replica_lag_ticks=0,
            )
        )

    def produce(self, value: int) -> None:
        if self.partition.produce(0, Acks.ALL, value) is None:
            raise RuntimeError("the reference refused a produce")

    def replicate(self, follower: int) -> None:
        self.partition.leader_handle_fetch(follower)
        self.partition.follower_handle_fetch_response(follower)

    def consume(self, offset: int) -> int:
        log = self.partition.state.replicas[0].log
        return sum(1 for position, _ in readable_records(log) if position >= offset)

    def summary(self) -> tuple[int, int, int]:
        log = self.partition.state.replicas[0].log
        return log.log_end_offset, log.high_watermark, len(self.partition.acknowledged)


def reference_factory() -> tuple[str, Callable[[], ReplicationDriver]]:
    """The definitional implementation to compare with."""
    return "reference.partition.ReferencePartition (spec.partition.step on frozen state)", ReferenceDriver


def run_workload(driver: ReplicationDriver, records: int, batch: int) -> float:
    """Records per second of produce + replicate + consume; checks the run replicated."""
    started = time.perf_counter()
    consumed = value = 0
    while value < records:
        for _ in range(min(batch, records - value)):
            driver.produce(value)
            value += 1
        for follower in range(1, REPLICAS):
            driver.replicate(follower)
        consumed += driver.consume(consumed)
    seconds = time.perf_counter() - started
    end, high_watermark, acknowledged = driver.summary()
    if end != records or high_watermark < records - batch or acknowledged != high_watermark:
        raise RuntimeError(
            f"workload did not replicate: LEO {end}, HW {high_watermark}, acked {acknowledged}"
        )
    return records / seconds


def replication_section(arguments: argparse.Namespace) -> None:
    name, make_reference = reference_factory()
    print(
        f"\n1. replication throughput: {REPLICAS} replicas, "
        f"min.insync.replicas={MIN_INSYNC_REPLICAS}, acks=all,"
    )
    print(f"   rounds of {arguments.batch} produces + a fetch by each follower + a consumer read")
    print(f"   reference: {name};")
    print("   it costs O(log length) per step, so it runs only on the counts")
    print(
        f"   that fit {arguments.reference_seconds:.0f} s; impl runs the same counts, "
        f"then {arguments.records:,} alone"
    )
    print(f"   {'records':>10} {'reference rec/s':>16} {'impl rec/s':>12} {'speedup':>9}")
    count = arguments.first_reference_records
    best_speedup = 0.0
    while True:
        started = time.perf_counter()
        reference_rate = run_workload(make_reference(), count, arguments.batch)
        elapsed = time.perf_counter() - started
        impl_rate = run_workload(ImplDriver(), count, arguments.batch)
        speedup = impl_rate / reference_rate
        best_speedup = speedup
        print(f"   {count:>10,} {reference_rate:>16,.0f} {impl_rate:>12,.0f} {speedup:>8.0f}x")
        if elapsed * 4 > arguments.reference_seconds:  # the next count (2x) would take ~4x
            break
        count *= 2
    impl_rate = run_workload(ImplDriver(), arguments.records, arguments.batch)
    print(f"   {arguments.records:>10,} {'(not run)':>16} {impl_rate:>12,.0f}")
    verdict = "met" if best_speedup >= TARGET_SPEEDUP else "NOT met"
    print(
        f"   speedup at the largest common count: {best_speedup:.0f}x (target >= {TARGET_SPEEDUP:.0f}x: "
        f"{verdict}; the gap widens with the log, the reference being quadratic)"
    )


# ---------------------------------------------------------------------------------------
# 2. Offset lookup latency as the log grows
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LookupPoint:
    records: int
    build_seconds: float
    microseconds: float
    segments: int
    index_entries: int


def index_entries(log: storage.SegmentedLog) -> int:
    return sum(len(segment._relative_offsets) for segment in log._segments)


def index_bytes(log: storage.SegmentedLog) -> int:
    """Resident bytes of the in-memory sparse index: the two arrays of every segment."""
    return sum(
        sys.getsizeof(segment._relative_offsets) + sys.getsizeof(segment._positions)
        for segment in log._segments
    )


def grow(log: storage.SegmentedLog, records: int, batch: int = 1000) -> None:
    """Append small records until the log holds `records`."""
    payloads = [(0, SMALL_VALUE)] * batch
    while log.log_end_offset < records:
        log.append_payloads(payloads[: min(batch, records - log.log_end_offset)], timestamp_ms=0)


def mean_lookup_microseconds(log: storage.SegmentedLog, rng: random.Random) -> float:
    offsets = [rng.randrange(log.log_end_offset) for _ in range(LOOKUPS)]
    started = time.perf_counter()
    for offset in offsets:
        log.record_at(offset)
    return (time.perf_counter() - started) / LOOKUPS * 1e6


def lookup_section(arguments: argparse.Namespace, scratch: Path) -> tuple[int, int, int]:
    """Print the latency table; return (records, index bytes, data bytes) of the largest log built."""
    print(f"\n2. offset lookup latency (record_at of {LOOKUPS} random offsets) as one log grows")
    print("   1-byte values in batches of 1,000 records, segment.bytes=64 MiB, index.interval.bytes=4096")
    print(f"   {'records':>12} {'build s':>8} {'segments':>9} {'index entries':>14} {'lookup us':>10}")
    config = storage.LogConfig(segment_bytes=64 * 1024 * 1024)
    log = storage.open(scratch / "lookup-0", config)
    rng = random.Random(0)
    points: list[LookupPoint] = []
    for exponent in range(3, arguments.max_exponent + 1):
        started = time.perf_counter()
        grow(log, 10**exponent)
        build = time.perf_counter() - started
        point = LookupPoint(
            10**exponent, build, mean_lookup_microseconds(log, rng), len(log._segments), index_entries(log)
        )
        points.append(point)
        print(
            f"   {point.records:>12,} {point.build_seconds:>8.1f} {point.segments:>9} "
            f"{point.index_entries:>14,} {point.microseconds:>10.1f}"
        )
    spread = max(point.microseconds for point in points) / min(point.microseconds for point in points)
    print(
        f"   largest / smallest latency: {spread:.2f} (target: flat; 10^{arguments.max_exponent} is the "
        f"largest size run, --max-exponent changes it)"
    )
    largest = (log.log_end_offset, index_bytes(log), log.size_in_bytes)
    log.close(flush=False)
    shutil.rmtree(scratch / "lookup-0", ignore_errors=True)
    return largest


def index_memory_section(records: int, resident_bytes: int, data_bytes: int) -> None:
    per_million = resident_bytes * 10**6 / records
    print(
        f"\n4. sparse index resident memory (the in-memory index arrays of the {records:,}-record log): "
        f"{per_million / 1024:.1f} KiB per million records"
    )
    print(
        f"   at {data_bytes / records:.1f} bytes of log per record; one 8-byte entry per "
        "index.interval.bytes (4096) of data, so larger records need proportionally more"
    )


# ---------------------------------------------------------------------------------------
# 3. Append throughput vs a plain sequential write
# ---------------------------------------------------------------------------------------


def storage_append_seconds(
    directory: Path, records: int, value: bytes, batch: int, producer_batches: bool
) -> tuple[float, list[int]]:
    """Seconds to append `records` and fsync, and the byte size of each batch written.

    `producer_batches`: the broker's path, `append_batch` of batches the producer encoded
    (encoded before the clock starts, as they arrive encoded from the network); otherwise
    the record-level `append_payloads`, which encodes one batch per call."""
    log = storage.open(directory, storage.LogConfig())
    payloads = [(0, value)] * batch
    encoded = storage.encode_batch(0, 0, 0, [value] * batch)
    sizes: list[int] = []
    started = time.perf_counter()
    written = 0
    while written < records:
        before = log.size_in_bytes
        if producer_batches:
            log.append_batch(encoded)
        else:
            log.append_payloads(payloads, timestamp_ms=0)
        sizes.append(log.size_in_bytes - before)
        written += batch
    log.flush()
    seconds = time.perf_counter() - started
    log.close(flush=False)
    return seconds, sizes


def plain_write_seconds(path: Path, source: Path, sizes: list[int]) -> float:
    """Seconds to write the same bytes in the same chunks to a fresh file and fsync it."""
    data = source.read_bytes()
    chunks = []
    position = 0
    for size in sizes:
        chunks.append(data[position : position + size])
        position += size
    started = time.perf_counter()
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for chunk in chunks:
            os.write(descriptor, chunk)
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
    return time.perf_counter() - started


APPEND_PATHS = (
    ("append_batch", True),  # producer-encoded batches: validate, patch baseOffset, write
    ("append", False),  # record-level: encode one batch per call, then write
)


def append_section(arguments: argparse.Namespace, scratch: Path) -> None:
    print("\n3. impl.storage append vs a plain sequential write of the same bytes in the same chunks")
    print("   (os.write + fsync); batches of 1000 records, one record batch (format v2) per call.")
    print("   append_batch: producer-encoded batches (CRC + structure check, baseOffset patched in")
    print("   place, sparse index, write); append: the record-level API (encode + CRC + the same)")
    print(
        f"   {'path':<12} {'value bytes':>11} {'records':>10} {'MB':>7} {'storage MB/s':>13} "
        f"{'plain MB/s':>11} {'ratio':>6}"
    )
    for name, producer_batches in APPEND_PATHS:
        for value_bytes in (100, 1000):
            records = arguments.append_records if value_bytes == 100 else arguments.append_records // 5
            directory = scratch / f"append{value_bytes}-0"
            seconds, sizes = storage_append_seconds(
                directory, records, b"x" * value_bytes, batch=1000, producer_batches=producer_batches
            )
            total = sum(sizes)
            segment = directory / storage.segment_file_name(0, "log")
            plain = plain_write_seconds(scratch / "plain.bin", segment, sizes)
            ratio = plain / seconds
            print(
                f"   {name:<12} {value_bytes:>11} {records:>10,} {total / 1e6:>7.1f} "
                f"{total / 1e6 / seconds:>13.1f} {total / 1e6 / plain:>11.1f} {ratio:>5.0%}"
            )
            shutil.rmtree(directory, ignore_errors=True)
            (scratch / "plain.bin").unlink(missing_ok=True)
    print(f"   target: storage >= {TARGET_APPEND_RATIO:.0%} of the plain write")


# ---------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="small sizes: a run of a few seconds")
    parser.add_argument("--records", type=int, default=None, help="impl-only replication run (default 1M)")
    parser.add_argument("--batch", type=int, default=10, help="produces per replication round")
    parser.add_argument("--reference-seconds", type=float, default=None, help="time budget per reference run")
    parser.add_argument("--max-exponent", type=int, default=None, help="largest log for lookups: 10^E")
    parser.add_argument("--append-records", type=int, default=None)
    arguments = parser.parse_args(argv)
    quick = arguments.quick
    arguments.records = arguments.records or (20_000 if quick else 1_000_000)
    arguments.reference_seconds = arguments.reference_seconds or (1.0 if quick else 20.0)
    arguments.max_exponent = arguments.max_exponent or (5 if quick else 7)
    arguments.append_records = arguments.append_records or (50_000 if quick else 500_000)
    arguments.first_reference_records = 250 if quick else 1000
    if not 3 <= arguments.max_exponent <= 8:
        parser.error("--max-exponent must be between 3 and 8")
    print(
        f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cpus, "
        f"{'quick' if quick else 'full'} run"
    )
    started = time.perf_counter()
    replication_section(arguments)
    with tempfile.TemporaryDirectory(prefix="kafkaspec-bench-") as scratch_name:
        scratch = Path(scratch_name)
        records, resident_bytes, data_bytes = lookup_section(arguments, scratch)
        append_section(arguments, scratch)
    index_memory_section(records, resident_bytes, data_bytes)
    print(f"\n{time.perf_counter() - started:.0f} s in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
