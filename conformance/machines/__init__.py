"""Hypothesis state machines that drive a system under test beside the reference."""
