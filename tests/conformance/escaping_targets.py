"""Targets that try to escape the conformance suite: they hang or exit (MODULE:FACTORY targets)."""

from __future__ import annotations

import sys
import time

from conformance.impl_partition import ImplPartition
from conformance.partition_sut import PartitionView, ReplicationSettings
from conformance.sut import ReferenceLog
from spec.types import Record


class HangsOnRead(ReferenceLog):
    """`read` never returns (and swallows ordinary exceptions while it waits)."""

    def read(self, offset: int, max_records: int | None) -> tuple[Record, ...]:
        while True:
            try:
                time.sleep(0.01)
            except Exception:  # what a careless target does: the watchdog must get through
                continue


class ExitsOnRead(ReferenceLog):
    """`read` calls `sys.exit(0)`: a suite that let it through would report success."""

    def read(self, offset: int, max_records: int | None) -> tuple[Record, ...]:
        sys.exit(0)


class RaisesSystemExitOnAppend(ReferenceLog):
    """`append` raises `SystemExit` with a message."""

    def append(self, records: tuple[Record, ...]) -> int:
        raise SystemExit("bye")


class HangingPartition(ImplPartition):
    """A partition whose `observe` never returns after the first time it answered."""

    def __init__(self, settings: ReplicationSettings) -> None:
        super().__init__(settings)
        self.observed = 0

    def observe(self) -> PartitionView:
        self.observed += 1
        while self.observed > 1:
            time.sleep(0.01)
        return super().observe()
