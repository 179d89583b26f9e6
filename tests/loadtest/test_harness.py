"""The server subprocess harness: it never leaves a process or a log file behind."""

import pytest

from speakstream.bench.process import ServerProcess

pytestmark = pytest.mark.slow


def test_a_server_that_cannot_start_raises_its_log_and_leaves_nothing() -> None:
    server = ServerProcess("--no-such-option")
    with pytest.raises(RuntimeError, match=r"(?s)exited with 2: .*no-such-option"):
        server.wait_ready(timeout=60)
    assert server.process.poll() == 2
    assert not server.log.exists()


def test_a_server_that_never_answers_is_killed() -> None:
    server = ServerProcess("--fake-engine")
    with pytest.raises(RuntimeError, match="did not become ready"):
        server.wait_ready(timeout=0)
    assert server.process.poll() is not None
    assert not server.log.exists()


def test_the_log_is_readable_while_the_server_runs_and_gone_after() -> None:
    with ServerProcess("--fake-engine") as server:
        assert server.log.exists()
    assert server.process.poll() is not None
    assert not server.log.exists()
