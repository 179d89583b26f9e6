"""The graph index the rewrites share, and the derived graphs against the original export: same
model, same speech."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from speakstream.engine.kokoro import KokoroEngine
from speakstream.engine.model.assets import GRAPHS
from speakstream.engine.model.feeds import front_feed
from speakstream.engine.model.graph import Index, prune
from speakstream.engine.phonemes.phonemizer import windows
from speakstream.engine.windows.planner import FRAME_SAMPLES


def small() -> onnx.ModelProto:
    """y = (x * x) + c, z = Neg(x), with c a ``Constant`` node and w an initializer."""
    nodes = [
        helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(np.array([3.0], np.float32))),
        helper.make_node("Mul", ["x", "x"], ["x2"], name="square"),
        helper.make_node("Add", ["x2", "c"], ["y"], name="plus"),
        helper.make_node("Neg", ["x"], ["z"], name="negate"),
    ]
    graph = helper.make_graph(
        nodes,
        "small",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2]) for n in ("y", "z")],
        [numpy_helper.from_array(np.array([1.0, 2.0], np.float32), "w")],
    )
    return helper.make_model(graph)


def test_the_index_lists_a_node_once_per_tensor_it_reads() -> None:
    g = Index(small())
    assert [n.name for n in g.consumers["x"]] == ["square", "negate"]
    assert g.only("x2", "Add").name == "plus"
    assert g.only("x2", "Mul") is None and g.only("x") is None
    with pytest.raises(ValueError, match="x feeds 2 nodes"):
        g.sole("x")
    assert g.producer["y"].name == "plus" and g.other(g.producer["y"], "x2") == "c"


def test_the_index_reads_initializers_and_constant_nodes_not_computed_tensors() -> None:
    g = Index(small())
    np.testing.assert_array_equal(g.array("w"), [1.0, 2.0])
    np.testing.assert_array_equal(g.array("c"), [3.0])
    assert g.constant("x2") is None
    with pytest.raises(ValueError, match="x2 is not a constant"):
        g.array("x2")


def test_a_rebuild_splices_in_place_and_drops_the_dead() -> None:
    """A node replaced by two keeps its place (the order stays topological); a dead node goes."""
    model = small()
    g = Index(model)
    square, plus = g.producer["x2"], g.producer["y"]
    cube = [
        helper.make_node("Mul", ["x", "x"], ["xx"], name="first"),
        helper.make_node("Mul", ["xx", "x"], ["y"], name="second"),
    ]
    g.rebuild({id(plus): cube}, {id(square)}, [numpy_helper.from_array(np.array([0.0], np.float32), "extra")])
    assert [n.name for n in model.graph.node] == ["", "first", "second", "negate"]
    assert [i.name for i in model.graph.initializer] == ["w", "extra"]
    prune(model)
    assert [n.name for n in model.graph.node] == ["first", "second", "negate"]
    assert not model.graph.initializer


@pytest.fixture(scope="module")
def outputs(kokoro: KokoroEngine) -> dict[str, list[Any]]:
    """Each graph run on the same tokens, style and speed."""
    import onnxruntime as ort

    part = windows(kokoro.phonemizer.phonemize("Thanks for waiting, I found your booking."))[0]
    feed = front_feed(part.tokens, kokoro.voice_bank.style("af_heart", len(part.tokens)), 1.0)
    runs = {}
    for graph in GRAPHS:
        session = ort.InferenceSession(str(kokoro.assets.graph(graph)), providers=["CPUExecutionProvider"])
        runs[graph] = session.run(None, feed)
    return runs


@pytest.mark.slow
def test_the_timed_graph_is_the_original_plus_durations(outputs: dict[str, list[Any]]) -> None:
    original, timed = outputs["original"], outputs["timed"]
    assert len(original) == 1 and len(timed) == 2
    np.testing.assert_array_equal(timed[0], original[0])
    assert timed[1].sum() * FRAME_SAMPLES == timed[0].size  # one duration per token, in 600-sample frames


@pytest.mark.slow
def test_the_fast_graph_speaks_the_same_audio(outputs: dict[str, list[Any]]) -> None:
    original, fast = outputs["original"][0].ravel(), outputs["fast"][0].ravel()
    np.testing.assert_array_equal(outputs["fast"][1], outputs["timed"][1])  # the front is untouched
    assert fast.size == original.size
    snr_db = 10 * np.log10(np.sum(original**2) / np.sum((fast - original) ** 2))
    assert snr_db > 12.0  # measured 18 dB: float activations instead of int8-quantised ones
