"""All server settings in one frozen dataclass, read from the environment in one place.

Every field can be set as ``SPEAKSTREAM_<FIELD>`` (e.g. ``SPEAKSTREAM_MAX_SESSIONS=16``); the CLI
flags of ``speakstream serve`` override the environment. Tuples are comma-separated.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from speakstream.engine.config import EngineConfig
from speakstream.engine.phonemes.languages import parse_language
from speakstream.errors import InvalidInput
from speakstream.text import ChunkPolicy

ENV_PREFIX = "SPEAKSTREAM_"
RENAMED = {"lanes": "WORKERS"}
"""Settings' old variable names, still read (``SPEAKSTREAM_WORKERS`` is ``SPEAKSTREAM_LANES``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerConfig:
    """How the speech server runs; defaults suit one machine serving a few agents."""

    host: str = "127.0.0.1"
    port: int = 8080
    api_key: str | None = None
    """When set, every route but ``/ping`` and the web page needs ``Authorization: Bearer``. An
    empty key is an error (never "auth off"); read it from a file or the environment, not argv."""
    insecure: bool = False
    """Serve on an address other than loopback without an API key (refused unless set)."""
    protect_metrics: bool = True
    """With an API key set, ``/metrics`` needs it too."""
    cors_origins: tuple[str, ...] = ()
    """Origins allowed to call the HTTP API from a browser (``*`` for any)."""
    ws_origins: tuple[str, ...] = ()
    """Origins, besides the server's own, allowed to open a WebSocket from a browser (``*``: any).
    Clients that send no ``Origin`` (not browsers) are always allowed (the API key still applies)."""
    languages: tuple[str, ...] = ()
    """Languages whose G2P loads at startup (``es``, ``zh``, ...), so their first request does
    not pay for it; the others load on first use. English always loads."""
    max_sessions: int = 64
    max_text_chars: int = 20_000
    max_audio_s: float = 1800.0
    """A text that takes at least this long to speak is refused up front (``text.length``), and a
    reply that makes more audio than this fails with ``audio_too_long`` once it gets there
    (20,000 characters at speed 0.5 would be about 40 minutes)."""
    max_frame_bytes: int = 65_536
    max_pending_requests: int = 16
    idle_timeout_s: float = 300.0
    send_timeout_s: float = 15.0
    body_timeout_s: float = 30.0
    """A request body must arrive within this (a slow sender holds a connection)."""
    text_idle_s: float = 30.0
    """An appended request that gets no text for this long is ended as a ``flush`` would end it
    (what it has is spoken; its engine slots are freed): a client that never flushes holds nothing."""
    queue_depth: int = 64
    max_client_queue: int = 0
    """Chunks one client (an address; behind a proxy, uvicorn's ``--forwarded-allow-ips`` makes it
    the real one) may have reserved at once. 0: half of ``queue_depth`` (at least one reply's) on
    an address other than loopback, no cap of its own on loopback. A reply past it waits for one of
    the client's replies to end as one past ``max_load`` waits for room (``overload``). Turns at the
    engine are shared per client whatever this is."""
    lanes: int = 0
    """Windows decoded at once: 0 lets the engine choose (``Engine.lanes``: 2 where the process
    may use 2 CPUs or more, by its affinity and container quota, else 1; ``engine.cpus``)."""
    lookahead: int = 2
    first_chunk_priority: bool = True
    preempt: bool = True
    """A reply's first window that finds the engine busy with another reply's later window pauses
    that window (it runs again after) instead of waiting up to a window's compute for it."""
    max_load: float = 0.8
    """The share of the engine's measured capacity (audio seconds a second) the admitted replies
    may ask for, a listener asking for one; past it a new reply is refused or waits (``overload``),
    so the admitted ones do not stall. 0: no admission by capacity."""
    overload: str = "queue"
    """A reply past ``max_load`` (or its client's ``max_client_queue``): ``queue`` (it waits for
    room, its first audio delayed, up to ``overload_wait_s``, then is refused: on a single box a
    reply ending frees room within a listener's patience) or ``refuse`` (at once, retryable: HTTP
    503 with ``Retry-After``, a WebSocket error and close 1013: behind a load balancer, another
    replica answers sooner)."""
    overload_wait_s: float = 2.0
    cache_mb: int = 64
    """Audio of whole chunks kept to answer a repeat with no engine time (MB of samples, about
    5.5 minutes of speech at 64; 0: off). Keyed by everything that changes the sound."""
    data_dir: Path | None = field(default_factory=lambda: data_home())
    """The one directory of what the server keeps across restarts (pronunciation dictionaries
    made through the API, in ``dictionaries/``; saved voices, in ``voices/``; optimised weights
    for a CPU the image was not built on, in ``optimized/``): a deployment mounts a volume here.
    Not writable: the server starts read-only, with what it finds there, and refuses changes
    with ``read_only_store`` (507).
    Empty: nothing kept (in memory only)."""
    data_required: bool = False
    """Exit at start, with the reason, when ``data_dir`` cannot be written (a deployment that
    mounted a volume for it would rather be restarted than serve read-only)."""
    lexicons_dir: Path | None = None
    """PLS (``.pls``/``.xml``) or JSON rule files loaded at startup as read-only dictionaries,
    each with its file's name as id: for deployments that manage pronunciations as files."""
    max_dictionaries: int = 500
    max_dictionary_rules: int = 5_000
    voices_dir: Path | None = None
    """Saved voices as JSON files (``{"blend", "speed"?, "language"?, ...}``, named after the
    file) loaded at startup, read-only: for deployments that manage their voices as files."""
    max_saved_voices: int = 200
    turn_pause_s: float = 0.3
    """Silence between two turns of a dialogue (ElevenLabs' text-to-dialogue)."""
    max_turns: int = 500
    """Turns a dialogue may have."""
    audio_frame_bytes: int = 16_384
    voice: str = "af_heart"
    voice_map: tuple[str, ...] = ()
    """Voice ids of other services as ours, ``their_id=our_voice`` (the ElevenLabs and Cartesia
    dialects): a deployment keeps its clients' ids. Our own voice names work as ids without it."""
    speed: float = 1.0
    format: str = "pcm"
    grace_s: float = 5.0
    fake_engine: bool = False
    """Serve a tone-generating fake engine (protocol development without the model)."""
    model_dir: Path | None = None
    graph: str = "fast"
    decoder: str = "auto"
    """The fast graph's decoder: ``mixed`` (partly int8, faster on a CPU), ``float``, or ``auto``
    (``mixed`` on the CPU provider, else ``float``; ``EngineConfig.decoder``)."""
    crowded_decoder: str = "auto"
    """The decoder of a reply's opening while more replies wait for theirs than there are lanes:
    ``int8``, ``same`` (``decoder``), or ``auto`` (``int8`` beside ``mixed``;
    ``EngineConfig.crowded_decoder``)."""
    intra_op_threads: int = 0
    spin_threads: bool = False
    share_weights: bool = True
    """Every engine session reads one set of weights and one activation arena (``EngineConfig``)."""
    batch: int = 0
    """The most windows of different sessions decoded in one run (0: one a run; ``EngineConfig.batch``):
    for a GPU; on a CPU it loses."""
    policy: ChunkPolicy = field(default_factory=ChunkPolicy)

    def __post_init__(self) -> None:
        if self.overload not in ("refuse", "queue"):
            raise InvalidInput(f"overload must be refuse or queue, not {self.overload!r}", code="invalid_config")
        if self.api_key is not None and not self.api_key.strip():
            raise InvalidInput("the API key is empty (leave it unset for no key)", code="invalid_config")
        for language in self.languages:
            parse_language(language)  # an unknown one is an error at startup, not at the first request

    @property
    def admission_wait_s(self) -> float:
        """How long a reply past ``max_load`` waits for room (``overload``): 0 when it is refused at once."""
        return self.overload_wait_s if self.overload == "queue" else 0.0

    @property
    def client_queue_cap(self) -> int:
        """``max_client_queue`` as it applies (0: none); see there."""
        if self.max_client_queue or _loopback(self.host):
            return self.max_client_queue
        return max(self.queue_depth // 2, self.lookahead + 1)

    def exposure_problem(self) -> str | None:
        """Why serving as configured would expose the server, or None."""
        if self.api_key or self.insecure or _loopback(self.host):
            return None
        return (
            f"refusing to serve on {self.host} without an API key: anyone who can reach it could use it. "
            "Set SPEAKSTREAM_API_KEY or --api-key-file, or pass --insecure if that is what you want."
        )

    def mapped_voice(self, voice_id: str) -> str:
        """The voice a dialect's ``voice_id`` names (through ``voice_map``, else itself)."""
        for pair in self.voice_map:
            theirs, _, ours = pair.partition("=")
            if theirs.strip() == voice_id and ours.strip():
                return ours.strip()
        return voice_id

    def engine_config(self) -> EngineConfig:
        return EngineConfig(
            model_dir=self.model_dir,
            graph=self.graph,
            decoder=self.decoder,
            crowded_decoder=self.crowded_decoder,
            intra_op_threads=self.intra_op_threads,
            lanes=self.lanes,
            spin_threads=self.spin_threads,
            share_weights=self.share_weights,
            batch=self.batch,
            weights_cache=self.data_dir / "optimized" if self.data_dir else None,
            languages=self.languages,
        )

    def limits(self) -> dict[str, float | int]:
        return {
            "max_text_chars": self.max_text_chars,
            "max_frame_bytes": self.max_frame_bytes,
            "max_pending_requests": self.max_pending_requests,
            "idle_timeout_s": self.idle_timeout_s,
            "text_idle_s": self.text_idle_s,
        }

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> ServerConfig:
        """Defaults, then ``SPEAKSTREAM_*`` variables, then ``overrides`` (ignoring None)."""
        environ = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            old = RENAMED.get(f.name)
            raw = environ.get(ENV_PREFIX + f.name.upper(), environ.get(ENV_PREFIX + old) if old else None)
            if raw is not None and f.name != "policy":
                values[f.name] = _parse(f.name, str(f.type), raw)
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)


def data_home() -> Path:
    """``$XDG_DATA_HOME/speakstream`` (``~/.local/share/speakstream``): ``data_dir`` unless set."""
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share").expanduser() / "speakstream"


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _parse(name: str, kind: str, raw: str) -> Any:
    if name == "api_key":
        return raw  # an empty key stays empty, and is refused
    try:
        if "tuple" in kind:
            return tuple(p.strip() for p in raw.split(",") if p.strip())
        if "bool" in kind:
            return raw.strip().lower() in ("1", "true", "yes", "on")
        if "Path" in kind:
            return Path(raw).expanduser() if raw else None
        if "int" in kind:
            return int(raw)
        if "float" in kind:
            return float(raw)
    except ValueError as exc:
        raise InvalidInput(f"{ENV_PREFIX}{name.upper()}={raw!r} is not a valid {kind}", code="invalid_config") from exc
    return raw or None if "None" in kind else raw
