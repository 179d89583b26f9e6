"""Reliability suites: load, overload, faults, soak and live fuzzing against real servers.

``speakstream loadtest`` runs them and prints (and can write into docs/reliability.md) a table of figures,
each with the command that produced it; the test suite runs the same code in a bounded form.
"""
