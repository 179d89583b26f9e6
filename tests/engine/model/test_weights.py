"""Shared weights against the real model: one file for every part, and the same numbers out as a
session that holds its own copy."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from speakstream.engine.kokoro import KokoroEngine
from speakstream.engine.model.feeds import decoder_feed, front_feed
from speakstream.engine.model.weights import SharedWeights, place

pytestmark = pytest.mark.model


def _weights(kokoro: KokoroEngine) -> SharedWeights:
    assert kokoro.runner is not None and kokoro.runner.model.weights is not None, "a CPU engine shares its weights"
    return kokoro.runner.model.weights


def test_the_parts_read_one_file_and_the_decoders_share_most_of_it(kokoro: KokoroEngine) -> None:
    weights = _weights(kokoro)
    table = json.loads((weights.directory / "weights.json").read_text())
    asked = sum(length for entries in table.values() for _, _, length, _, _ in entries)
    stored = (weights.directory / "weights.bin").stat().st_size
    decoders = [part for part in table if part != "front"]
    assert len(decoders) == 2, "the main and the crowded decoder"
    assert stored < 0.7 * asked  # what the decoders have in common is stored once
    for part in table:  # the graphs hold no large weights of their own
        assert weights.graph(part).stat().st_size < 0.05 * stored


def test_a_session_on_shared_weights_computes_what_one_of_its_own_does(kokoro: KokoroEngine) -> None:
    """The front and the main decoder, each against a session loading its part's graph as shipped."""
    assert kokoro.runner is not None
    model, weights = kokoro.runner.model, _weights(kokoro)
    tokens = tuple(
        kokoro.phoneme_windows("Shared weights sound the same.", kokoro.check_voice("af_heart").speaks)[0].tokens
    )
    style = kokoro.voice_bank.style("af_heart", len(tokens))
    own_front = ort.InferenceSession(str(weights.sources["front"]), providers=["CPUExecutionProvider"])
    feed = front_feed(tokens, style, 1.0)
    shared_out = model.front.wide.run(None, feed)
    own_out = own_front.run(None, feed)
    for shared, own in zip(shared_out, own_out, strict=True):
        np.testing.assert_allclose(shared, own, rtol=1e-3, atol=1e-3 * float(np.abs(own).max() or 1.0))
    name = next(part for part in weights.sources if part != "front" and part != model.crowded_decoder_name)
    own_decoder = ort.InferenceSession(str(weights.sources[name]), providers=["CPUExecutionProvider"])
    phase = np.zeros((1, 1, len(model.harmonics)), np.float32)
    feed = decoder_feed(tuple(own_out[1:4]), style, phase)
    shared_audio = model.decoder.wide.run(["audio"], feed)[0]
    own_audio = own_decoder.run(["audio"], feed)[0]
    assert shared_audio.shape == own_audio.shape
    error = np.sqrt(np.mean((shared_audio - own_audio) ** 2)) / np.sqrt(np.mean(own_audio**2))
    assert error < 0.01, f"relative RMS difference {error:.4f}"


def test_with_nowhere_to_make_them_the_weights_are_unshared_and_say_why(kokoro: KokoroEngine, tmp_path: Path) -> None:
    """A CPU they were not made for (their folder under a file: found nowhere), and no folder
    that can be written: no error, no half-made folder, each place's reason for the log."""
    (tmp_path / "file").write_text("not a folder")
    sources = _weights(kokoro).sources
    found = place(tmp_path / "file" / "assets", sources, [tmp_path / "file" / "cache"])
    assert (found.weights, found.source) == (None, "unshared")
    assert "assets" in found.detail and "cache" in found.detail
    assert kokoro.weights == "assets"  # the engine of the tests found them beside the assets
