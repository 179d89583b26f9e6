"""Admission: one counter of the chunks replies may have in flight, and one per client.

A reply ``reserve``s room for the chunks it may have in flight before its first chunk is queued;
a reservation over ``max_queue`` is refused with a retryable ``Overloaded``, and a reply never has
more chunks queued than it reserved, so the queue stays bounded. With ``max_per_client`` set, one
client's reservations are capped too (``client_limit``).
"""

from __future__ import annotations

from speakstream.errors import Overloaded


class Admission:
    def __init__(self, max_queue: int, max_per_client: int = 0) -> None:
        self.max_queue = max_queue
        self.max_per_client = max_per_client
        """Chunks one client may have reserved at once (0: only ``max_queue`` applies)."""
        self.reserved = 0
        self._by_client: dict[str, int] = {}

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
        self.reserved += slots
        self._by_client[client] = mine + slots

    def release(self, slots: int, client: str = "") -> None:
        self.reserved = max(0, self.reserved - slots)
        left = self._by_client.get(client, 0) - slots
        if left > 0:
            self._by_client[client] = left
        else:
            self._by_client.pop(client, None)
