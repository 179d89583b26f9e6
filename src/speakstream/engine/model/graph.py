"""Derived ONNX graphs of the Kokoro-82M model, made once at asset-fetch time.

``add_durations``: exposes the duration predictor's rounded output (one frame count per input
token, frames of 600 samples) as an extra graph output, for word timestamps.

``split``: cuts the model in two where the decoder begins, so the decoder can run on windows of
frames (streaming inside a sentence). The *front* (tokens, style, speed -> durations, aligned
features, F0 and energy curves) needs the whole utterance but is cheap; the *decoder* (those, plus
the style -> audio) is nearly all of the cost and is convolutional, so a window of frames with
some context on each side gives that window's audio. Its sine source sums the F0 curve (a CumSum):
``split`` adds an input, ``phase``, that carries that sum into a window from the frames before it.

``float_convolutions``: the int8 export runs every convolution as ``ConvInteger`` on dynamically
quantised activations, which is most of the CPU time. This rewrites the generator's ones as float
``Conv`` on dequantised weights (the same weights; the activations are simply not quantised any
more) and lifts the 1-D convolutions to 2-D, which lets ONNX Runtime use its blocked (NCHWc)
kernels: faster, for more resident weights (``docs/design.md``). The rewrite is exact in weights,
so the speech is the same model's.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from speakstream.engine.model.feeds import DURATIONS, ENERGY, F0, FEATURES, PHASE, SINE_HARMONICS, SINE_RATE, SINE_SUM


def split(model: onnx.ModelProto) -> tuple[onnx.ModelProto, onnx.ModelProto]:
    """(front, decoder) of a graph that has the durations output (``add_durations``)."""
    from onnx.utils import Extractor

    extractor = Extractor(model)
    front = extractor.extract_model(["tokens", "style", "speed"], [DURATIONS, FEATURES, F0, ENERGY])
    decoder = _add_phase_input(extractor.extract_model([FEATURES, F0, ENERGY, "style"], ["audio"]))
    harmonics, rate = sine_constants(decoder)
    helper.set_model_props(decoder, {"sine_harmonics": ",".join(f"{h:g}" for h in harmonics), "sine_rate": f"{rate:g}"})
    return front, decoder


def sine_constants(decoder: onnx.ModelProto) -> tuple[np.ndarray[Any, Any], float]:
    """The sine source's harmonic multipliers and its sample rate, read from the graph."""
    values = {
        i.name: numpy_helper.to_array(i) for i in decoder.graph.initializer if i.name in (SINE_HARMONICS, SINE_RATE)
    }
    for node in decoder.graph.node:
        if node.op_type == "Constant" and node.output[0] in (SINE_HARMONICS, SINE_RATE):
            values[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
    return values[SINE_HARMONICS].ravel().astype(np.float64), float(values[SINE_RATE])


def _add_phase_input(decoder: onnx.ModelProto) -> onnx.ModelProto:
    node = next(n for n in decoder.graph.node if n.name == SINE_SUM)
    summed = node.output[0]
    node.output[0] = summed + "_window"
    add = helper.make_node("Add", [summed + "_window", PHASE], [summed], name=SINE_SUM + "/carry")
    position = list(decoder.graph.node).index(node) + 1
    decoder.graph.node.insert(position, add)
    harmonics = len(sine_constants(decoder)[0])
    decoder.graph.input.append(helper.make_tensor_value_info(PHASE, onnx.TensorProto.FLOAT, [1, 1, harmonics]))
    return decoder


def add_durations(model: onnx.ModelProto) -> onnx.ModelProto:
    if DURATIONS not in {o.name for o in model.graph.output}:
        if DURATIONS not in {o for n in model.graph.node for o in n.output}:
            raise ValueError(f"the graph has no {DURATIONS} tensor")
        model.graph.output.append(helper.make_tensor_value_info(DURATIONS, onnx.TensorProto.FLOAT, None))
    return model


class Index:
    """A graph's nodes by the tensors they read and write, and its constants: what a rewrite looks
    up. A snapshot: ``rebuild`` writes the rewrite back, and a later rewrite makes its own index."""

    def __init__(self, model: onnx.ModelProto) -> None:
        self.graph = model.graph
        self.inits = {i.name: i for i in self.graph.initializer}
        self.constants = {
            n.output[0]: n.attribute[0].t
            for n in self.graph.node
            if n.op_type == "Constant" and n.attribute and n.attribute[0].name == "value"
        }
        self.producer = {o: n for n in self.graph.node for o in n.output}
        self.consumers: dict[str, list[Any]] = defaultdict(list)
        for node in self.graph.node:
            for name in dict.fromkeys(node.input):  # once per node: Mul(d, d) is one reader of d
                self.consumers[name].append(node)

    def constant(self, name: str) -> np.ndarray[Any, Any] | None:
        """The value of an initializer or a ``Constant`` node's output; None for a computed tensor."""
        tensor = self.inits.get(name)
        tensor = self.constants.get(name) if tensor is None else tensor
        return None if tensor is None else numpy_helper.to_array(tensor)

    def array(self, name: str) -> np.ndarray[Any, Any]:
        """``constant``, where the rewrite needs one."""
        value = self.constant(name)
        if value is None:
            raise ValueError(f"{name} is not a constant")
        return value

    def only(self, name: str, op_type: str | None = None) -> Any | None:
        """The one node reading ``name``, if there is one (and it is an ``op_type``)."""
        nodes = self.consumers[name]
        return nodes[0] if len(nodes) == 1 and op_type in (None, nodes[0].op_type) else None

    def sole(self, name: str) -> Any:
        """``only``, where the rewrite needs one."""
        node = self.only(name)
        if node is None:
            raise ValueError(f"{name} feeds {len(self.consumers[name])} nodes, expected 1")
        return node

    def other(self, node: Any, name: str) -> str:
        """``node``'s input that is not ``name`` (of two)."""
        return str(next(i for i in node.input if i != name))

    def rebuild(
        self, replace: dict[int, list[Any]], dead: set[int] | None = None, added: Iterable[onnx.TensorProto] = ()
    ) -> None:
        """Write the rewrite into the graph: each node whose id is in ``replace`` becomes those
        nodes (in its place, so the order stays topological), those in ``dead`` go, and ``added``
        joins the initializers."""
        dead = dead or set()
        nodes = []
        for node in self.graph.node:
            if id(node) not in dead:
                nodes.extend(replace.get(id(node), [node]))
        _replace(self.graph.node, nodes)
        self.graph.initializer.extend(added)


GENERATOR = "/decoder/decoder/generator"
"""The iSTFTNet generator: it runs at the audio frame rate, so nearly all convolution time is
here, while it holds only a quarter of the convolution weights."""


def float_convolutions(model: onnx.ModelProto, prefix: str = GENERATOR) -> onnx.ModelProto:
    """Rewrite the ``ConvInteger`` chains under ``prefix`` as float ``Conv`` (2-D where 1-D).

    The rest of the graph stays int8: those convolutions run at the token or feature frame rate
    and cost little time, while converting them would double the model's memory.
    """
    g = Index(model)
    replace: dict[int, list[Any]] = {}
    dead: set[int] = set()
    added: list[onnx.TensorProto] = []
    for conv in [n for n in g.graph.node if n.op_type == "ConvInteger" and n.name.startswith(prefix)]:
        chain, nodes, inits = _float_conv(g, conv)
        replace[id(chain[-1])] = nodes
        dead.update(id(n) for n in chain[:-1])
        added.extend(inits)
    if "speakstream_axis2" not in g.inits:  # a second pass (``batch``) finds it there
        added.append(numpy_helper.from_array(np.array([2], dtype=np.int64), "speakstream_axis2"))
    g.rebuild(replace, dead, added)
    prune(model)
    return model


def _float_conv(g: Index, conv: Any) -> tuple[list[Any], list[Any], list[onnx.TensorProto]]:
    """The nodes from ``conv`` to its float output, and their float replacement."""
    quantize = g.producer[conv.input[0]]
    if quantize.op_type != "DynamicQuantizeLinear":
        raise ValueError(f"{conv.name}: unexpected input {quantize.op_type}")
    chain, bias = [conv], None
    node = g.sole(conv.output[0])
    if node.op_type == "Add":
        bias = _bias(g, g.other(node, conv.output[0]))
        chain.append(node)
        node = g.sole(node.output[0])
    cast, scale = node, g.sole(node.output[0])
    if (cast.op_type, scale.op_type) != ("Cast", "Mul"):
        raise ValueError(f"{conv.name}: unexpected chain {cast.op_type} -> {scale.op_type}")
    chain += [cast, scale]
    scales = g.producer[g.other(scale, cast.output[0])]
    weight_scale = g.array(next(i for i in scales.input if i in g.inits))
    weights = g.array(conv.input[1]).astype(np.float32) - g.array(conv.input[3]).astype(np.float32)
    weights = weights * weight_scale
    return chain, *_conv_nodes(conv, quantize.input[0], scale.output[0], weights.astype(np.float32), bias)


def _bias(g: Index, name: str) -> np.ndarray[Any, Any]:
    """Follow Reshape <- Cast <- Floor <- Div(bias, scale) back to the float bias."""
    node = g.producer[name]
    for op in ("Reshape", "Cast", "Floor", "Div"):
        if node.op_type != op:
            raise ValueError(f"unexpected bias chain at {node.name}: {node.op_type}")
        if op != "Div":
            node = g.producer[node.input[0]]
    return g.array(node.input[0])


def _conv_nodes(
    conv: Any, x: str, y: str, weights: np.ndarray[Any, Any], bias: np.ndarray[Any, Any] | None
) -> tuple[list[Any], list[onnx.TensorProto]]:
    attrs = {a.name: helper.get_attribute_value(a) for a in conv.attribute}
    name = conv.name.replace("_quant", "") + "_speakstream"
    inputs = [f"{name}_w"] + ([f"{name}_b"] if bias is not None else [])
    inits = [numpy_helper.from_array(weights if weights.ndim != 3 else weights[:, :, None, :], inputs[0])]
    if bias is not None:
        inits.append(numpy_helper.from_array(bias.astype(np.float32), inputs[1]))
    if weights.ndim != 3:
        return [helper.make_node("Conv", [x, *inputs], [y], name=name, **attrs)], inits
    attrs = _lift_attributes(attrs)
    nodes = [
        helper.make_node("Unsqueeze", [x, "speakstream_axis2"], [f"{name}_x4"]),
        helper.make_node("Conv", [f"{name}_x4", *inputs], [f"{name}_y4"], name=name, **attrs),
        helper.make_node("Squeeze", [f"{name}_y4", "speakstream_axis2"], [y]),
    ]
    return nodes, inits


def _lift_attributes(attrs: dict[str, Any]) -> dict[str, Any]:
    lifted: dict[str, Any] = {}
    for key in ("kernel_shape", "dilations", "strides"):
        if key in attrs:
            lifted[key] = [1, attrs[key][0]]
    if "pads" in attrs:
        lifted["pads"] = [0, attrs["pads"][0], 0, attrs["pads"][1]]
    if "group" in attrs:
        lifted["group"] = attrs["group"]
    auto_pad = attrs.get("auto_pad", b"NOTSET")
    if auto_pad not in (b"NOTSET", "NOTSET"):
        lifted["auto_pad"] = auto_pad
    return lifted


def prune(model: onnx.ModelProto) -> None:
    """Drop nodes and initializers nothing uses any more."""
    graph = model.graph
    outputs = {o.name for o in graph.output}
    while True:
        used = {i for n in graph.node for i in n.input} | outputs
        keep = [n for n in graph.node if any(o in used for o in n.output)]
        if len(keep) == len(graph.node):
            break
        _replace(graph.node, keep)
    used = {i for n in graph.node for i in n.input}
    _replace(graph.initializer, [i for i in graph.initializer if i.name in used])


def _replace(field: Any, items: Iterable[Any]) -> None:
    items = list(items)
    del field[:]
    field.extend(items)
