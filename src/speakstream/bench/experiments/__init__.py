"""One module per experiment: ``NAME``, ``TITLE``, ``async run(ctx) -> dict``, ``markdown(result)``
and optionally ``plots(result, out_dir) -> list[str]``."""

from __future__ import annotations

from types import ModuleType

from speakstream.bench.experiments import (
    accuracy,
    agent,
    cache,
    concurrency,
    dialects,
    engine,
    formats,
    isolated,
    languages,
    loaded,
    peers,
    precision,
    sound,
    stalls,
    streaming,
    text,
)

EXPERIMENTS: dict[str, ModuleType] = {
    m.NAME: m
    for m in (
        engine,
        streaming,
        precision,
        accuracy,
        languages,
        text,
        isolated,
        agent,
        stalls,
        sound,
        formats,
        cache,
        concurrency,
        loaded,
        peers,
        dialects,
    )
}
