"""reference: definitional implementations built on the spec, and the models histories are checked against.

`reference.log` (one replica's log) and `reference.partition` (a replicated partition whose every
operation is a `spec.partition.step`) are what the conformance suites compare implementations
with; `reference.models` holds the sequential models of `kafkaspec verify` (register, CAS
register, kv, multi-register, mutex, FIFO queue, Kafka partition log). It imports only `spec`
(the import rules are on the documentation's architecture page).
"""
