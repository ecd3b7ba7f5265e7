"""Fuzzing `kafkaspec verify` with malformed histories (strategies, harness, tests)."""
