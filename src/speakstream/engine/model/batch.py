"""The decoder that decodes windows of many sessions in one run: float throughout, its batch
dimension symbolic.

Three things keep the export's decoder at one window a run. It wrote the batch of one into five
places (the sine source's reshape, the STFT's input, the inverse STFT's window envelope, the
output's rows, and the fused norms' per-channel scale, which ``fusion`` flattened to [C]): each is
rewritten to take the batch from its tensor. Its int8 parts quantise each activation with one scale
for the whole tensor (``DynamicQuantizeLinear``), so a loud window beside a quiet one would change
the quiet one's audio: they are made float (the same weights, dequantised). And ONNX Runtime's
linear ``Resize`` rounds each row by its place in the tensor, which the sine source turns into a
different waveform: its two uses are written as gathers. A window's audio is then the same in a
batch as alone within float rounding; against the float decoder it differs as much as the shipped
``mixed`` one does (``docs/design.md``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from speakstream.engine.model.assets import Assets, staging
from speakstream.engine.model.graph import GENERATOR, Index, float_convolutions, prune

BATCH = "batch"
"""The name of the decoder's symbolic batch dimension."""
_CONSTANTS = (
    ("speakstream_batch_fold", [1, -1, 0], np.int64),
    ("speakstream_batch_rows", [0, -1], np.int64),
    ("speakstream_batch_axis1", [1], np.int64),
    ("speakstream_batch_any", [-1], np.int64),
    ("speakstream_batch_zero", [0], np.int64),
    ("speakstream_batch_end", [2**62], np.int64),
    ("speakstream_batch_two", 2, np.int64),
    ("speakstream_batch_one_int", 1, np.int64),
    ("speakstream_batch_zero_scalar", 0, np.int64),
    ("speakstream_batch_one", 1.0, np.float32),
    ("speakstream_batch_half", 0.5, np.float32),
    ("speakstream_batch_zero_f", 0.0, np.float32),
)
"""The constants the rewrite adds: (name, value, type)."""


def batched_decoder(assets: Assets) -> Path:
    """The batched decoder's file beside the derived graphs, made from the float decoder when it is
    missing or older: on demand, not at fetch (a few seconds, about 210 MB), since only a batching
    engine and the GPU check read it."""
    path, source = assets.decoder("batched"), assets.decoder("float")
    if not path.is_file() or path.stat().st_mtime < source.stat().st_mtime:
        with staging(path) as part:
            onnx.save(batched(onnx.load(str(source))), str(part))
    return path


def batched(model: onnx.ModelProto) -> onnx.ModelProto:
    """The float decoder ``model`` (``graph.split``'s) rewritten, in place, to take a batch of
    windows of the same length: inputs [batch, ...], output ``audio`` [batch, samples]."""
    float_convolutions(model, prefix="/decoder")
    float_matmuls(model)
    _symbolic(model)
    g = Index(model)
    nodes = {n.name: n for n in g.graph.node}
    replace: dict[int, list[Any]] = {}
    nodes[f"{GENERATOR}/Concat"].input[0] = "speakstream_batch_any"  # [1, 1, L] -> [batch, 1, L]
    stft_input = nodes[f"{GENERATOR}/Reshape_3"]  # [batch, 1, L] -> [1, L] dropped the batch
    replace[id(stft_input)] = [
        helper.make_node(
            "Squeeze", [stft_input.input[0], "speakstream_batch_axis1"], list(stft_input.output), name=stft_input.name
        )
    ]
    replace[id(nodes[f"{GENERATOR}/istft/stft/ScatterND"])] = _envelope(nodes)
    rows, dead = _rows(nodes)
    replace[id(nodes["/Gather"])] = rows
    for resize in [n for n in g.graph.node if n.op_type == "Resize" and _linear(n)]:
        replace[id(resize)] = _gathered_resize(resize, g.array(resize.input[2]))
    for norm in [n for n in g.graph.node if n.op_type == "InstanceNormalization"]:
        if g.constant(norm.input[1]) is None:  # the style's scale (``fusion``), not the export's own
            replace[id(norm)] = _folded_norm(norm)
    added = [numpy_helper.from_array(np.array(value, dtype), name) for name, value, dtype in _CONSTANTS]
    g.rebuild(replace, dead, added)
    prune(model)
    return model


