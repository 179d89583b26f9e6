"""Cores: an inference alone runs on the wide copy (every core); one that starts beside it, on a
narrow copy (a share of them); a long window's two halves alone run at once, on two shares."""

import threading
from typing import Any

import pytest

from speakstream.engine.cancel import CancelToken, SynthesisCancelled
from speakstream.engine.runtime.cores import Cores, run, run_pair
from speakstream.errors import EngineError


class Session:
    """Stands in for an ONNX Runtime session: records the inferences it runs."""

    def __init__(self, name: str, gate: threading.Event | None = None) -> None:
        self.name, self.gate, self.runs = name, gate, 0

    def run(self, outputs: Any, feed: Any, options: Any) -> list[str]:
        self.runs += 1
        if self.gate is not None:
            assert self.gate.wait(10)
        return [self.name]


def test_alone_wide_beside_another_narrow_and_wide_again_when_none_is_free() -> None:
    cores = Cores()
    front = cores.copies("front wide", ["front narrow"])
    decoder = cores.copies("decoder wide", ["decoder narrow 1", "decoder narrow 2"])
    with decoder.take() as first:
        assert first == "decoder wide" and cores.running == 1
        with front.take() as second, decoder.take() as third, decoder.take() as fourth, front.take() as fifth:
            lent = (second, third, fourth, fifth)
            assert lent == ("front narrow", "decoder narrow 2", "decoder narrow 1", "front wide")
            assert cores.running == 5
    assert cores.running == 0
    with decoder.take() as alone:
        assert alone == "decoder wide"
    assert sorted(decoder.free) == ["decoder narrow 1", "decoder narrow 2"] and front.free == ["front narrow"]


def test_alone_but_with_another_window_about_to_start_it_takes_a_narrow_lane() -> None:
    cores = Cores()
    decoder = cores.copies("wide", ["narrow 1", "narrow 2"])
    with decoder.take(shared=True) as first:
        assert first == "narrow 2"  # the other window starts a few ms later: both share the cores
        with decoder.take(shared=True) as second:
            assert second == "narrow 1"
    with decoder.take() as alone:
        assert alone == "wide"
    with decoder.take(shared=True), decoder.take(shared=True), decoder.take(shared=True) as third:
        assert third == "wide"  # no narrow one free: every inference still runs
    assert sorted(decoder.free) == ["narrow 1", "narrow 2"]


def test_a_lane_is_returned_when_its_inference_fails() -> None:
    cores = Cores()
    decoder = cores.copies("wide", ["narrow"])

    def fail_beside() -> None:
        with decoder.take() as lent:
            assert lent == "narrow"
            raise RuntimeError("inference failed")

    with decoder.take(), pytest.raises(RuntimeError, match="inference failed"):
        fail_beside()
    assert cores.running == 0 and decoder.free == ["narrow"]


def test_run_takes_a_lane_per_inference_and_a_waiting_one_holds_none() -> None:
    gate = threading.Event()
    cores = Cores()
    wide, narrow = Session("wide", gate), Session("narrow")
    sessions = cores.copies(wide, [narrow])
    results: list[Any] = []
    worker = threading.Thread(target=lambda: results.append(run(sessions, None, {}, None)[0]))
    worker.start()
    try:
        while wide.runs == 0:
            threading.Event().wait(0.01)
        assert run(sessions, None, {}, None)[0] == ["narrow"]  # beside the one running
        waiting = CancelToken()
        waiting.pause()
        paused = threading.Thread(target=lambda: results.append(run(sessions, None, {}, waiting)[0]))
        paused.start()
        threading.Event().wait(0.1)
        assert cores.running == 1  # the paused inference waits for its turn without a lane
    finally:
        gate.set()
        worker.join(10)
    waiting.resume()
    paused.join(10)
    assert [r[0] for r in results] == ["wide", "wide"]  # the paused one ran after, alone: on every core
    assert cores.running == 0 and narrow.runs == 1


