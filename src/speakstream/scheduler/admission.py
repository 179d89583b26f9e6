"""Admission: who gets in, so that the queue stays bounded and admitted listeners do not stall.

A reply ``reserve``s room for the chunks it may have in flight before its first chunk is queued.
It is refused with a retryable ``Overloaded`` when the reservation passes ``max_queue`` chunks,
its client's ``max_per_client``, or when one more listener would ask for more than ``max_load`` of
what the engine makes (``capacity``): a reply admitted into a stall makes every admitted listener
stall. ``reserve_waiting`` waits for room instead (the client's own too), up to a deadline. One
reply is always admitted when none is, however slow the engine.

The capacity is shared out by client. A client refused for capacity is waiting while it asks
again soon enough; while others hold replies or wait, a client gets at most its share of the
listeners the capacity allows, and room that frees goes first to the client that has waited
longest with nothing admitted: one client asking again the moment a reply ends (a flood of
parallel requests) cannot keep everyone else out.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Callable

from speakstream.errors import Overloaded

RETRY_AFTER_S = 1.0
"""What a reply refused for capacity is told to wait before it tries again."""
WAITING_S = 1.5
"""A client refused for capacity is waiting while it asks again within this (its Retry-After and
some); then it is forgotten, so a client that gave up holds nobody back."""


class Admission:
    def __init__(
        self,
        max_queue: int,
        max_per_client: int = 0,
        *,
        capacity: Callable[[], float] | None = None,
        max_load: float = 0.8,
    ) -> None:
        self.max_queue = max_queue
        self.max_per_client = max_per_client
        """Chunks one client may have reserved at once (0: only ``max_queue`` applies)."""
        self.capacity = capacity
        """Audio seconds a second the engine makes (None: no limit by capacity)."""
        self.max_load = max_load
        """The share of ``capacity`` the admitted replies may ask for."""
        self.reserved = 0
        self.replies = 0
        """Replies admitted and not yet ended: each listener asks for an audio second a second."""
        self.refused = 0
        """Replies refused for capacity."""
        self._by_client: dict[str, int] = {}
        self._replies_of: dict[str, int] = {}
        self._waiting: dict[str, tuple[float, float]] = {}
        """Clients refused for capacity: when first in this wait, and when last."""
        self._room = asyncio.Event()

    def reserve(self, slots: int, client: str = "") -> None:
        """Room for a reply's chunks in flight, or a retryable ``Overloaded``."""
        if self.reserved + slots > self.max_queue:
            raise Overloaded(f"the server is at its limit of {self.max_queue} queued chunks; retry shortly")
        mine = self._by_client.get(client, 0)
        if self.max_per_client and mine + slots > self.max_per_client:
            raise Overloaded(
                f"this client is at its limit of {self.max_per_client} queued chunks; retry when a reply ends",
                code="client_limit",
            )
        if not self.has_room(client):
            self.refused += 1
            now = time.monotonic()
            self._waiting[client] = (self._waiting.get(client, (now, now))[0], now)
            raise Overloaded(
                "the server is at its capacity: another listener would make the admitted ones stall; "
                f"retry in {RETRY_AFTER_S:g} s or on another replica"
            )
        self.reserved += slots
        self.replies += 1
        self._by_client[client] = mine + slots
        self._replies_of[client] = self._replies_of.get(client, 0) + 1
        self._waiting.pop(client, None)

    async def reserve_waiting(self, slots: int, client: str, wait_s: float) -> float:
        """``reserve``, waiting up to ``wait_s`` for room (by capacity, or in the client's own share
        as its replies end); the seconds waited. A client past its share waits rather than ask
        again the moment it is refused, each refusal work on the cores the listeners need."""
        started = time.perf_counter()
        deadline = started + wait_s
        while True:
            refused = self.refused
            try:
                self.reserve(slots, client)
                return time.perf_counter() - started
            except Overloaded as exc:
                left = deadline - time.perf_counter()
                if exc.code not in ("overloaded", "client_limit") or left <= 0:
                    raise
                self.refused = refused  # it waits: not refused (yet)
                self._room.clear()
                # capacity moves too: look again soon (``asyncio.timeout``: ``wait_for`` may swallow
                # a cancel that comes as it times out, and the request would go on waiting)
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(min(left, 0.25)):
                        await self._room.wait()

    def release(self, slots: int, client: str = "") -> None:
        self.reserved = max(0, self.reserved - slots)
        self.replies = max(0, self.replies - 1)
        left = self._by_client.get(client, 0) - slots
        if left > 0:
            self._by_client[client] = left
        else:
            self._by_client.pop(client, None)
        replies = self._replies_of.get(client, 0) - 1
        if replies > 0:
            self._replies_of[client] = replies
        else:
            self._replies_of.pop(client, None)
        self._room.set()

    def has_room(self, client: str = "") -> bool:
        """Whether one more listener of ``client`` fits: its turn, within ``max_load`` of the
        capacity (or the first reply) and within the client's share of it."""
        if self.capacity is None:
            return True
        waiting = self._still_waiting()
        if self._not_its_turn(client, waiting):
            return False
        if self.replies == 0:
            return True
        capacity = self.capacity()
        if math.isinf(capacity):
            return True
        allowed = self.max_load * capacity
        if self.replies + 1 > allowed:
            return False
        asking = {client, *self._replies_of, *waiting}
        return self._replies_of.get(client, 0) + 1 <= max(1.0, math.floor(allowed / len(asking)))

    def _still_waiting(self) -> dict[str, tuple[float, float]]:
        now = time.monotonic()
        for gone in [c for c, (_, last) in self._waiting.items() if now - last > WAITING_S]:
            del self._waiting[gone]
        return self._waiting

    def _not_its_turn(self, client: str, waiting: dict[str, tuple[float, float]]) -> bool:
        """Another client with nothing admitted has waited longer than ``client``: the room is its."""
        mine = waiting.get(client, (math.inf, math.inf))[0]
        return any(first < mine and c not in self._replies_of for c, (first, _) in waiting.items() if c != client)
