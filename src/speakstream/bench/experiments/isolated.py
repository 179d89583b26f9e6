"""The isolated time-to-first-audio experiment on the four-sentence reply, over one session:
the whole text as one message (synthesised whole, as the reference server does), the first
sentence only, our chunker (first clause), and the four sentences sent one by one."""

from __future__ import annotations

from typing import Any

from speakstream.bench.context import BenchContext
from speakstream.bench.speech import speak_many_timed, speak_timed
from speakstream.bench.stats import summary
from speakstream.bench.tables import table
from speakstream.client import SpeechSession
from speakstream.data import bench_text
from speakstream.text import split_sentences

NAME = "isolated"
TITLE = "Isolated: time to first audio for one four-sentence reply"
WHOLE, FIRST, OURS, ONE_BY_ONE = (
    "whole text, one message",
    "first sentence only",
    "speakstream chunker",
    "sentences one by one",
)


async def run(ctx: BenchContext) -> dict[str, Any]:
    text = ctx.sized(bench_text(), quick_sentences=2)
    sentences = [s.text for s in split_sentences(text)]
    runs: dict[str, list[dict[str, Any]]] = {v: [] for v in (WHOLE, FIRST, OURS, ONE_BY_ONE)}
    trials = ctx.trials(5, 1)
    async with SpeechSession(ctx.ws_url) as session:
        await speak_timed(session, "Warm up.")
        for trial in range(trials):
            variants = list(runs) if trial % 2 == 0 else list(reversed(runs))
            for variant in variants:
                if variant == ONE_BY_ONE:
                    _, playback = await speak_many_timed(session, sentences, chunking="none")
                else:
                    spoken = sentences[0] if variant == FIRST else text
                    _, playback = await speak_timed(session, spoken, chunking="auto" if variant == OURS else "none")
                runs[variant].append(playback.to_dict())
            ctx.say(f"isolated trial {trial + 1}/{trials}")
    result: dict[str, dict[str, Any]] = {
        v: {
            "ttfa_ms": summary([r["ttfa_ms"] for r in rs]),
            "stall_ms": summary([r["stall_ms"] for r in rs]),
            "stalls": summary([r["stalls"] for r in rs]),
        }
        for v, rs in runs.items()
    }
    whole = result[WHOLE]["ttfa_ms"]["mean"]
    for row in result.values():
        row["improvement"] = round(1 - row["ttfa_ms"]["mean"] / whole, 3)
    return {"text_chars": len(text), "variants": result}


def markdown(result: dict[str, Any]) -> str:
    rows = []
    for name, r in result["variants"].items():
        t = r["ttfa_ms"]
        rows.append(
            [name, t["mean"], t["p50"], t["p95"], t["n"], f"{100 * r['improvement']:.1f}%", r["stall_ms"]["mean"]]
        )
    headers = [
        "what is sent",
        "first audio mean ms",
        "p50 ms",
        "p95 ms",
        "trials",
        "vs whole text",
        "playback stall ms (whole reply)",
    ]
    return (
        f"Reply of {result['text_chars']} characters (`bench_four_sentences.txt`); published on a GPU: "
        f"329.3 -> 156.7 ms (52.4%).\n\n" + table(headers, rows)
    )


def ttfa_bars(result: dict[str, Any]) -> dict[str, float]:
    return {name: r["ttfa_ms"]["mean"] for name, r in result["variants"].items()}