def test_a_pair_takes_two_narrow_lanes_only_when_nothing_else_runs_or_is_about_to() -> None:
    cores = Cores()
    decoder = cores.copies("wide", ["narrow 1", "narrow 2"])
    with decoder.take_pair() as pair:
        assert sorted(pair or ()) == ["narrow 1", "narrow 2"] and cores.running == 2
        with decoder.take() as beside:
            assert beside == "wide"  # no narrow one free: it still runs
    assert cores.running == 0 and sorted(decoder.free) == ["narrow 1", "narrow 2"]
    with decoder.take() as running, decoder.take_pair() as pair:
        assert running == "wide" and pair is None  # another inference runs
    with decoder.take_pair(shared=True) as pair:
        assert pair is None  # another window is about to start
    with cores.copies("wide", ["narrow"]).take_pair() as pair:
        assert pair is None  # one narrow session: no pair
    assert cores.running == 0


class Half(Session):
    """A narrow session whose run meets the other half's (a barrier: both must run at once), and,
    with ``hold``, runs until its terminate flag is set, as ONNX Runtime does."""

    def __init__(self, name: str, barrier: threading.Barrier, hold: bool = False, fail: bool = False) -> None:
        super().__init__(name)
        self.barrier, self.hold, self.fail = barrier, hold, fail

    def run(self, outputs: Any, feed: Any, options: Any) -> list[str]:
        self.runs += 1
        self.barrier.wait(10)
        while self.hold and not options.terminate:
            threading.Event().wait(0.005)
        if options.terminate:
            raise RuntimeError("Fail: terminate flag is set")
        if self.fail:
            raise RuntimeError("broken half")
        return [f"{self.name} {feed}"]


def test_run_pair_runs_both_halves_at_once_and_returns_them_in_order() -> None:
    barrier = threading.Barrier(2)
    cores = Cores()
    sessions = cores.copies(Session("wide"), [Half("b", barrier), Half("a", barrier)])
    (first, second), seconds = run_pair(sessions, None, ("one", "two"), None)
    assert sorted([first[0], second[0]]) == ["a one", "b two"] and seconds is not None
    assert cores.running == 0 and len(sessions.free) == 2


def test_run_pair_runs_the_halves_one_after_the_other_when_another_inference_runs() -> None:
    cores = Cores()
    wide = Session("wide")
    sessions = cores.copies(wide, [Session("narrow 1"), Session("narrow 2")])
    with cores.copies("front", []).take():  # the front of another reply runs
        (first, second), seconds = run_pair(sessions, None, ("one", "two"), None)
    assert seconds is None and first == second == ["narrow 2"]  # each beside the running front
    assert cores.running == 0


def _held_pair(token: CancelToken) -> tuple[Cores, list[Half], Any, list[Any]]:
    """A pair running on two held halves in a worker thread (both started), and what it returned
    or raised once the thread ends."""
    barrier = threading.Barrier(2)
    cores = Cores()
    held = [Half("b", barrier, hold=True), Half("a", barrier, hold=True)]
    sessions = cores.copies(Session("wide"), held)
    ended: list[Any] = []

    def pair() -> None:
        try:
            ended.append(run_pair(sessions, None, ("one", "two"), token))
        except BaseException as exc:
            ended.append(exc)

    worker = threading.Thread(target=pair)
    worker.start()
    while token.running() is None or sum(h.runs for h in held) < 2:
        threading.Event().wait(0.005)
    return cores, held, worker, ended


def test_a_pause_stops_both_halves_and_the_pair_runs_again_once_resumed() -> None:
    token = CancelToken()
    cores, held, worker, ended = _held_pair(token)
    token.pause()
    while cores.running:
        threading.Event().wait(0.005)  # both halves stopped, their cores returned
    for half in held:
        half.hold = False
    token.resume()
    worker.join(10)
    (((first, second), _),) = ended
    assert first[0].endswith(" one") and second[0].endswith(" two") and first != second
    assert [h.runs for h in held] == [2, 2]
    assert cores.running == 0


