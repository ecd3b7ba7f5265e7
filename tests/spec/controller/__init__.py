"""Tests of the controller specs (`spec.controller`)."""
