"""The generator's STFT as one strided convolution: measured against the export's by
``scripts/ab_stft.py``, not applied to the derived graphs (``docs/design.md`` says why).

Kept here, outside the package, for whoever can compare it with the PyTorch model.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from speakstream.engine.model.fusion import SCOPE, value_shapes
from speakstream.engine.model.graph import Index


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
    shapes = value_shapes(model)
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
