"""The ``mixed`` and ``int8`` decoders: the rewrite on a small graph, the derived decoders on the real model."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from speakstream.bench.spectra import logmel_distance
from speakstream.engine.kokoro import KokoroEngine
from speakstream.engine.model import quantize
from speakstream.engine.model.feeds import decoder_feed, front_feed

CONV = quantize.QUANTIZED[1] + "convs1.0/Conv_speakstream"
KEPT = f"{quantize.GENERATOR}/resblocks.3/convs1.0/Conv_speakstream"


def two_convs(rng: np.random.Generator) -> onnx.ModelProto:
    """x -> a Conv under a quantised prefix -> a Conv under a float one -> y (2-D, as lifted)."""
    nodes, inits = [], []
    for name, x, y in ((CONV, "x", "h"), (KEPT, "h", "y")):
        weights = (rng.standard_normal((16, 16, 1, 7)) * 0.1).astype(np.float32)
        inits += [
            numpy_helper.from_array(weights, name + "_w"),
            numpy_helper.from_array(rng.standard_normal(16).astype(np.float32), name + "_b"),
        ]
        nodes.append(
            helper.make_node(
                "Conv", [x, name + "_w", name + "_b"], [y], name=name, pads=[0, 3, 0, 3], kernel_shape=[1, 7]
            )
        )
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 1, 200])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def session(model: onnx.ModelProto) -> Any:
    import onnxruntime as ort

    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def test_only_convolutions_under_the_quantised_prefixes_become_int8() -> None:
    rng = np.random.default_rng(0)
    model = two_convs(rng)
    feeds = [{"x": rng.standard_normal((1, 16, 1, 200)).astype(np.float32)} for _ in range(3)]
    ranges = quantize.output_ranges(session(quantize.calibration_graph(model)), feeds)
    assert list(ranges) == ["h"]
    mixed = quantize.quantize(onnx.load_from_string(model.SerializeToString()), ranges)
    ops = {n.name: n.op_type for n in mixed.graph.node if n.name}
    assert ops == {CONV + "_int8": "QLinearConv", KEPT: "Conv"}
    for feed in feeds:
        want, got = session(model).run(None, feed)[0], session(mixed).run(None, feed)[0]
        assert np.abs(got - want).mean() < 0.03 * np.abs(want).mean()  # 8-bit input, weights and output


def test_a_convolution_without_a_calibrated_range_is_refused() -> None:
    with pytest.raises(ValueError, match="no calibrated range"):
        quantize.quantize(two_convs(np.random.default_rng(1)), {})


@pytest.mark.model
@pytest.mark.slow
def test_the_mixed_decoder_is_nearer_the_float_one_than_the_int8_export(kokoro: KokoroEngine) -> None:
    """Both decoders on the same front output; the model's own int8 graph on the same tokens."""
    assets = kokoro.assets
    load = _cpu_sessions(
        front=assets.split("front"),
        float=assets.decoder("float"),
        mixed=assets.decoder("mixed"),
        int8=assets.graph("timed"),
    )
    mixed_model = onnx.load(str(assets.decoder("mixed")), load_external_data=False)
    assert sum(n.op_type == "QLinearConv" for n in mixed_model.graph.node) == 30
    assert not quantize.targets(mixed_model)
    ours, export = [], []
    for text, voice in (
        ("The quick brown fox jumps over the lazy dog.", "bm_george"),
        ("Would you like a receipt?", "af_bella"),
    ):
        tokens = kokoro.phonemizer.phonemize(text).tokens
        style = kokoro.voice_bank.style(voice, len(tokens))
        feed = front_feed(tokens, style, 1.0)
        _, *outputs = load["front"].run(None, feed)
        inputs = decoder_feed(outputs, style, np.zeros((1, 1, 9), np.float32))
        reference = load["float"].run(None, inputs)[0].ravel()
        ours.append(logmel_distance(reference, load["mixed"].run(None, inputs)[0].ravel()))
        export.append(logmel_distance(reference, load["int8"].run(["audio"], feed)[0].ravel()))
    assert np.mean(ours) < np.mean(export)  # measured 0.75 dB against 0.96 over six utterances


@pytest.mark.model
@pytest.mark.slow
def test_the_int8_decoder_quantises_the_second_stage_too_and_stays_near_the_float_one(kokoro: KokoroEngine) -> None:
    """The crowded openings' decoder (``EngineConfig.crowded_decoder``): every convolution the
    ``mixed`` one quantises and the second stage's, its audio a little further from the float
    decoder's than the ``mixed`` one's (the precision bench: 2.54 dB against 0.74 over 21 utterances)."""
    assets = kokoro.assets
    models = {name: onnx.load(str(assets.decoder(name)), load_external_data=False) for name in ("mixed", "int8")}
    count = {name: sum(n.op_type == "QLinearConv" for n in m.graph.node) for name, m in models.items()}
    assert count["int8"] > count["mixed"] == 30
    assert not quantize.targets(models["int8"], quantize.PRECISIONS["int8"])
    load = _cpu_sessions(
        front=assets.split("front"),
        float=assets.decoder("float"),
        int8=assets.decoder("int8"),
        mixed=assets.decoder("mixed"),
    )
    tokens = kokoro.phonemizer.phonemize("Would you like a receipt?").tokens
    style = kokoro.voice_bank.style("af_bella", len(tokens))
    _, *outputs = load["front"].run(None, front_feed(tokens, style, 1.0))
    inputs = decoder_feed(outputs, style, np.zeros((1, 1, 9), np.float32))
    reference = load["float"].run(None, inputs)[0].ravel()
    distance = {name: logmel_distance(reference, load[name].run(None, inputs)[0].ravel()) for name in ("mixed", "int8")}
    assert distance["mixed"] < distance["int8"] < 4.0, distance


def _cpu_sessions(**paths: Any) -> dict[str, Any]:
    import onnxruntime as ort

    return {name: ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]) for name, path in paths.items()}
