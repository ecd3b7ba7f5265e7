"""impl: the optimized implementation of the replicated partition and of Kafka's on-disk log.

`impl.replication` runs the spec's partition actions with O(R) work per fetch; `impl.storage`
stores the log as Kafka does (segments of record batches with a sparse offset index),
`impl.epoch_cache` and `impl.checkpoints` the leader-epoch and offset checkpoint files. It
imports only plain data from the spec (`spec.types`), so the conformance suites test it as an
independent implementation (the import rules are on the documentation's architecture page).
"""