def float_matmuls(model: onnx.ModelProto) -> int:
    """Rewrite, in place, each ``MatMulInteger`` chain (quantise, multiply, cast, scale) as one
    float ``MatMul`` on the dequantised weights; returns how many."""
    g = Index(model)
    replace: dict[int, list[Any]] = {}
    dead: set[int] = set()
    added: list[onnx.TensorProto] = []
    for matmul in [n for n in g.graph.node if n.op_type == "MatMulInteger"]:
        quantize, cast = g.producer[matmul.input[0]], g.sole(matmul.output[0])
        scale = g.sole(cast.output[0])
        if (quantize.op_type, cast.op_type, scale.op_type) != ("DynamicQuantizeLinear", "Cast", "Mul"):
            raise ValueError(f"{matmul.name}: unexpected chain {quantize.op_type} -> {cast.op_type} -> {scale.op_type}")
        scales = g.producer[g.other(scale, cast.output[0])]
        weight_scale = g.array(next(i for i in scales.input if i in g.inits))
        weights = (
            g.array(matmul.input[1]).astype(np.float32) - g.array(matmul.input[3]).astype(np.float32)
        ) * weight_scale
        name = matmul.name.replace("_quant", "") + "_speakstream"
        added.append(numpy_helper.from_array(weights.astype(np.float32), f"{name}_w"))
        replace[id(scale)] = [
            helper.make_node("MatMul", [quantize.input[0], f"{name}_w"], list(scale.output), name=name)
        ]
        dead.update({id(matmul), id(cast)})
    g.rebuild(replace, dead, added)
    prune(model)
    return len(replace)


def _symbolic(model: onnx.ModelProto) -> None:
    """Every input's first dimension, and the output's, named ``BATCH``; the output 2-D."""
    for value in model.graph.input:
        value.type.tensor_type.shape.dim[0].dim_param = BATCH
    (audio,) = model.graph.output
    del audio.type.tensor_type.shape.dim[:]
    audio.type.tensor_type.shape.dim.add().dim_param = BATCH
    audio.type.tensor_type.shape.dim.add().dim_param = "samples"


def _envelope(nodes: dict[str, Any]) -> list[Any]:
    """The inverse STFT's division by its window envelope where that is not tiny, written for any
    batch: the export scattered it into row 0. The envelope covers the first samples only (a
    constant of the window's length), so those are divided and the rest kept."""
    scatter = nodes[f"{GENERATOR}/istft/stft/ScatterND"]
    envelope = nodes[f"{GENERATOR}/istft/stft/Slice_1"].output[0]
    above = nodes[f"{GENERATOR}/istft/stft/Greater"].output[0]
    samples, p = scatter.input[0], "speakstream_batch_envelope"
    return [
        helper.make_node("Where", [above, envelope, "speakstream_batch_one"], [f"{p}_divisor"]),
        helper.make_node("Shape", [envelope], [f"{p}_len"]),
        helper.make_node(
            "Slice", [samples, "speakstream_batch_zero", f"{p}_len", "speakstream_batch_axis1"], [f"{p}_head"]
        ),
        helper.make_node(
            "Slice", [samples, f"{p}_len", "speakstream_batch_end", "speakstream_batch_axis1"], [f"{p}_tail"]
        ),
        helper.make_node("Div", [f"{p}_head", f"{p}_divisor"], [f"{p}_divided"]),
        helper.make_node("Concat", [f"{p}_divided", f"{p}_tail"], list(scatter.output), name=scatter.name, axis=1),
    ]


def _rows(nodes: dict[str, Any]) -> tuple[list[Any], set[int]]:
    """The output as one row of samples per window (the export took row 0 and flattened it), and
    the nodes that took it."""
    first, flat, last = nodes["/decoder/Gather"], nodes["/decoder/Reshape"], nodes["/Gather"]
    rows = helper.make_node(
        "Reshape", [first.input[0], "speakstream_batch_rows"], list(last.output), name="/speakstream/rows"
    )
    return [rows], {id(first), id(flat)}


def _linear(node: Any) -> bool:
    """Whether a ``Resize`` is the sine source's: linear, half-pixel, by scales, over the last axis."""
    attributes = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    return attributes.get("mode") == b"linear" and attributes.get("coordinate_transformation_mode") == b"half_pixel"


