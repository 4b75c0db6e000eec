"""Hypothesis strategies for legal and deliberately illegal instructions and programs."""
