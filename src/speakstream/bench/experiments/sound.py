"""Sound: replies streamed as an agent streams them (bidi, replay at 60 tokens/s) against the same
text synthesised whole: the silence at each join, each chunk's level, the pitch step across each
join, DNSMOS and PLCMOS of what the listener heard (gaps included) and WER; alone and 4 at once,
for three chunk policies, with windows and without; then a long text through the OpenAI route."""

from __future__ import annotations

import asyncio
import itertools
import statistics
from dataclasses import dataclass
from typing import Any

import numpy as np

from speakstream.agent.events import AgentDone, AgentError, AudioChunkEvent, WordTimestampsEvent
from speakstream.agent.sources import ReplaySource
from speakstream.agent.voice_agent import VoiceAgent
from speakstream.bench import quality, sound
from speakstream.bench.asr import recognizer, wer
from speakstream.bench.context import BenchContext
from speakstream.bench.experiments.longform import long_form
from speakstream.bench.player import heard, play
from speakstream.bench.tables import table
from speakstream.client import SpeechSession
from speakstream.engine.kokoro import KokoroEngine
from speakstream.engine.windows.edges import EdgePolicy
from speakstream.engine.windows.policy import WindowPolicy
from speakstream.text import ChunkPolicy
from speakstream.types import SAMPLE_RATE, pcm16_to_float

SCORES = ("dnsmos", "p808", "plcmos", "wer")
RETRY_S = 2.0
PATIENCE_S = 120.0
NAME = "sound"
TITLE = "Sound: a streamed reply against the same text synthesised whole"
REPLIES = ("long", "weather", "refund", "tech", "doctor", "ellipsis")
CHUNKINGS = {
    "clause first (default)": ChunkPolicy(),
    "clause or phrase first": ChunkPolicy(first_phrase_words=5),
    "whole sentences": ChunkPolicy(first_clause=False, schedule=()),
}
BEFORE = EdgePolicy(sentence_tail_s=0.4, clause_tail_s=0.12, other_tail_s=0.05, final_lengthening_s=0.0)
"""The edges before the joins were measured one by one: tails kept from the last word's durations'
end, where the model's final lengthening is mostly silence."""


@dataclass(frozen=True, slots=True)
class Arm:
    chunking: str
    sessions: int = 1
    windows: bool = True
    edges: EdgePolicy | None = None
    """The engine's edge policy for this arm (None: the engine's own)."""

    @property
    def label(self) -> str:
        extra = "" if self.windows else ", no windows"
        extra += ", tails from the words' durations" if self.edges else ""
        return f"{self.chunking}{extra}, {self.sessions} at once"


ARMS = (
    *(Arm(name) for name in CHUNKINGS),
    Arm("clause first (default)", windows=False),
    Arm("clause first (default)", edges=BEFORE),
    Arm("clause first (default)", sessions=4),
    Arm("whole sentences", sessions=4),
)


async def run(ctx: BenchContext) -> dict[str, Any]:
    replies = ("weather",) if ctx.quick else REPLIES
    arms = ARMS[:1] if ctx.quick else ARMS
    wholes: dict[str, sound.Rendering] = {}
    rows = []
    for arm in arms:
        if (not arm.windows or arm.edges) and ctx.runtime is None:
            continue  # a remote server's engine cannot be switched from here
        try:
            listeners = await _arm(ctx, arm, replies)
        except RuntimeError as exc:  # one arm's failure leaves the others' figures
            rows.append({"arm": arm.label, "error": str(exc)})
            continue
        scored = [await asyncio.to_thread(_score, ctx, listener, wholes) for listener in listeners]
        rows.append({"arm": arm.label, **_pooled(scored)})
        ctx.say(f"sound: {arm.label}")
    references = [await asyncio.to_thread(_reference, rendering, text) for text, rendering in wholes.items()]
    result: dict[str, Any] = {"replies": list(replies), "arms": rows, "whole": _mean_scores(references)}
    result["long_form"] = await long_form(ctx, minutes=0.5 if ctx.quick else None)
    return result


def _variant(ctx: BenchContext, arm: Arm) -> KokoroEngine | None:
    """The in-process engine configured with this arm's windows and edges (None: as it is)."""
    if ctx.runtime is None or (arm.windows and arm.edges is None):
        return None
    engine: KokoroEngine = ctx.runtime.engine
    return engine.configured(None if arm.windows else WindowPolicy.whole(), arm.edges)


async def _arm(ctx: BenchContext, arm: Arm, replies: tuple[str, ...]) -> list[dict[str, Any]]:
    """Every reply streamed once, ``arm.sessions`` at a time, each on its own session."""
    listeners: list[dict[str, Any]] = []
    async with ctx.configured(engine=_variant(ctx, arm)):
        for start in range(0, len(replies), arm.sessions):
            group = replies[start : start + arm.sessions]
            listeners += await asyncio.gather(*(_stream(ctx, reply, CHUNKINGS[arm.chunking]) for reply in group))
    return listeners