def _gathered_resize(node: Any, scales: np.ndarray[Any, Any]) -> list[Any]:
    """A linear, half-pixel ``Resize`` of the last axis of [batch, C, L] by ``scales[-1]``, as two
    gathers and a blend: ONNX Runtime's own rounds each row a little differently by where it lies
    in the tensor, and the sine source's phase, thousands of radians, turns that last bit into a
    different waveform, so a window in a batch would not sound as it does alone."""
    if len(scales) != 3 or list(scales[:2]) != [1.0, 1.0]:
        raise ValueError(f"{node.name}: expected scales [1, 1, s], found {scales.tolist()}")
    x, p = node.input[0], node.name + "/speakstream"
    scale = numpy_helper.from_array(np.array(scales[-1], np.float32), f"{p}_scale")

    def make(op: str, inputs: list[str], output: str, **attributes: Any) -> Any:
        return helper.make_node(op, inputs, [f"{p}_{output}"], **attributes)

    nodes = [
        helper.make_node("Constant", [], [f"{p}_scale"], value=scale),
        make("Shape", [x], "shape"),
        make("Gather", [f"{p}_shape", "speakstream_batch_two"], "length", axis=0),
        make("Sub", [f"{p}_length", "speakstream_batch_one_int"], "last"),
        make("Cast", [f"{p}_length"], "length_f", to=onnx.TensorProto.FLOAT),
        make("Mul", [f"{p}_length_f", f"{p}_scale"], "out_f"),
        make("Floor", [f"{p}_out_f"], "out_floor"),
        make("Cast", [f"{p}_out_floor"], "out", to=onnx.TensorProto.INT64),
        make("Range", ["speakstream_batch_zero_scalar", f"{p}_out", "speakstream_batch_one_int"], "j"),
        make("Cast", [f"{p}_j"], "j_f", to=onnx.TensorProto.FLOAT),
        make("Add", [f"{p}_j_f", "speakstream_batch_half"], "centre"),
        make("Div", [f"{p}_centre", f"{p}_scale"], "source"),
        make("Sub", [f"{p}_source", "speakstream_batch_half"], "shifted"),
        make("Max", [f"{p}_shifted", "speakstream_batch_zero_f"], "at"),
        make("Floor", [f"{p}_at"], "at_floor"),
        make("Cast", [f"{p}_at_floor"], "below_any", to=onnx.TensorProto.INT64),
        make("Min", [f"{p}_below_any", f"{p}_last"], "below"),
        make("Add", [f"{p}_below", "speakstream_batch_one_int"], "above_any"),
        make("Min", [f"{p}_above_any", f"{p}_last"], "above"),
        make("Cast", [f"{p}_below"], "below_f", to=onnx.TensorProto.FLOAT),
        make("Sub", [f"{p}_at", f"{p}_below_f"], "weight"),
        make("Gather", [x, f"{p}_below"], "low", axis=2),
        make("Gather", [x, f"{p}_above"], "high", axis=2),
        make("Sub", [f"{p}_high", f"{p}_low"], "step"),
        make("Mul", [f"{p}_step", f"{p}_weight"], "part"),
        helper.make_node("Add", [f"{p}_low", f"{p}_part"], list(node.output), name=node.name),
    ]
    return nodes


def _folded_norm(norm: Any) -> list[Any]:
    """``norm`` on [batch, C, T] as one on [1, batch x C, T]: each window's channel is normalised
    over its own time as before, and the per-channel scale and shift, flattened from [batch, C, 1],
    line up with the folded channels."""
    x, y = norm.input[0], norm.output[0]
    attributes = {a.name: helper.get_attribute_value(a) for a in norm.attribute}
    return [
        helper.make_node("Reshape", [x, "speakstream_batch_fold"], [f"{x}/folded"]),
        helper.make_node(
            "InstanceNormalization", [f"{x}/folded", *norm.input[1:]], [f"{y}/folded"], name=norm.name, **attributes
        ),
        helper.make_node("Shape", [x], [f"{y}/shape"]),
        helper.make_node("Reshape", [f"{y}/folded", f"{y}/shape"], [y]),
    ]
