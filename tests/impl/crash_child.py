"""Child process of the crash-safety test: appends and flushes until it is killed.

Usage: ``python -m tests.impl.crash_child DIRECTORY RUN SEED``. Every record at offset `o`
written by run `r` is ``Record(epoch=r, value=o * 1000 + r)``, so the parent can check any
record it reads. Batches go through `append` or, encoded by the child, `append_batch`. After
each flush the child prints ``flushed <log end offset>``: every offset below it must survive
a SIGKILL.
"""

from __future__ import annotations

import random
import sys

from impl import storage
from spec.types import Record

CONFIG = storage.LogConfig(segment_bytes=2048, index_interval_bytes=128)


def value_for(offset: int, run: int) -> int:
    """The value the child writes at `offset` in run `run`."""
    return offset * 1000 + run


def main(directory: str, run: int, seed: int) -> None:
    rng = random.Random(seed)
    log = storage.open(directory, CONFIG)
    print("ready", flush=True)
    while True:
        first = log.log_end_offset
        count = rng.randint(1, 20)
        batch = [Record(run, value_for(offset, run)) for offset in range(first, first + count)]
        if rng.random() < 0.5:
            log.append(batch)
        else:  # a producer-encoded batch: the log patches its base offset in place
            values = [storage.encode_value(record.value) for record in batch]
            log.append_batch(storage.encode_batch(0, run, 0, values))
        if rng.random() < 0.5:
            log.flush()
            print(f"flushed {log.log_end_offset}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
