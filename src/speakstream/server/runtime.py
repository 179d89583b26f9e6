"""What a running server owns: the engine, its scheduler, metrics, and the open sessions.

The engine loads in a background task after startup, so ``/ping`` can answer 503 until the model
is loaded and a trial synthesis has run. ``stop`` cancels and awaits everything it started.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from concurrent.futures import Executor
from dataclasses import replace
from typing import Protocol

from speakstream.config import ServerConfig
from speakstream.engine.base import Engine
from speakstream.engine.voices import VOICE_ALIASES, with_language
from speakstream.errors import Overloaded, SpeakstreamError, StoreUnavailable
from speakstream.protocol import Options
from speakstream.scheduler import Job, Scheduler
from speakstream.scheduler.cache import AudioCache, CacheStats
from speakstream.server.dictionaries import DictionaryStore
from speakstream.server.metrics import Metrics
from speakstream.server.reading import ReplySettings, resolved
from speakstream.server.reply import Reply
from speakstream.server.saved_voices import VoiceStore
from speakstream.server.tracing import Tracing
from speakstream.types import AudioPiece

log = logging.getLogger("speakstream.server")
EngineFactory = Callable[[], Engine]


class Closable(Protocol):
    async def shutdown(self, reason: str) -> None: ...


class Runtime:
    def __init__(self, config: ServerConfig, engine_factory: EngineFactory) -> None:
        self.config = config
        self.metrics = Metrics()
        self.engine: Engine | None = None
        self.scheduler: Scheduler | None = None
        self.sessions: set[Closable] = set()
        self.load_error: SpeakstreamError | None = None
        self.ready_at: float | None = None
        self._factory = engine_factory
        self._loader: asyncio.Task[None] | None = None
        self._ids = itertools.count(1)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.instance: str | None = None
        """Which replica this is, where there are several (``/ping`` says it)."""
        self.metrics.ready.set_function(lambda: float(self.ready and self.healthy))
        self.tracing = Tracing.from_env()
        """Traces per reply, when the ``OTEL_*`` variables ask for them."""
        self.dictionaries = DictionaryStore.open(
            config.data_dir / "dictionaries" if config.data_dir else None,
            config.lexicons_dir,
            max_dictionaries=config.max_dictionaries,
            max_rules=config.max_dictionary_rules,
        )
        self.voices = VoiceStore.open(
            config.data_dir / "voices" if config.data_dir else None,
            config.voices_dir,
            max_voices=config.max_saved_voices,
        )
        reason = self.dictionaries.read_only or self.voices.read_only
        if config.data_required and reason is not None:
            raise StoreUnavailable(f"the data directory must be writable (data_required): {reason}")

    @property
    def ready(self) -> bool:
        return self.scheduler is not None

    async def start(self) -> None:
        self.loop = asyncio.get_running_loop()
        self._loader = asyncio.create_task(self._load(), name="engine-loader")

    async def _load(self) -> None:
        started = time.perf_counter()
        try:
            engine = await asyncio.to_thread(self._factory)
            for saved in self.voices.all():  # a saved voice that mixes a voice the assets lack stops the start
                engine.check_voice(saved.blend)
            await asyncio.to_thread(engine.warm, self.config.voice)
        except SpeakstreamError as exc:
            self.load_error = exc
            log.error("engine failed to load: %s", exc.message)
            return
        except Exception as exc:  # a library's own failure: /ping must say so, not "loading" forever
            self.load_error = SpeakstreamError(f"engine failed to load: {exc}", code="engine_load_failed")
            log.exception("engine failed to load")
            return
        await self._serve(self.config, engine)
        if self.config.cache_mb > 0:
            self.metrics.watch_cache(self._cache_stats)
        self.metrics.watch_capacity(lambda: self.require_scheduler().reading(), self._refused)
        self.ready_at = time.perf_counter()
        log.info("engine ready on %s in %.1f s", engine.device, self.ready_at - started)

    async def _serve(self, config: ServerConfig, engine: Engine) -> None:
        """Replies from now on run on a scheduler built from ``config`` over ``engine``."""
        scheduler = scheduler_for(engine, config, on_done=self._on_piece)
        await scheduler.start()
        self.config, self.engine, self.scheduler = config, engine, scheduler

    @contextlib.asynccontextmanager
    async def configured(self, config: ServerConfig, engine: Engine | None = None) -> AsyncIterator[None]:
        """Inside the block replies run as a server started with ``config`` (a variant built with
        ``dataclasses.replace``) over ``engine`` (default: the loaded one; a variant from
        ``KokoroEngine.configured``) would run them, without the model loaded again: an
        experiment's arm. Enter and leave it between replies (the scheduler is rebuilt)."""
        loaded, saved = self.engine, self.config
        if loaded is None:
            raise RuntimeError("the engine is not loaded")
        await self.require_scheduler().stop()
        await self._serve(config, engine or loaded)
        try:
            yield
        finally:
            await self.require_scheduler().stop()
            await self._serve(saved, loaded)

    def _cache_stats(self) -> CacheStats:
        cache = self.scheduler.cache if self.scheduler is not None else None
        return cache.stats() if cache is not None else CacheStats(0, 0, 0, 0, 0)

    def _refused(self) -> int:
        return self.scheduler.admission.refused if self.scheduler is not None else 0

    async def wait_ready(self) -> None:
        """Until the engine is loaded and warm; raises what stopped it loading."""
        if self._loader is None:
            raise RuntimeError("the runtime was not started")
        await asyncio.shield(self._loader)
        if self.load_error is not None:
            raise self.load_error

    @property
    def healthy(self) -> bool:
        """Loaded, and the scheduler's engine workers are running."""
        return self.scheduler is not None and self.scheduler.running

    async def drain(self, reason: str) -> None:
        """Close every open session with ``server_shutdown`` and 1001, within the grace period
        (a replica leaving a cluster; the server's own shutdown does the same)."""
        sessions = [s.shutdown(reason) for s in list(self.sessions)]
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.gather(*sessions, return_exceptions=True), self.config.grace_s)

    async def stop(self, reason: str = "server shutting down") -> None:
        if self._loader is not None:
            self._loader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._loader
        await asyncio.gather(*(s.shutdown(reason) for s in list(self.sessions)), return_exceptions=True)
        if self.scheduler is not None:
            await self.scheduler.stop()
        await asyncio.to_thread(self.tracing.shutdown)  # the spans batched so far are exported

    def open_session(self, session: Closable) -> bool:
        """Count a WebSocket session in, unless the server holds its maximum (False). Call it
        before any await, so simultaneous handshakes cannot overrun the limit."""
        if len(self.sessions) >= self.config.max_sessions:
            return False
        self.sessions.add(session)
        self.metrics.active_sessions.inc()
        return True

    def close_session(self, session: Closable) -> None:
        if session in self.sessions:
            self.sessions.discard(session)
            self.metrics.active_sessions.dec()

    def require_scheduler(self) -> Scheduler:
        if self.scheduler is None:
            if self.load_error is not None:
                raise self.load_error
            raise Overloaded("the engine is still loading; retry shortly", code="not_ready")
        return self.scheduler

    def new_id(self, prefix: str) -> str:
        return f"{prefix}-{next(self._ids)}-{uuid.uuid4().hex[:8]}"

    def reply(
        self,
        session_id: str,
        request_id: str | None,
        settings: ReplySettings,
        client: str = "",
        *,
        route: str = "",
        headers: Mapping[str, str] | None = None,
    ) -> Reply:
        """A reply of this server's settings; ``route`` and ``headers`` (a ``traceparent``) start its trace."""
        request_id = request_id or self.new_id("req")
        return Reply(
            self.require_scheduler(),
            session_id=session_id,
            request_id=request_id,
            settings=settings,
            policy=self.config.policy,
            lookahead=self.config.lookahead,
            max_text_chars=self.config.max_text_chars,
            max_audio_s=self.config.max_audio_s,
            client=client,
            admission_wait_s=self.config.admission_wait_s,
            trace=self.tracing.reply(request_id, route or session_id.split("-")[0], headers),
        )

    @property
    def defaults(self) -> Options:
        """The server's defaults, under every request's options."""
        return Options(voice=self.config.voice, speed=self.config.speed, format=self.config.format, chunking="auto")

    def settings(self, options: Options, *, bitrate: int | None = None) -> ReplySettings:
        """What a reply is spoken with: the request's options over the server's defaults (and an
        encoder ``bitrate`` a vendor's format names, such as ElevenLabs' ``mp3_44100_128``),
        checked once here (``resolved``)."""
        saved = self.voices.find(options.voice)
        if saved is not None:  # its blend, and its speed, language and dictionaries under the request's
            dictionaries = options.dictionaries + tuple(d for d in saved.dictionaries if d not in options.dictionaries)
            options = replace(options, voice=None, dictionaries=dictionaries).over(saved.options)
        merged = options.over(self.defaults)
        voice = merged.voice or self.config.voice
        voice = VOICE_ALIASES.get(voice, voice)
        name = (saved.name if saved else options.voice) or self.config.voice
        if merged.language:  # the engine reads the language from the spec: "af_heart@es"
            voice = with_language(voice, merged.language)
        settings = ReplySettings(
            voice=voice,
            voice_name=name,
            speaker=self.speaker,
            speed=merged.speed or self.config.speed,
            format=merged.format or self.config.format,
            sample_rate=merged.sample_rate,
            chunking=merged.chunking or "auto",
            lexicon=self.dictionaries.lexicon(merged.dictionaries) if merged.dictionaries else None,
            text_type=merged.text_type,
            normalize=merged.normalize is not False,
            bitrate=bitrate,
        )
        return resolved(self.require_scheduler(), settings)

    def speaker(self, voice: str) -> str:
        """The spec a speaker's ``voice`` reads with: a saved voice's blend (in its language), an
        OpenAI name's Kokoro voice, else the voice as given."""
        saved = self.voices.find(voice)
        if saved is None:
            return VOICE_ALIASES.get(voice, voice)
        return saved.spec

    def error(self, exc: SpeakstreamError) -> None:
        self.metrics.errors.labels(exc.code).inc()

    def _on_piece(self, job: Job, piece: AudioPiece | None) -> None:
        if job.made == 0:
            self.metrics.queue_wait.observe(job.queue_wait_s)
        # called before the piece is counted: the first window is still first; a step that failed
        # or was cancelled spent the engine's time too
        seconds = job.failed_s if piece is None else piece.timings.phonemize_s + piece.timings.inference_s
        self.metrics.engine_seconds.labels("first" if job.first_window else "later").inc(seconds)
        if piece is not None and piece.duration_s > 0:
            if job.cached is None:  # a cached chunk took no engine time
                self.metrics.rtf.observe(piece.timings.inference_s / piece.duration_s)
            self.metrics.audio_seconds.inc(piece.duration_s)
        if job.gap_s > 0:
            self.metrics.gaps.inc()
            self.metrics.gap_seconds.inc(job.gap_s)
        if self.scheduler is not None:
            self.metrics.queued_chunks.set(self.scheduler.queued)


def scheduler_for(
    engine: Engine,
    config: ServerConfig,
    *,
    on_done: Callable[[Job, AudioPiece | None], None] | None = None,
    executors: Callable[[int, str], Executor] | None = None,
    beside: bool = True,
) -> Scheduler:
    """The scheduler a server with ``config`` runs ``engine`` with (the simulator makes the same,
    with its ``executors``; ``beside`` false: the first-window rule before the simulator's sweep)."""
    return Scheduler(
        engine,
        lanes=config.lanes or engine.lanes,
        max_queue=config.queue_depth,
        max_per_client=config.client_queue_cap,
        first_chunk_priority=config.first_chunk_priority,
        preempt=config.preempt,
        on_done=on_done,
        cache=AudioCache(config.cache_mb << 20) if config.cache_mb > 0 else None,
        max_load=config.max_load or None,
        executors=executors,
        beside=beside,
    )
