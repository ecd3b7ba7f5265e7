"""The names and defaults `kafkaspec verify` offers as choices, in a module that imports nothing.

The command line builds its options (the `--model`, `--format` and `--engine` choices, the
`--max-memory` default in the help) when it starts, for `kafkaspec --help` as for any other
command; taking them from the modules that use them would load the checkers, the readers and
the engines first (issue 11's start-up target: `kafkaspec --help` and `verify` of a small
history within 0.2 s). The readers take `FORMATS` from here; `engine.ENGINES` and
`linearizability.DEFAULT_MAX_MEMORY_BYTES` are their modules' own, and `tests/test_startup.py`
holds these equal to them and `MODEL_NAMES` to the models the checkers know.
"""

from __future__ import annotations

from typing import Final

MODEL_NAMES: Final = (
    "kafka",
    "register",
    "cas-register",
    "kv",
    "multi-register",
    "mutex",
    "fifo-queue",
    "set",
    "unordered-queue",
    "kafka-log",
    "maelstrom-kafka",
)
"""The built-in models (`--model` choices besides `auto` and MODULE:CLASS)."""

FORMATS: Final = ("jsonl", "edn", "porcupine", "parquet")
"""The history formats the readers accept (`--format` choices besides `auto`)."""

ENGINES: Final = ("auto", "local", "spark")
"""The verification engines (`--engine` choices)."""

DEFAULT_MAX_MEMORY_BYTES: Final = 512 * 1024 * 1024
"""A linearizability search's default cache budget (`--max-memory`'s default)."""
