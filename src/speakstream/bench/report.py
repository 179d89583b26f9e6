"""results.json, report.md, and the measured part of docs/performance.md, all from one run."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from types import ModuleType
from typing import Any

from speakstream.bench.tables import table

START, END = "<!-- performance:start -->", "<!-- performance:end -->"


def write(out: Path, run: dict[str, Any], modules: dict[str, ModuleType], images: dict[str, str]) -> Path:
    (out / "results.json").write_text(json.dumps(run, indent=2, default=str) + "\n", encoding="utf-8")
    path = out / "report.md"
    path.write_text(render(run, modules, images, image_dir=""), encoding="utf-8")
    return path


def merged(earlier: dict[str, Any] | None, run: dict[str, Any], order: list[str]) -> dict[str, Any]:
    """``run`` over the ``earlier`` run in the same folder when it ran some experiments only, on the
    same machine: the experiments it did not run are kept, each with the date it was measured
    (``dates``), so rerunning one experiment refreshes its tables and leaves the others'."""
    if earlier is None or run["quick"] or earlier.get("quick"):
        return run
    if set(earlier["experiments"]) <= set(run["experiments"]):
        return run
    same = ("cpu", "cores", "onnxruntime", "lanes")
    if any(earlier["device"].get(k) != run["device"].get(k) for k in same):
        return run
    dates = {n: earlier.get("dates", {}).get(n, earlier["date"]) for n in earlier["experiments"]}
    dates.update({n: run["date"] for n in run["experiments"]})
    names = [n for n in order if n in dates]
    both = {**earlier["experiments"], **run["experiments"]}
    return {
        **run,
        "command": earlier["command"],
        "rerun_command": run["command"],
        "date": min(dates.values()),
        "dates": {n: dates[n] for n in names},
        "experiments": {n: both[n] for n in names},
        "seconds": {n: {**earlier["seconds"], **run["seconds"]}.get(n) for n in names},
        "engine_rtf": {n: {**earlier.get("engine_rtf", {}), **run["engine_rtf"]}.get(n) for n in names},
    }


def render(run: dict[str, Any], modules: dict[str, ModuleType], images: dict[str, str], image_dir: str) -> str:
    device = run["device"]
    lines = [
        f"Measured with `{run['command']}` on {run['date']}: {device.get('cpu')}"
        f"{f' ({vector})' if (vector := device.get('vector')) else ''}, {device.get('cores')} cores, "
        f"onnxruntime {device.get('onnxruntime')} on {', '.join(device.get('providers', []))} "
        f"(device: {device.get('device')}, graph: {device.get('graph')}"
        f"{f', decoder: {decoder}' if (decoder := device.get('decoder')) else ''}"
        f", engine lanes: {device.get('lanes', 1)})"
        f"{' (--quick)' if run['quick'] else ''}. {_provenance(run)}\n",
        _experiments(run),
    ]
    for name, result in run["experiments"].items():
        module = modules[name]
        lines.append(f"\n## {module.TITLE}\n")
        if "error" in result:
            lines.append(f"Failed: {result['error']}\n")
            continue
        lines.append(module.markdown(result))
    for title, key in (
        ("Agent timeline (bidi above, batch below)", "timeline"),
        ("Time to first audio", "ttfa"),
        ("Concurrency", "concurrency"),
        ("Spectrogram around a seam: whole decode above, windowed below", "seam"),
    ):
        if key in images:
            lines.append(f"\n![{title}]({os.path.join(image_dir, images[key]) if image_dir else images[key]})\n")
    return "\n".join(lines)


def _provenance(run: dict[str, Any]) -> str:
    if run.get("dates"):
        return (
            f"Experiments rerun since (`{run.get('rerun_command', 'speakstream bench')}`) show their date in"
            " the first table; side-by-side numbers were measured interleaved within each run."
        )
    return "Every figure below comes from that one run; side-by-side numbers were measured interleaved."


def _experiments(run: dict[str, Any]) -> str:
    """How long each experiment ran, and how fast the engine was just before it (``probe``; a run
    from before the probe has no such column)."""
    rtf, dates = run.get("engine_rtf", {}), run.get("dates", {})
    headers = ["experiment", "seconds"] + (["engine RTF just before (a fixed sentence, decoded whole)"] if rtf else [])
    headers += ["measured"] if dates else []
    rows = [
        [n, run["seconds"][n]] + ([rtf.get(n, "")] if rtf else []) + ([dates[n]] if dates else [])
        for n in run["experiments"]
    ]
    return table(headers, rows)


def update_readme(readme: Path, report: str, *, start: str = START, end: str = END) -> None:
    """Replace what lies between the ``start`` and ``end`` markers of ``readme`` with ``report``."""
    text = readme.read_text(encoding="utf-8")
    if start not in text or end not in text:
        raise ValueError(f"{readme} has no {start} ... {end} markers")
    pattern = re.compile(re.escape(start) + ".*?" + re.escape(end), re.DOTALL)
    readme.write_text(pattern.sub(lambda _: f"{start}\n{report}\n{end}", text), encoding="utf-8")
