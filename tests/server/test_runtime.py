"""What a running server owns: an experiment's arm runs on a scheduler of its own config."""

from __future__ import annotations

import asyncio
import dataclasses

from speakstream.config import ServerConfig
from speakstream.engine.fake import FakeEngine
from speakstream.server.runtime import Runtime


async def test_an_experiments_arm_runs_on_a_scheduler_built_from_its_config_and_the_servers_comes_back() -> None:
    """``Runtime.configured``: inside, a scheduler made from the arm's config (here: every reply
    admitted, no preemption) serves the replies; after, one made from the server's own again."""
    runtime = Runtime(ServerConfig(fake_engine=True), FakeEngine)
    await runtime.start()
    try:
        await asyncio.wait_for(runtime.wait_ready(), 10)
        served = runtime.require_scheduler()
        assert served.admission.capacity is not None and served.priority.preempt
        async with runtime.configured(dataclasses.replace(runtime.config, max_load=0, preempt=False)):
            arm = runtime.require_scheduler()
            assert arm is not served and arm.running and not served.running
            assert arm.admission.capacity is None and not arm.priority.preempt and runtime.config.max_load == 0
            reply = runtime.reply("s", None, runtime.settings(runtime.defaults))
            await reply.speak("Spoken by the arm.")
            assert [out async for out in reply.outputs()]
        back = runtime.require_scheduler()
        assert back not in (served, arm) and back.running and back.priority.preempt
        assert back.admission.capacity is not None and runtime.config.max_load == 0.8
    finally:
        await runtime.stop()