async def _stream(ctx: BenchContext, reply: str, policy: ChunkPolicy) -> dict[str, Any]:
    """One reply streamed by the agent; refused as over capacity (the others' listeners still
    playing), asked again every ``RETRY_S`` (as a client would) for up to ``PATIENCE_S``."""
    for attempt in range(int(PATIENCE_S / RETRY_S) + 1):
        try:
            return {**await _streamed(ctx, reply, policy), "retries": attempt}
        except Refused:
            await asyncio.sleep(RETRY_S)
    raise RuntimeError(f"{reply}: refused for {PATIENCE_S:g} s")


class Refused(Exception):
    """The server was at its capacity (``overloaded``)."""


async def _streamed(ctx: BenchContext, reply: str, policy: ChunkPolicy) -> dict[str, Any]:
    """One reply streamed by the agent: its audio as heard, its chunks' words and texts."""
    pieces: list[tuple[float, np.ndarray]] = []
    chunks: list[list[dict[str, Any]]] = []
    texts: list[str] = []
    async with SpeechSession(ctx.ws_url) as session:
        agent = VoiceAgent(ReplaySource(reply_id=reply), session, policy=policy)
        async for event in agent.run("Tell me."):
            if isinstance(event, AudioChunkEvent):
                pieces.append((event.t, pcm16_to_float(event.audio)))
            elif isinstance(event, WordTimestampsEvent):
                chunks.append(event.words)
                texts.append(event.text.strip())
            elif isinstance(event, AgentError):
                if event.code == "overloaded":
                    raise Refused(event.message)
                raise RuntimeError(f"{reply}: {event.code}: {event.message}")
            elif isinstance(event, AgentDone):
                break
    samples = np.concatenate([s for _, s in pieces])
    playback = play([(t, len(s) / SAMPLE_RATE) for t, s in pieces], 0.0)
    return {
        "reply": reply,
        "text": " ".join(texts),
        "streamed": sound.rendering(samples, SAMPLE_RATE, chunks),
        "heard": heard(pieces),
        "playback": playback,
        "ends": [_mark(text) for text in texts],
    }


def _mark(text: str) -> str:
    end = text.rstrip(" \"'”’)]»")[-1:]
    return "sentence" if end in ".!?…" else "clause" if end in ",;:—–" else "none"


def _whole(ctx: BenchContext, text: str, wholes: dict[str, sound.Rendering]) -> sound.Rendering:
    """``text`` synthesised whole (one chunk, decoded in one window per phoneme window), once; its
    words grouped by phoneme window, since between two the pause is the engine's, not the model's."""
    if text not in wholes:
        engine = ctx.engine_source()
        chunk = engine.synthesize(text)
        words = [{"word": w.word, "start_s": w.start_s, "end_s": w.end_s} for w in chunk.words]
        sizes = [len(part.words) for part in engine.phoneme_windows(text, engine.check_voice("af_heart").speaks)]
        ends = np.cumsum([0, *sizes]) if sum(sizes) == len(words) else np.array([0, len(words)])
        wholes[text] = sound.rendering(
            chunk.samples, chunk.sample_rate, [words[a:b] for a, b in itertools.pairwise(ends)]
        )
    return wholes[text]


def _score(ctx: BenchContext, listener: dict[str, Any], wholes: dict[str, sound.Rendering]) -> dict[str, Any]:
    streamed, whole = listener["streamed"], _whole(ctx, listener["text"], wholes)
    joins = sound.joins(streamed, whole)
    levels = sound.chunk_levels(streamed, whole)
    kinds: dict[str, list[sound.Join]] = {"sentence": [], "clause": [], "none": []}
    for join in joins:
        kinds[listener["ends"][join.chunk]].append(join)
    return {
        "retries": listener["retries"],
        "ttfa_ms": listener["playback"].ttfa_s * 1000,
        "gap_ms": listener["playback"].stall_s * 1000,
        "joins": joins,
        "kinds": kinds,
        "level_spread_db": sound.spread([level.level_diff_db for level in levels]),
        "lufs": [level.lufs_diff for level in levels if level.lufs_diff is not None],
        **_reference(listener["heard"], listener["text"]),
    }


def _reference(samples: Any, text: str) -> dict[str, Any]:
    """What every rendering is scored on alone: DNSMOS, PLCMOS and Whisper's word error rate."""
    audio = samples.samples if isinstance(samples, sound.Rendering) else samples
    mos = quality.dnsmos(audio, SAMPLE_RATE)
    return {
        "dnsmos": mos["ovrl"],
        "p808": mos["p808"],
        "plcmos": quality.plcmos(audio, SAMPLE_RATE),
        "wer": wer(text, recognizer().transcribe(audio, SAMPLE_RATE).text),
    }


def _mean_scores(scores: list[dict[str, Any]]) -> dict[str, float]:
    return {key: round(statistics.fmean(s[key] for s in scores), 3) for key in SCORES} if scores else {}


