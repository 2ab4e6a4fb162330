"""Analyses the original code never shipped: dataset-variant comparisons and judge reliability."""
