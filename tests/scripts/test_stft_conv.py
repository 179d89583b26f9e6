"""The generator's STFT as a convolution (``scripts/stft_conv.py``, measured, not applied): the
same spectrum, and a real FFT's phases where the export's kernel leaves rounding noise."""

from __future__ import annotations

import copy
import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from speakstream.engine.kokoro import KokoroEngine
from speakstream.engine.model.fusion import SCOPE
from tests.engine.model.test_fusion import decoder_input, ort_session, run

_SPEC = importlib.util.spec_from_file_location("stft_conv", Path(__file__).parents[2] / "scripts" / "stft_conv.py")
assert _SPEC is not None and _SPEC.loader is not None
stft_conv = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(stft_conv)


FFT, HOP = 20, 5
HANN = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(FFT) / FFT)).astype(np.float32)  # the generator's


def stft_graph(signal: list[Any], *, window_input: bool = False) -> onnx.ModelProto:
    """One ``STFT`` under the rewritten prefix, of a ``signal``-shaped input, 20-sample frames."""
    window = helper.make_tensor_value_info("window", TensorProto.FLOAT, [FFT])
    inits = [
        numpy_helper.from_array(np.array(HOP, dtype=np.int64), "step"),
        numpy_helper.from_array(np.array(FFT, dtype=np.int64), "length"),
        *([] if window_input else [numpy_helper.from_array(HANN, "window")]),
    ]
    node = helper.make_node("STFT", ["x", "step", "window", "length"], ["y"], name=SCOPE + "STFT", onesided=1)
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, signal), *([window] if window_input else [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def real_fft(signal: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The windowed frames' DFT as a real FFT computes it (numpy's pocketfft, as ``torch.stft``
    on the CPU): [frames, bins], complex."""
    frames = np.lib.stride_tricks.sliding_window_view(signal.ravel(), FFT)[::HOP]
    return np.asarray(np.fft.rfft(frames * HANN, axis=-1))


def assert_phases_agree(stft: np.ndarray[Any, Any], signal: np.ndarray[Any, Any]) -> None:
    """``stft`` ([1, frames, bins, 2]) has the real FFT's phase wherever the bin is audible: pi
    and -pi are the same angle but not the same value, and the generator reads the value."""
    expected = real_fft(signal)
    phase = np.arctan2(stft[0, ..., 1], stft[0, ..., 0])
    audible = np.abs(expected) > 1e-5 * np.abs(expected).max()
    assert audible.mean() > 0.5  # not a test of nothing (silence and unvoiced frames are not audible)
    assert not np.any((np.abs(phase - np.angle(expected)) > 1.0) & audible)


@pytest.mark.parametrize("signal", [[1, "samples"], [1, "samples", 1]], ids=["[B, L]", "[B, L, 1]"])
def test_the_stft_as_a_convolution_computes_the_same_spectrum(signal: list[Any]) -> None:
    """The same values within float rounding, and the real FFT's exact zeros (imaginary parts of
    the DC and Nyquist bins), so the same phases as ``torch.stft`` gives."""
    rng = np.random.default_rng(1)
    samples = rng.standard_normal(2000).astype(np.float32)
    samples[600:900] = -0.3  # a constant stretch: the DC bin negative, the others near zero
    x = samples.reshape((1, 2000, 1)[: len(signal)])
    before = run(stft_graph(signal), {"x": x})
    model = stft_graph(signal)
    assert stft_conv.stft_as_convolution(model) == 1
    assert [n.op_type for n in model.graph.node].count("STFT") == 0
    after = run(model, {"x": x})
    assert after.shape == before.shape == (1, (2000 - FFT) // HOP + 1, FFT // 2 + 1, 2)
    np.testing.assert_allclose(after, before, atol=1e-5 * np.abs(before).max())  # float rounding (the kernel's)
    assert not after[0, :, [0, FFT // 2], 1].any()
    assert_phases_agree(after, x)


def test_a_complex_signal_or_a_computed_window_is_left_alone() -> None:
    assert stft_conv.stft_as_convolution(stft_graph([1, "samples", 2])) == 0
    assert stft_conv.stft_as_convolution(stft_graph([1, "samples"], window_input=True)) == 0


@pytest.mark.model
@pytest.mark.slow
def test_the_stft_of_the_real_decoder_as_a_convolution_has_a_real_ffts_phases(kokoro: KokoroEngine) -> None:
    """In the real decoder, the convolution's spectrum of the harmonic source is the export's
    ``STFT``'s within float rounding, and its phases are a real FFT's (PyTorch's) on every audible
    bin: the ``STFT`` kernel's rounding gives -pi for pi on about a third of the Nyquist bins."""
    export = onnx.load(str(kokoro.assets.decoder("float")))
    stft = next(n for n in export.graph.node if n.op_type == "STFT")
    derived = copy.deepcopy(export)
    assert stft_conv.stft_as_convolution(derived) == 1
    for graph in (export, derived):
        graph.graph.output.extend(
            helper.make_tensor_value_info(name, TensorProto.FLOAT, None) for name in (stft.output[0], stft.input[0])
        )
    feed = decoder_input(kokoro, "Would you really like me to send the receipt?", "am_michael")
    (_, expected, signal), (_, spectrum, same_signal) = (ort_session(g).run(None, feed) for g in (export, derived))
    np.testing.assert_array_equal(same_signal, signal)
    np.testing.assert_allclose(spectrum, expected, atol=1e-5 * np.abs(expected).max())
    assert_phases_agree(spectrum, signal)
