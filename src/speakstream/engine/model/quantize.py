"""The decoder's ``mixed`` form, the generator's first stage and noise branch as int8 convolutions,
and its ``int8`` form, every convolution of the generator int8, for crowded openings only.

ONNX Runtime's ``QLinearConv`` (int8 weights, 8-bit activations in and out) is several times faster
than a float ``Conv`` on a CPU, but its output is 8-bit too, and where that lands decides what it
costs: the first upsampling stage (``resblocks.0``-``2``) and the noise branch take it well, while
the second stage (``resblocks.3``-``5``) writes the audio's fine structure and stays float in
``mixed``. The ``int8`` form decodes only a crowded reply's opening, whose few frames delay every
listener behind it. The figures behind both are in ``docs/design.md``.

Each quantised convolution takes its input's range from the input itself
(``DynamicQuantizeLinear``, as the int8 export does for every convolution), its weights per
output channel, and its output's range from calibration: the float decoder run once, at
asset-fetch time, on a few sentences in a few voices, whole and as an opening window.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from speakstream.engine.model.feeds import decoder_feed, front_feed
from speakstream.engine.model.graph import GENERATOR, Index, prune, sine_constants
from speakstream.engine.phonemes.phonemizer import Phonemizer
from speakstream.engine.voices import VoiceBank

QUANTIZED = tuple(f"{GENERATOR}/{part}" for part in ("noise_res.", "resblocks.0/", "resblocks.1/", "resblocks.2/"))
"""Name prefixes of the convolutions the ``mixed`` decoder makes int8 (see the module's docstring)."""
SECOND_STAGE = tuple(f"{GENERATOR}/resblocks.{i}/" for i in (3, 4, 5))
"""... and those the ``int8`` decoder makes int8 too: for a crowded reply's opening only."""
PRECISIONS = {"mixed": QUANTIZED, "int8": QUANTIZED + SECOND_STAGE}
"""Each quantised decoder derived at asset-fetch time, and the convolutions it makes int8."""
CALIBRATION_TEXTS = (
    "Thanks for waiting, I found your booking.",
    "Your flight to Lisbon leaves tomorrow at 9:40 from gate B12, and boarding starts forty minutes earlier.",
    "Would you really like me to send the receipt to your email address?",
)
CALIBRATION_VOICES = ("af_heart", "am_michael", "bf_emma", "bm_george")
OPENING_FRAMES = 36
"""Calibration also decodes each sentence's first window alone: a window's instance norms take
their statistics over it, so its activations are not the whole decode's."""

Ranges = dict[str, tuple[float, float]]
"""Output name of each quantised convolution -> (lowest, highest) value seen in calibration."""


def targets(model: onnx.ModelProto, prefixes: tuple[str, ...] = QUANTIZED) -> list[Any]:
    """The float convolutions a decoder runs in int8 (``prefixes``: ``QUANTIZED``, the ``mixed`` one)."""
    return [n for n in model.graph.node if n.op_type == "Conv" and n.name.startswith(prefixes)]


def calibration_graph(model: onnx.ModelProto, prefixes: tuple[str, ...] = QUANTIZED) -> onnx.ModelProto:
    """A copy of the float decoder that also outputs every target convolution's output."""
    probe = copy.deepcopy(model)
    for node in targets(probe, prefixes):
        probe.graph.output.append(helper.make_tensor_value_info(node.output[0], TensorProto.FLOAT, None))
    return probe


def output_ranges(session: Any, feeds: Iterable[dict[str, Any]]) -> Ranges:
    """Run ``calibration_graph``'s session on ``feeds``; the range of each extra output."""
    names = [o.name for o in session.get_outputs()[1:]]
    ranges: Ranges = {}
    for feed in feeds:
        for name, value in zip(names, session.run(names, feed), strict=True):
            low, high = ranges.get(name, (0.0, 0.0))
            ranges[name] = (min(low, float(value.min())), max(high, float(value.max())))
    return ranges


def quantize(model: onnx.ModelProto, ranges: Ranges, prefixes: tuple[str, ...] = QUANTIZED) -> onnx.ModelProto:
    """Rewrite each target ``Conv`` of the float decoder as dynamic-input, int8 ``QLinearConv``."""
    g = Index(model)
    convolutions = targets(model, prefixes)
    missing = [n.name for n in convolutions if n.output[0] not in ranges]
    if not convolutions or missing:
        raise ValueError(f"no calibrated range for {missing[:3]}" if missing else "no convolution to quantise")
    replace: dict[int, list[Any]] = {}
    added: list[onnx.TensorProto] = []
    for node in convolutions:
        bias = g.array(node.input[2]) if len(node.input) > 2 else None
        replace[id(node)], inits = _int8_conv(node, g.array(node.input[1]), bias, ranges[node.output[0]])
        added += inits
    g.rebuild(replace, added=added)
    prune(model)  # the float weights
    return model


def _int8_conv(
    node: Any, weights: np.ndarray[Any, Any], bias: np.ndarray[Any, Any] | None, output_range: tuple[float, float]
) -> tuple[list[Any], list[onnx.TensorProto]]:
    """x -> DynamicQuantizeLinear -> QLinearConv (bias scaled at run time) -> DequantizeLinear."""
    name = node.name + "_int8"
    channels = weights.shape[0]
    weight_scale = np.abs(weights.reshape(channels, -1)).max(axis=1) / 127
    weight_scale = np.maximum(weight_scale, np.finfo(np.float32).tiny).astype(np.float32)
    shape = (channels, *[1] * (weights.ndim - 1))
    quantized = np.clip(np.round(weights / weight_scale.reshape(shape)), -127, 127).astype(np.int8)
    low, high = min(0.0, output_range[0]), max(0.0, output_range[1])
    y_scale = np.float32(max(high - low, 1e-6) / 255)
    y_zero = np.uint8(np.clip(round(-low / y_scale), 0, 255))
    constants = {
        "w": quantized,
        "w_scale": weight_scale,
        "w_zero": np.zeros(channels, np.int8),
        "y_scale": np.array(y_scale),
        "y_zero": np.array(y_zero),
        "bias": (bias if bias is not None else np.zeros(channels)).astype(np.float32),
    }
    inits = [numpy_helper.from_array(np.asarray(v), f"{name}_{k}") for k, v in constants.items()]
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    n = f"{name}_"
    nodes = [
        helper.make_node("DynamicQuantizeLinear", [node.input[0]], [n + "x", n + "x_scale", n + "x_zero"]),
        helper.make_node("Mul", [n + "x_scale", n + "w_scale"], [n + "bias_scale"]),
        helper.make_node("Div", [n + "bias", n + "bias_scale"], [n + "bias_steps"]),
        helper.make_node("Round", [n + "bias_steps"], [n + "bias_round"]),
        helper.make_node("Cast", [n + "bias_round"], [n + "bias_int"], to=TensorProto.INT32),
        helper.make_node(
            "QLinearConv",
            [n + s for s in ("x", "x_scale", "x_zero", "w", "w_scale", "w_zero", "y_scale", "y_zero", "bias_int")],
            [n + "y"],
            name=name,
            **attrs,
        ),
        helper.make_node("DequantizeLinear", [n + "y", n + "y_scale", n + "y_zero"], [node.output[0]]),
    ]
    return nodes, inits


def calibration_feeds(front: Any, voices_dir: Any, phase_width: int) -> Iterator[dict[str, Any]]:
    """The float decoder's inputs for ``CALIBRATION_TEXTS`` in ``CALIBRATION_VOICES``: each whole,
    then its first ``OPENING_FRAMES``. ``front``: a session of the front graph."""
    phonemizer, bank = Phonemizer(), VoiceBank.from_dir(voices_dir)
    phase = np.zeros((1, 1, phase_width), np.float32)
    for text in CALIBRATION_TEXTS:
        tokens = phonemizer.phonemize(text).tokens
        for voice in CALIBRATION_VOICES:
            style = bank.style(voice, len(tokens))
            _, *outputs = front.run(None, front_feed(tokens, style, 1.0))
            yield decoder_feed(outputs, style, phase)
            yield decoder_feed(outputs, style, phase, 0, OPENING_FRAMES)


def quantized(decoder: onnx.ModelProto, front: onnx.ModelProto, voices_dir: Any) -> dict[str, onnx.ModelProto]:
    """The ``PRECISIONS`` decoders made from the float one, calibrated once on ``front``'s output (a
    convolution's float output does not depend on which others are quantised)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    cpu = ["CPUExecutionProvider"]
    every = tuple(dict.fromkeys(p for prefixes in PRECISIONS.values() for p in prefixes))
    probe = ort.InferenceSession(calibration_graph(decoder, every).SerializeToString(), options, providers=cpu)
    front_session = ort.InferenceSession(front.SerializeToString(), options, providers=cpu)
    phase_width = len(sine_constants(decoder)[0])
    ranges = output_ranges(probe, calibration_feeds(front_session, voices_dir, phase_width))
    return {name: quantize(copy.deepcopy(decoder), ranges, prefixes) for name, prefixes in PRECISIONS.items()}