def _pooled(scored: list[dict[str, Any]]) -> dict[str, Any]:
    """An arm's listeners pooled: silence at joins by mark, level spread, pitch steps, scores."""
    joins = [j for s in scored for j in s["joins"]]
    pitched = [j for j in joins if j.pitch_step is not None and j.whole_pitch_step is not None]
    row: dict[str, Any] = {
        "listeners": len(scored),
        "retried": sum(1 for s in scored if s.get("retries")),
        "ttfa_p95_ms": round(max(s["ttfa_ms"] for s in scored), 1) if len(scored) < 20 else None,
        "ttfa_mean_ms": round(statistics.fmean(s["ttfa_ms"] for s in scored), 1),
        "gap_ms_mean": round(statistics.fmean(s["gap_ms"] for s in scored), 1),
        "joins": len(joins),
        "join_diff_ms_max": round(max((abs(j.silence_diff_s) for j in joins), default=0.0) * 1000),
        "level_spread_db_max": round(max(s["level_spread_db"] for s in scored), 2),
        "lufs_diff_max": round(max((abs(v) for s in scored for v in s["lufs"]), default=0.0), 2),
        "pitch_step_st": _mean_abs([j.pitch_step for j in pitched]),
        "whole_pitch_step_st": _mean_abs([j.whole_pitch_step for j in pitched]),
        "pitched_joins": len(pitched),
        **_mean_scores(scored),
    }
    for kind in ("sentence", "clause", "none"):
        at = [j for s in scored for j in s["kinds"][kind]]
        row[f"{kind}_ms"] = _silences(at)
    return row


def _mean_abs(values: list[float | None]) -> float | None:
    present = [abs(v) for v in values if v is not None]
    return round(statistics.fmean(present), 2) if present else None


def _silences(joins: list[sound.Join]) -> dict[str, Any]:
    """Mean silence streamed and whole, and the largest difference, in ms, at joins of one kind."""
    if not joins:
        return {"n": 0}
    return {
        "n": len(joins),
        "streamed": round(statistics.fmean(j.silence_s for j in joins) * 1000),
        "whole": round(statistics.fmean(j.whole_silence_s for j in joins) * 1000),
        "diff_max": round(max((j.silence_diff_s for j in joins), key=abs) * 1000),
    }


def markdown(result: dict[str, Any]) -> str:
    rows = result["arms"]
    joins = table(
        ["arm", "listeners", "first audio mean / max ms", "gaps mean ms"]
        + [f"{k} joins: n, silence streamed / whole ms, largest diff" for k in ("sentence", "clause", "none")],
        [
            [r["arm"], _listeners(r), f"{r['ttfa_mean_ms']:.0f} / {r['ttfa_p95_ms']:.0f}", r["gap_ms_mean"]]
            + [_kind_cell(r[f"{k}_ms"]) for k in ("sentence", "clause", "none")]
            for r in rows
            if "error" not in r
        ],
    )
    failed = "".join(f"- {r['arm']}: {r['error']}\n" for r in rows if "error" in r)
    whole = result["whole"]
    headers = ["arm", "level spread dB (max)", "LUFS diff (max)", "pitch step at joins, st (whole)"]
    scores = table(
        [*headers, "DNSMOS", "P.808", "PLCMOS", "WER"],
        [
            [
                r["arm"],
                r["level_spread_db_max"],
                r["lufs_diff_max"],
                f"{r['pitch_step_st']} ({r['whole_pitch_step_st']}), {r['pitched_joins']} joins",
                r["dnsmos"],
                r["p808"],
                r["plcmos"],
                r["wer"],
            ]
            for r in rows
        ]
        + [
            [
                "the same texts synthesised whole",
                "",
                "",
                "",
                *(whole.get(k) for k in ("dnsmos", "p808", "plcmos", "wer")),
            ]
        ],
    )
    intro = f"Replies: {', '.join(result['replies'])}.\n\n"
    return f"{intro}{joins}\n{failed}{scores}\n{_long_form_line(result['long_form'])}"


def _listeners(row: dict[str, Any]) -> str:
    retried = row.get("retried")
    return f"{row['listeners']} ({retried} refused at first)" if retried else str(row["listeners"])


def _kind_cell(cell: dict[str, Any]) -> str:
    if not cell["n"]:
        return "-"
    return f"{cell['n']}: {cell['streamed']} / {cell['whole']}, {cell['diff_max']:+d}"


def _long_form_line(row: dict[str, Any]) -> str:
    memory = row.get("rss_growth_mb")
    grown = f", memory grew {memory:.0f} MB from a quarter of the way to the end" if memory is not None else ""
    return (
        f"Long form ({row['words']} words, {row['audio_s'] / 60:.1f} min of audio through `/v1/audio/speech`): "
        f"WER {row['wer']:.3f}, {row['audio_per_wall_s']:.2f} audio seconds a second{grown}.\n"
    )
