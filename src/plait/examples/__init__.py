"""Runnable examples: ``python -m plait.examples.digits``."""