class SlowToStop(Session):
    """Runs until its terminate flag is set, then stops only when ``stopped`` opens (a long kernel
    on a busy core: ONNX Runtime reads the flag between kernels); its second run completes."""

    def __init__(self) -> None:
        super().__init__("slow")
        self.stopping, self.stopped = threading.Event(), threading.Event()

    def run(self, outputs: Any, feed: Any, options: Any) -> list[str]:
        self.runs += 1
        if self.runs > 1:
            return [self.name]
        while not options.terminate:
            threading.Event().wait(0.005)
        self.stopping.set()
        assert self.stopped.wait(10)
        raise RuntimeError("Fail: Exiting due to terminate flag being set to true.")


def test_an_inference_that_stops_after_its_pause_has_ended_runs_again() -> None:
    """The first window it paused for may end before the paused inference has stopped: it was
    stopped all the same, so it runs again (it does not fail its reply)."""
    token, session, ended = CancelToken(), SlowToStop(), []

    def infer() -> None:
        try:
            ended.append(run(session, None, {}, token))
        except BaseException as exc:
            ended.append(exc)

    worker = threading.Thread(target=infer)
    worker.start()
    while token.running() is None:
        threading.Event().wait(0.005)
    token.pause()
    assert session.stopping.wait(10)
    token.resume()  # the first window is done; this inference has not stopped yet
    session.stopped.set()
    worker.join(10)
    ((outputs, _),) = ended
    assert outputs == ["slow"] and session.runs == 2


def test_a_cancel_stops_both_halves_and_a_failing_half_fails_the_pair() -> None:
    token = CancelToken()
    cores, _, worker, ended = _held_pair(token)
    token.cancel()
    worker.join(10)
    assert isinstance(ended[0], SynthesisCancelled) and cores.running == 0
    barrier = threading.Barrier(2)
    broken = cores.copies(Session("wide"), [Half("b", barrier, fail=True), Half("a", barrier)])
    with pytest.raises(EngineError, match="inference failed"):
        run_pair(broken, None, ("one", "two"), None)
    assert cores.running == 0 and len(broken.free) == 2


CPU, CUDA = ["CPUExecutionProvider"], ["CUDAExecutionProvider", "CPUExecutionProvider"]


@pytest.mark.parametrize(
    ("config", "providers", "expected"),
    [
        ({"intra_op_threads": 2}, CPU, 2),  # the default on a CPU with 2 cores or more
        ({"intra_op_threads": 16}, CPU, 2),
        ({"intra_op_threads": 1}, CPU, 1),  # one core: nothing to share
        ({"intra_op_threads": 2}, CUDA, 1),  # a GPU: no narrow copies
        ({"intra_op_threads": 2, "graph": "timed"}, CPU, 1),  # a whole graph: no narrow copies
        ({"intra_op_threads": 1, "lanes": 3}, CPU, 3),  # set: as set
        ({"lanes": 1}, CPU, 1),
    ],
)
def test_two_lanes_by_default_on_a_cpu_with_cores_to_share(
    config: dict[str, Any], providers: list[str], expected: int
) -> None:
    from speakstream.engine.config import EngineConfig, engine_lanes

    assert engine_lanes(EngineConfig(**config), providers) == expected


@pytest.mark.parametrize(
    ("requested", "providers", "expected"),
    [("auto", CPU, "mixed"), ("auto", CUDA, "float"), ("float", CPU, "float"), ("mixed", CUDA, "mixed")],
)
def test_the_int8_decoder_is_the_default_on_the_cpu_only(requested: str, providers: list[str], expected: str) -> None:
    from speakstream.engine.config import pick_decoder

    assert pick_decoder(requested, providers) == expected


@pytest.mark.parametrize(
    ("requested", "decoder", "expected"),
    [("auto", "mixed", "int8"), ("auto", "float", None), ("same", "mixed", None), ("mixed", "mixed", None)],
)
def test_a_crowded_opening_gets_the_int8_decoder_where_the_mixed_one_runs(
    requested: str, decoder: str, expected: str | None
) -> None:
    from speakstream.engine.config import pick_crowded_decoder

    assert pick_crowded_decoder(requested, decoder) == expected
