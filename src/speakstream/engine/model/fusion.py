"""Fewer operators for the same arithmetic: rewrites of the generator that ONNX Runtime runs faster.

The export spells every AdaIN (an instance norm over time, then a per-channel scale and shift
computed from the style) out in nine operators, each a pass over the whole activation, and ONNX
Runtime runs a binary operator whose second input is broadcast per channel on one thread: in a
41-frame window on 2 cores, the decoder's AdaIN norms took 46 ms of the operators' 510 and the Snake
activations' squares 9 ms, with one core idle. ``fuse_adain`` writes each norm as one
``InstanceNormalization`` (the per-channel scale and shift are its own inputs), ``square`` each
``Pow(x, 2)`` as ``Mul(x, x)``, which runs on every core. A decoder window then takes
0.955-0.996x the time (``scripts/ab_fusion.py``: paired, mixed and float decoders, 1 and 2
threads), and the float decoder's audio is the unrewritten one's within float rounding (115-120 dB
SNR on whole utterances). ``stft_as_convolution`` (the generator's STFT as one strided
convolution) is measured by ``scripts/ab_stft.py`` but not applied: see its docstring.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from speakstream.engine.model.graph import GENERATOR, Index, prune

SCOPE = GENERATOR + "/"
"""The names of the nodes rewritten begin with this: only the generator's are. The norms before it
(the front's, the decoder's feature blocks') run at the frame rate and cost little, and the int8
convolutions there quantise their inputs on the fly: a difference in the last bit flips a rounding,
and the audio moves with it (34-36 dB SNR to the export on 3 of 4 utterances with the decoder's
feature blocks rewritten too)."""
FLAT = "speakstream_flat"
"""The shape [-1] (a per-channel [1, C, 1] scale or shift as the [C] ``InstanceNormalization``
takes)."""


def fuse_adain(model: onnx.ModelProto, prefix: str = SCOPE) -> int:
    """Rewrite, in place, every instance norm under ``prefix`` over the last axis of a [1, C, T]
    activation followed by a per-channel scale and shift as one ``InstanceNormalization``; returns
    how many.

    The export's form: ``m = ReduceMean(x, [2])``, ``d = x - m``, ``v = ReduceMean(d * d, [2])``,
    ``n = d / Sqrt(v + eps)``, ``y = scale * n + shift`` (scale and shift [1, C, 1])."""
    shapes = _shapes(model)
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


def _shapes(model: onnx.ModelProto) -> dict[str, list[Any]]:
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


def stft_as_convolution(model: onnx.ModelProto, prefix: str = SCOPE) -> int:
    """Rewrite, in place, every ``STFT`` under ``prefix`` of a real signal with a constant step and
    window as one strided ``Conv`` whose kernels are the window times the DFT's cosines and (minus)
    sines, its output laid out as the ``STFT``'s; returns how many.

    The generator takes the STFT of its harmonic source (20-sample frames, a hop of 5) to feed its
    noise branch. ONNX Runtime's ``STFT`` kernel runs one small DFT per frame on one thread: 16-22
    ms in a 41-frame window, where the same sums as a convolution take under 1 ms on MLAS.

    Not in ``faster``: the spectrum is the same within float rounding, but the phases at the DC
    and Nyquist bins are not (see ``_twiddles``), and the generator's noise branch reads them: the
    audio moves 3.2-3.4 dB log-mel from the export and is brighter (+2 dB at 4-12 kHz in voiced
    frames, +4 dB in quiet ones), with the same WER. Whether that is nearer the published PyTorch
    model's sound needs a PyTorch reference or listeners; ``scripts/ab_stft.py`` measures both
    sides."""
    shapes = _shapes(model)
    g = Index(model)
    replace: dict[int, list[Any]] = {}
    added: list[onnx.TensorProto] = []
    for node in [n for n in g.graph.node if n.op_type == "STFT" and n.name.startswith(prefix)]:
        found = _dft(g, node, shapes)
        if found is not None:
            replace[id(node)], inits = found
            added += inits
    g.rebuild(replace, added=added)
    return len(replace)


def _dft(g: Index, stft: Any, shapes: dict[str, list[Any]]) -> tuple[list[Any], list[onnx.TensorProto]] | None:
    """The nodes and initializers that compute ``stft`` as a convolution, if it is a real
    signal's with a constant step and window."""
    signal, *rest = [*stft.input, "", "", ""][:4]
    step, window, length = (g.constant(name) if name else None for name in rest)
    rank = shapes.get(signal)
    onesided = {a.name: helper.get_attribute_value(a) for a in stft.attribute}.get("onesided", 1)
    if step is None or (rest[1] and window is None) or (window is None and length is None) or rank is None:
        return None  # computed: the step, the window, or (without a window) the frame's length
    window = None if window is None else np.ravel(window)
    size = int(np.ravel(length)[0]) if length is not None else len(window) if window is not None else 0
    window = np.ones(size, np.float32) if window is None else window.astype(np.float32)
    if window.size != size or not (len(rank) == 2 or (len(rank) == 3 and rank[2] == 1)):
        return None  # a complex signal ([B, L, 2]), or a window of another length
    bins = size // 2 + 1 if onesided else size
    kernels = np.concatenate([window * part for part in _twiddles(bins, size)]).astype(np.float32)
    n = stft.name + "/speakstream_dft"
    constants: dict[str, np.ndarray[Any, Any]] = {
        "_w": kernels[:, None, None, :],
        "_rows": np.array([1, 2] if len(rank) == 2 else [2], np.int64),
        "_shape": np.array([0, 2, bins, -1], np.int64),
    }
    inits = [numpy_helper.from_array(v, n + k) for k, v in constants.items()]
    hop = int(np.ravel(step)[0])
    lead = [] if len(rank) == 2 else [helper.make_node("Transpose", [signal], [n + "_t"], perm=[0, 2, 1])]
    nodes = [
        *lead,  # [B, L] or [B, L, 1] -> [B, 1, 1, L]: a 2-D convolution runs on the blocked kernels
        helper.make_node("Unsqueeze", [lead[0].output[0] if lead else signal, n + "_rows"], [n + "_x"]),
        helper.make_node("Conv", [n + "_x", n + "_w"], [n + "_y"], name=n, kernel_shape=[1, size], strides=[1, hop]),
        helper.make_node("Reshape", [n + "_y", n + "_shape"], [n + "_parts"]),  # [B, re|im, bins, frames]
        helper.make_node("Transpose", [n + "_parts"], list(stft.output), perm=[0, 3, 2, 1]),
    ]
    return nodes, inits


def _twiddles(bins: int, size: int) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """The DFT's cosines and (minus) sines, exact to float64, with exact zeros.

    The zeros matter: the generator reads the phase of each bin, and a real signal's DC and
    Nyquist bins have no imaginary part, so their phase is 0 or pi, never -pi. PyTorch (which the
    model was trained and is published with) gives pi there, and Kokoro's own conv-based STFT for
    ONNX (``custom_stft.py`` in the ``kokoro`` package) sets pi to match it; ONNX Runtime's
    ``STFT`` kernel leaves rounding noise in the imaginary part and gives -pi on about a third of
    the Nyquist bins."""
    turns = 2 * np.pi * np.arange(bins)[:, None] * np.arange(size) / size
    cosines, sines = np.cos(turns), -np.sin(turns)
    for wave in (cosines, sines):
        wave[np.abs(wave) < 1e-9] = 0.0
    return cosines, sines


def faster(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` with ``fuse_adain`` and ``square`` applied (and nothing left unused)."""
    square(model)  # first: a norm's variance may be written with Pow
    fuse_adain(model)
    prune(model)
    return model
