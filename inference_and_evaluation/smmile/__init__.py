"""smmile: the SMMILE benchmark harness (inference, scoring, statistics, reports)."""

__version__ = "0.1.0"
