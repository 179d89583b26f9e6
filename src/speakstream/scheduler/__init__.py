"""One scheduler owns the engine and decides which piece of work runs next.

The unit of work is one step of a chunk's synthesis: reading its text, or one window of the
decoder, so a long chunk never holds the engine for long. The scheduler hands the engine the load
with each step, as plain data (``types.Load``); nothing on an engine thread reads its state.

- ``admission``: who gets in (room for a reply's chunks in flight, per server and per client);
- ``turns``: fairness between clients, then their sessions, one window each;
- ``priority``: first windows first, and a later window paused for one when that is worth it;
- ``core``: the workers that run each turn on a thread and deliver its piece.
"""

from speakstream.scheduler.core import Scheduler
from speakstream.scheduler.job import Job, PlaybackClock

__all__ = ["Job", "PlaybackClock", "Scheduler"]
