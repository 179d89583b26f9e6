"""Fused norms and squares, and the STFT as a convolution: the rewrites on small graphs, and the
derived decoder on the real model."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from speakstream.engine.kokoro import KokoroEngine
from speakstream.engine.model import fusion
from speakstream.engine.model.feeds import decoder_feed, front_feed
from speakstream.engine.model.graph import float_convolutions, split

CHANNELS, STEPS = 8, 50


def adain(prefix: str, x: str, scale: str, shift: str, y: str, *, axis: int = 2) -> list[Any]:
    """An AdaIN as the export writes it: the norm spelled out, then scale and shift."""
    p = prefix
    return [
        helper.make_node("ReduceMean", [x, f"axis{axis}"], [p + "m"], name=p + "ReduceMean"),
        helper.make_node("Sub", [x, p + "m"], [p + "d"], name=p + "Sub"),
        helper.make_node("Mul", [p + "d", p + "d"], [p + "d2"], name=p + "Mul_2"),
        helper.make_node("ReduceMean", [p + "d2", f"axis{axis}"], [p + "v"], name=p + "ReduceMean_2"),
        helper.make_node("Add", [p + "v", "eps"], [p + "ve"], name=p + "Add_2"),
        helper.make_node("Sqrt", [p + "ve"], [p + "s"], name=p + "Sqrt"),
        helper.make_node("Div", [p + "d", p + "s"], [p + "n"], name=p + "Div_1"),
        helper.make_node("Mul", [scale, p + "n"], [p + "sn"], name=p + "Mul_3"),
        helper.make_node("Add", [p + "sn", shift], [y], name=p + "Add_3"),
    ]


def snake(prefix: str, x: str, y: str) -> list[Any]:
    """x + sin(alpha x)^2 / alpha, with the square written as ``Pow``."""
    p = prefix
    return [
        helper.make_node("Mul", ["alpha", x], [p + "ax"], name=p + "Mul_6"),
        helper.make_node("Sin", [p + "ax"], [p + "sin"], name=p + "Sin"),
        helper.make_node("Pow", [p + "sin", "two"], [p + "sq"], name=p + "Pow"),
        helper.make_node("Mul", ["inverse_alpha", p + "sq"], [p + "scaled"], name=p + "Mul_7"),
        helper.make_node("Add", [x, p + "scaled"], [y], name=p + "Add_4"),
    ]


def small_decoder(rng: np.random.Generator) -> onnx.ModelProto:
    """An AdaIN and a Snake under the rewritten prefix, and the same AdaIN outside it; plus a norm
    over the channels (a layer norm, axis 1), which is not an instance norm and must stay."""
    inside, outside = fusion.SCOPE + "adain1.0/", "/encoder/F0.0/norm1/"
    nodes = [
        *adain(inside, "x", "scale", "shift", "h"),
        *snake(fusion.SCOPE + "resblocks.0/", "h", "h2"),
        *adain(outside, "h2", "scale", "shift", "h3"),
        *adain("/decoder/decoder/generator/layer/", "h3", "channel_scale", "channel_shift", "y", axis=1),
    ]
    alpha = rng.uniform(0.5, 2.0, (1, CHANNELS, 1)).astype(np.float32)
    inits = [
        numpy_helper.from_array(np.array([2], dtype=np.int64), "axis2"),
        numpy_helper.from_array(np.array([1], dtype=np.int64), "axis1"),
        numpy_helper.from_array(np.array(1e-5, dtype=np.float32), "eps"),
        numpy_helper.from_array(np.array(2.0, dtype=np.float32), "two"),
        numpy_helper.from_array(alpha, "alpha"),
        numpy_helper.from_array(1.0 / alpha, "inverse_alpha"),
    ]
    inputs = [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, CHANNELS, "steps"]),
        helper.make_tensor_value_info("scale", TensorProto.FLOAT, [1, CHANNELS, 1]),
        helper.make_tensor_value_info("shift", TensorProto.FLOAT, [1, CHANNELS, 1]),
        helper.make_tensor_value_info("channel_scale", TensorProto.FLOAT, [1, 1, STEPS]),
        helper.make_tensor_value_info("channel_shift", TensorProto.FLOAT, [1, 1, STEPS]),
    ]
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def ort_session(model: onnx.ModelProto | str) -> Any:
    import onnxruntime as ort

    source = model if isinstance(model, str) else model.SerializeToString()
    return ort.InferenceSession(source, providers=["CPUExecutionProvider"])


def run(model: onnx.ModelProto, feed: dict[str, Any]) -> np.ndarray[Any, Any]:
    return np.asarray(ort_session(model).run(None, feed)[0])


def decoder_input(kokoro: KokoroEngine, text: str, voice: str) -> dict[str, Any]:
    """The derived decoder's feed for ``text``'s first part in ``voice``: the front's output, the
    style, and the sine source's phase at zero."""
    part = kokoro.phoneme_windows(text, kokoro.check_voice(voice).speaks)[0]
    style = kokoro.voice_bank.style(voice, len(part.tokens))
    _, *curves = ort_session(str(kokoro.assets.split("front"))).run(None, front_feed(part.tokens, style, 1.0))
    assert kokoro.runner is not None
    return decoder_feed(curves, style, np.zeros((1, 1, len(kokoro.runner.model.harmonics)), dtype=np.float32))


