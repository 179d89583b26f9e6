"""Benchmarks and the measurement helpers they share (speech recognition, players, timelines)."""
