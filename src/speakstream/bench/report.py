"""results.json, report.md, and the README's Performance section, all from one run."""

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


def render(run: dict[str, Any], modules: dict[str, ModuleType], images: dict[str, str], image_dir: str) -> str:
    device = run["device"]
    lines = [
        f"Measured with `{run['command']}` on {run['date']}: {device.get('cpu')}"
        f"{f' ({vector})' if (vector := device.get('vector')) else ''}, {device.get('cores')} cores, "
        f"onnxruntime {device.get('onnxruntime')} on {', '.join(device.get('providers', []))} "
        f"(device: {device.get('device')}, graph: {device.get('graph')}"
        f"{f', decoder: {decoder}' if (decoder := device.get('decoder')) else ''}"
        f", engine lanes: {device.get('lanes', 1)})"
        f"{' (--quick)' if run['quick'] else ''}. "
        f"Every figure below comes from that one run; side-by-side numbers were measured interleaved.\n",
        _experiments(run),
    ]
    for name, result in run["experiments"].items():
        module = modules[name]
        lines.append(f"\n### {module.TITLE}\n")
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


def _experiments(run: dict[str, Any]) -> str:
    """How long each experiment ran, and how fast the engine was just before it (``probe``; a run
    from before the probe has no such column)."""
    rtf = run.get("engine_rtf", {})
    headers = ["experiment", "seconds"] + (["engine RTF just before (a fixed sentence, decoded whole)"] if rtf else [])
    rows = [[n, run["seconds"][n]] + ([rtf.get(n, "")] if rtf else []) for n in run["experiments"]]
    return table(headers, rows)


def update_readme(readme: Path, report: str, *, start: str = START, end: str = END) -> None:
    """Replace what lies between the ``start`` and ``end`` markers of ``readme`` with ``report``."""
    text = readme.read_text(encoding="utf-8")
    if start not in text or end not in text:
        raise ValueError(f"{readme} has no {start} ... {end} markers")
    pattern = re.compile(re.escape(start) + ".*?" + re.escape(end), re.DOTALL)
    readme.write_text(pattern.sub(lambda _: f"{start}\n{report}\n{end}", text), encoding="utf-8")