def test_the_rewritten_graph_computes_the_same() -> None:
    rng = np.random.default_rng(0)
    model = small_decoder(rng)
    feed = {
        "x": rng.standard_normal((1, CHANNELS, STEPS)).astype(np.float32) * 3 + 1,
        "scale": rng.uniform(0.5, 1.5, (1, CHANNELS, 1)).astype(np.float32),
        "shift": rng.standard_normal((1, CHANNELS, 1)).astype(np.float32),
        "channel_scale": rng.uniform(0.5, 1.5, (1, 1, STEPS)).astype(np.float32),
        "channel_shift": rng.standard_normal((1, 1, STEPS)).astype(np.float32),
    }
    before = run(model, feed)
    rewritten = fusion.faster(small_decoder(np.random.default_rng(0)))
    np.testing.assert_allclose(run(rewritten, feed), before, rtol=1e-5, atol=1e-5)
    ops = Counter(n.op_type for n in rewritten.graph.node)
    assert ops["InstanceNormalization"] == 1  # only the instance norm under the prefix
    assert ops["ReduceMean"] == 4  # the one outside the prefix and the layer norm, 2 each
    assert ops["Pow"] == 0 and ops["Sin"] == 1


def test_a_norm_whose_scale_is_not_per_channel_is_left_alone() -> None:
    model = small_decoder(np.random.default_rng(0))
    for value in model.graph.input:
        if value.name == "scale":  # [1, C, 1] -> [1, 1, 1]: a scalar scale, not one per channel
            value.type.tensor_type.shape.dim[1].dim_value = 1
    assert fusion.fuse_adain(model) == 0


@pytest.mark.model
@pytest.mark.slow
def test_the_derived_decoder_is_the_unfused_one_within_float_rounding(kokoro: KokoroEngine) -> None:
    """The assets' float decoder against the same graph made without ``fusion`` (exact in
    arithmetic: only rounding may differ, so the audio is the same to far beyond hearing)."""
    _, unfused = split(float_convolutions(onnx.load(str(kokoro.assets.graph("timed")))))
    fused = onnx.load(str(kokoro.assets.decoder("float")))
    assert not [n for n in fused.graph.node if n.op_type == "Pow" and n.name.startswith(fusion.SCOPE)]
    assert sum(n.op_type == "InstanceNormalization" for n in fused.graph.node) == 42
    feed = decoder_input(kokoro, "Thanks for waiting, I found your booking.", "af_heart")
    audio = [run(graph, feed).ravel() for graph in (unfused, fused)]
    snr_db = 10 * np.log10(np.sum(audio[0] ** 2) / np.sum((audio[1] - audio[0]) ** 2))
    assert snr_db > 90.0  # measured 115-120 dB on four utterances
