"""Conformance suite tests."""
