"""conformance: drive an implementation and the reference with the same commands, compare every answer.

Hypothesis state machines (`conformance.machines`) and an exhaustive search over the spec's
states (`conformance.exhaustive`) give a target (`impl`, the reference, or `MODULE:FACTORY`)
and `reference` the same commands; a divergence is reported as a minimal or shortest command
sequence. `kafkaspec conformance` runs the suites (`conformance.run`).
"""
