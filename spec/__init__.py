"""The executable specification of Kafka's replication protocol.

Modules, each a state machine or a part of one (stdlib only, pure functions, frozen data):

* `spec.types`      plain data shared with implementations (records, error codes, acks)
* `spec.log`        one replica's log: records, LEO, high watermark, log start, epoch cache
* `spec.isr`        ISR shrink/expand, the leader's high watermark, produce acknowledgement
* `spec.truncation` where a new follower truncates: own HW (pre-0.11) or leader epoch (KIP-101/279)
* `spec.partition`  the partition as a whole: actions, invariants, witnesses
* `spec.replication_rules` the protocol's rules by name (KIP-101/279/320, KAFKA-7128, KAFKA-14704)
* `spec.replication_stories` published counterexamples replayed against the rule that broke and fixed
* `spec.checker`    the bounded breadth-first model checker
* `spec.scenarios`  the named questions the checker settles
"""

from spec import _compiled

_compiled.install()
