"""Fewer operators for the same arithmetic: rewrites of the generator that ONNX Runtime runs faster.

The export spells every AdaIN (an instance norm over time, then a per-channel scale and shift
computed from the style) out in nine operators, each a pass over the whole activation, and ONNX
Runtime runs a binary operator whose second input is broadcast per channel on one thread.
``fuse_adain`` writes each norm as one ``InstanceNormalization`` (the per-channel scale and shift
are its own inputs), ``square`` each ``Pow(x, 2)`` as ``Mul(x, x)``, which runs on every core. The
arithmetic is the same, so the audio is the unrewritten decoder's within float rounding; what it
saves is in ``docs/design.md``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from speakstream.engine.model.graph import GENERATOR, Index, prune

SCOPE = GENERATOR + "/"
"""The names of the nodes rewritten begin with this: only the generator's are. The norms before it
run at the frame rate and cost little, and the int8 convolutions there quantise their inputs on
the fly, so a difference in the last bit there flips a rounding and moves the audio."""
FLAT = "speakstream_flat"
"""The shape [-1] (a per-channel [1, C, 1] scale or shift as the [C] ``InstanceNormalization``
takes)."""


def fuse_adain(model: onnx.ModelProto, prefix: str = SCOPE) -> int:
    """Rewrite, in place, every instance norm under ``prefix`` over the last axis of a [1, C, T]
    activation followed by a per-channel scale and shift as one ``InstanceNormalization``; returns
    how many.

    The export's form: ``m = ReduceMean(x, [2])``, ``d = x - m``, ``v = ReduceMean(d * d, [2])``,
    ``n = d / Sqrt(v + eps)``, ``y = scale * n + shift`` (scale and shift [1, C, 1])."""
    shapes = value_shapes(model)
    g = Index(model)
    replace: dict[int, list[Any]] = {}
    dead: set[int] = set()
    for mean in [n for n in g.graph.node if n.op_type == "ReduceMean" and n.name.startswith(prefix)]:
        found = _adain(g, mean, shapes)
        if found is None:
            continue
        chain, x, scale, shift, eps, y = found
        name = mean.name + "/speakstream_instance_norm"
        replace[id(chain[-1])] = [
            helper.make_node("Reshape", [scale, FLAT], [name + "_scale"]),
            helper.make_node("Reshape", [shift, FLAT], [name + "_shift"]),
            helper.make_node(
                "InstanceNormalization", [x, name + "_scale", name + "_shift"], [y], name=name, epsilon=eps
            ),
        ]
        dead.update(id(n) for n in chain[:-1])
    added = [] if not replace or FLAT in g.inits else [numpy_helper.from_array(np.array([-1], dtype=np.int64), FLAT)]
    g.rebuild(replace, dead, added)
    return len(replace)


def _adain(g: Index, mean: Any, shapes: dict[str, list[Any]]) -> tuple[list[Any], str, str, str, float, str] | None:
    """(the nodes from ``mean`` to the shift's ``Add``, x, scale, shift, eps, y) if ``mean`` opens
    the export's AdaIN, else None."""
    norm = _norm(g, mean)
    if norm is None:
        return None
    chain, eps = norm
    scaled = g.only(chain[-1].output[0], "Mul")
    shifted = None if scaled is None else g.only(scaled.output[0], "Add")
    if scaled is None or shifted is None:
        return None
    scale, shift = g.other(scaled, chain[-1].output[0]), g.other(shifted, scaled.output[0])
    shape, x = shapes.get(scale), mean.input[0]
    if shape is None or len(shape) != 3 or shape != [1, shape[1], 1] or shapes.get(shift) != shape:
        return None
    known = shapes.get(x)  # inference stops inside the generator; where it does not, it must agree
    if not isinstance(shape[1], int) or (known is not None and (len(known) != 3 or known[1] != shape[1])):
        return None
    return [*chain, scaled, shifted], x, scale, shift, eps, shifted.output[0]


def _norm(g: Index, mean: Any) -> tuple[list[Any], float] | None:
    """(the nodes from ``mean`` to the ``Div``, eps) if ``mean`` opens the export's instance norm."""
    x = mean.input[0]
    sub = g.only(mean.output[0], "Sub") if _over_time(g, mean) else None
    if sub is None or list(sub.input) != [x, mean.output[0]]:
        return None
    uses = {n.op_type: n for n in g.consumers[sub.output[0]]}
    square, divide = uses.get("Mul"), uses.get("Div")
    if len(uses) != 2 or square is None or divide is None or list(square.input) != [sub.output[0]] * 2:
        return None
    variance = g.only(square.output[0], "ReduceMean")
    plus = None if variance is None or not _over_time(g, variance) else g.only(variance.output[0], "Add")
    root = None if plus is None else g.only(plus.output[0], "Sqrt")
    if root is None or plus is None or variance is None or list(divide.input) != [sub.output[0], root.output[0]]:
        return None
    eps = g.constant(g.other(plus, variance.output[0]))
    if eps is None or eps.size != 1:
        return None
    return [mean, sub, square, variance, plus, root, divide], float(eps.ravel()[0])


def _over_time(g: Index, node: Any) -> bool:
    """Whether a ``ReduceMean`` averages over axis 2 only, keeping it."""
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    axes = g.constant(node.input[1]) if len(node.input) > 1 else attrs.get("axes")
    return axes is not None and list(np.ravel(axes)) == [2] and attrs.get("keepdims", 1) == 1


def value_shapes(model: onnx.ModelProto) -> dict[str, list[Any]]:
    """Every tensor's inferred shape (a dimension's size, or its name when not fixed)."""
    inferred = onnx.shape_inference.infer_shapes(model)
    values = [*inferred.graph.value_info, *inferred.graph.input, *inferred.graph.output]
    return {
        v.name: [d.dim_value if d.HasField("dim_value") else d.dim_param for d in v.type.tensor_type.shape.dim]
        for v in values
        if v.type.tensor_type.HasField("shape")
    }


def square(model: onnx.ModelProto, prefix: str = SCOPE) -> int:
    """Rewrite, in place, every ``Pow(x, 2)`` under ``prefix`` as ``Mul(x, x)``; returns how many."""
    g = Index(model)
    replace: dict[int, list[Any]] = {}
    for node in g.graph.node:
        ours = node.op_type == "Pow" and node.name.startswith(prefix)
        exponent = g.constant(node.input[1]) if ours else None
        if exponent is not None and exponent.size == 1 and float(exponent.ravel()[0]) == 2.0:
            replace[id(node)] = [helper.make_node("Mul", [node.input[0]] * 2, list(node.output), name=node.name)]
    g.rebuild(replace, set(), [])
    return len(replace)


def faster(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` with ``fuse_adain`` and ``square`` applied (and nothing left unused)."""
    square(model)  # first: a norm's variance may be written with Pow
    fuse_adain(model)
    prune(model)
    return model
