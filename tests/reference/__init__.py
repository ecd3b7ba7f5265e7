"""Tests of the definitional implementations (`reference/`)."""
