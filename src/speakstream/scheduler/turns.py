"""Fairness: whose chunk runs next among the sessions with work.

Turns go to clients first (an address), then to that client's sessions, one window each: a client
with twenty parallel sessions gets the engine as often as a client with one, and a long reply
cannot starve a short one. Within a session its chunks go in order.
"""

from __future__ import annotations

import contextlib
from collections import deque

from speakstream.scheduler.job import Job


class Turns:
    """The queued chunks of every session, and the order of the next turns."""

    def __init__(self) -> None:
        self._queues: dict[str, deque[Job]] = {}
        self._sessions: deque[str] = deque()
        """Sessions in the order of their next turn."""
        self._clients: deque[str] = deque()
        """Clients in the order of their next turn."""

    @property
    def queued(self) -> int:
        """Chunks waiting for (or in) synthesis."""
        return sum(len(q) for q in self._queues.values())

    @property
    def replies(self) -> int:
        """Sessions with chunks queued or in synthesis."""
        return sum(1 for queue in self._queues.values() if queue)

    @property
    def sessions(self) -> list[str]:
        return list(self._queues)

    def jobs(self) -> list[Job]:
        """Every chunk queued or in synthesis."""
        return [job for queue in self._queues.values() for job in queue]

    def add(self, job: Job) -> None:
        self._queues.setdefault(job.session_id, deque()).append(job)
        if job.session_id not in self._sessions:
            self._sessions.append(job.session_id)
        if job.client not in self._clients:
            self._clients.append(job.client)

    def ready(self) -> list[Job]:
        """Each session's next chunk for the engine: nothing runs it, its reply has room for a
        piece, and it is not answered from the cache."""
        return [
            q[0]
            for s in self._sessions
            if (q := self._queues.get(s)) and not q[0].running and not q[0].pieces.full() and q[0].cached is None
        ]

    def head(self, session_id: str) -> Job | None:
        """The session's next chunk (None: it has none queued)."""
        queue = self._queues.get(session_id)
        return queue[0] if queue else None

    def next_of(self, ready: list[Job]) -> Job | None:
        """The first of ``ready`` whose client's turn is next."""
        if not ready:
            return None
        turn = {client: i for i, client in enumerate(self._clients)}
        return min(ready, key=lambda job: turn.get(job.client, len(turn)))  # min keeps the first of equals

    def had_turn(self, job: Job) -> None:
        """``job`` had its turn: its session and its client to the back of the line (the client out
        of it when it has nothing queued)."""
        if job.session_id in self._sessions:
            self._sessions.remove(job.session_id)
            self._sessions.append(job.session_id)
        with contextlib.suppress(ValueError):
            self._clients.remove(job.client)
        if self._has_work(job.client):
            self._clients.append(job.client)

    def cancel(self, session_id: str, request_id: str | None = None) -> list[Job]:
        """A session's queued chunks (one request's, with ``request_id``), taken out of the line."""
        queue = self._queues.get(session_id)
        if not queue:
            return []
        dropped = [j for j in queue if request_id in (None, j.request_id)]
        for job in dropped:
            queue.remove(job)
        if not queue:
            self._forget(session_id, dropped[0].client if dropped else None)
        return dropped

    def drop(self, job: Job) -> None:
        """``job`` is done: out of its session's queue."""
        queue = self._queues.get(job.session_id)
        if queue and job in queue:
            queue.remove(job)
            if not queue:
                self._forget(job.session_id, job.client)

    def _forget(self, session_id: str, client: str | None) -> None:
        self._queues.pop(session_id, None)
        with contextlib.suppress(ValueError):
            self._sessions.remove(session_id)
        if client is not None and not self._has_work(client):
            with contextlib.suppress(ValueError):
                self._clients.remove(client)

    def _has_work(self, client: str) -> bool:
        return any(q and q[0].client == client for q in self._queues.values())
