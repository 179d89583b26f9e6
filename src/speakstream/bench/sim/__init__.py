"""A simulator of the engine's time: the real scheduler, planner, admission and replies run on a
virtual clock against an engine whose windows cost what a calibrated model says (``cost``)."""
