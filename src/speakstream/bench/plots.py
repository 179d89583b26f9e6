"""PNG plots of a benchmark run (matplotlib, no display needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

LANES = {"text_delta": (2, "tab:gray", "|"), "chunk_sent": (1, "tab:blue", "v"), "audio_chunk": (0, "tab:green", "s")}


def timeline(agent: dict[str, Any], path: Path) -> Path:
    """Text deltas, chunks sent and audio arriving, bidi above batch, on one time axis."""
    source = agent.get("replay") or next(iter(agent.values()))
    fig, axes = plt.subplots(2, 1, figsize=(11, 4.8), sharex=True)
    for ax, mode in zip(axes, ("bidi", "batch"), strict=True):
        events = source["timeline"][mode]
        for kind, (y, colour, marker) in LANES.items():
            times = [e["t"] for e in events if e["type"] == kind]
            ax.scatter(
                times,
                [y] * len(times),
                c=colour,
                marker=marker,
                s=30 if kind != "text_delta" else 14,
                label=kind.replace("_", " "),
            )
        first = next((e["t"] for e in events if e["type"] == "audio_chunk"), None)
        if first is not None:
            ax.axvline(first, color="tab:red", linestyle="--", linewidth=1)
            ax.annotate(f"first audio {first * 1000:.0f} ms", (first, 2.4), color="tab:red", fontsize=9)
        ax.set_yticks([0, 1, 2], ["audio", "chunks", "text"])
        ax.set_ylim(-0.6, 2.8)
        ax.set_title(f"{mode}", loc="left", fontsize=10)
        ax.grid(axis="x", alpha=0.3)
    axes[0].legend(loc="lower right", fontsize=8, ncols=3)
    axes[1].set_xlabel("seconds since agent_start")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def ttfa_bars(groups: dict[str, dict[str, float]], path: Path) -> Path:
    """One panel per experiment: mean time to first audio of each variant."""
    fig, axes = plt.subplots(1, len(groups), figsize=(4.2 * len(groups), 3.8), squeeze=False)
    for ax, (title, bars) in zip(axes[0], groups.items(), strict=True):
        names, values = list(bars), list(bars.values())
        ax.barh(names, values, color=["tab:green" if "speakstream" in n or n == "bidi" else "tab:gray" for n in names])
        for y, value in enumerate(values):
            ax.annotate(f"{value:.0f}", (value, y), xytext=(3, 0), textcoords="offset points", va="center", fontsize=8)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("first audio, ms")
        ax.invert_yaxis()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def concurrency(result: dict[str, Any], path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for mode, rows in result["modes"].items():
        sessions = [r["sessions"] for r in rows]
        ax.plot(sessions, [r["ttfa_ms"].get("p95") for r in rows], marker="o", label=f"p95, {mode}")
        ax.plot(sessions, [r["ttfa_ms"].get("p50") for r in rows], marker="o", linestyle="--", label=f"p50, {mode}")
    ax.axhline(1000, color="tab:red", linewidth=1, linestyle=":")
    ax.set_xlabel("simultaneous sessions")
    ax.set_ylabel("first audio, ms")
    ax.set_xscale("log", base=2)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def make_all(results: dict[str, Any], out: Path) -> dict[str, str]:
    """Every plot the results allow; returns {name: file name}."""
    made: dict[str, str] = {}
    if "agent" in results:
        made["timeline"] = timeline(results["agent"], out / "timeline.png").name
    groups: dict[str, dict[str, float]] = {}
    if "isolated" in results:
        groups["isolated (4 sentences)"] = {n: r["ttfa_ms"]["mean"] for n, r in results["isolated"]["variants"].items()}
    if "agent" in results:
        for source, r in results["agent"].items():
            groups[f"agent ({source})"] = {m: r[m]["mean"] for m in ("bidi", "batch")}
    if "peers" in results:
        for label, r in results["peers"].items():
            groups[f"peers ({label})"] = {
                n: r[n]["ttfa_ms"]["mean"] for n in ("kokoro-onnx create_stream", "speakstream")
            }
    if groups:
        made["ttfa"] = ttfa_bars(groups, out / "ttfa.png").name
    if "concurrency" in results:
        made["concurrency"] = concurrency(results["concurrency"], out / "concurrency.png").name
    if results.get("streaming", {}).get("fidelity", {}).get("image"):
        made["seam"] = results["streaming"]["fidelity"]["image"]  # drawn by the experiment itself
    return made
