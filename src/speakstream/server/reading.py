"""What a reply reads and how: its settings, its text stage, and the checks made before any audio."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from speakstream.audio import audio_format, output_rate
from speakstream.engine.base import MAX_SPEED, MIN_SPEED, check_speed
from speakstream.engine.phonemes.inline import to_kokoro
from speakstream.engine.phonemes.languages import Language
from speakstream.engine.phonemes.phonemizer import vocab
from speakstream.engine.phonemes.scripts import check_script
from speakstream.engine.voices import VoiceInfo, with_language
from speakstream.errors import InvalidInput
from speakstream.protocol import CHUNKING
from speakstream.scheduler import Scheduler
from speakstream.text import ChunkPolicy, IncrementalSentenceChunker
from speakstream.text.lexicon import INLINE, Lexicon
from speakstream.text.script import Say, Script
from speakstream.text.ssml import SsmlReader, is_ssml
from speakstream.text.whole import WholeText


def as_given(voice: str) -> str:
    return voice


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplySettings:
    voice: str = "af_heart"
    """The spec the engine reads (a saved voice resolved to its blend, in its language)."""
    voice_name: str = ""
    """The voice as the request named it (a saved voice's name): what word timestamps say spoke."""
    speaker: Callable[[str], str] = as_given
    """A speaker's voice name as a spec (SSML ``<voice>``, an append's voice): the server's
    saved voices and aliases resolved."""
    speed: float = 1.0
    format: str = "pcm"
    sample_rate: int | None = None
    """Output rate; None means the format's default (24 kHz, or 8 kHz for mu-law)."""
    bitrate: int | None = None
    chunking: str = "auto"
    """``auto``: the server's policy; ``sentences``: whole sentences only; ``none``: one chunk."""
    lexicon: Lexicon | None = None
    """Pronunciation rules, applied to the text before it is chunked."""
    text_type: str | None = None
    """``ssml``: the text is SSML; ``text``: it is not; None: SSML when it is a ``<speak>`` document."""
    normalize: bool = True
    """The engine normalises the text (false: the client did)."""
    info: VoiceInfo | None = None
    """``voice``'s catalogue entry, once ``resolved`` has checked it."""

    @property
    def speaks_as(self) -> VoiceInfo:
        """``voice``'s entry (``resolved`` settings only)."""
        if self.info is None:
            raise RuntimeError("the settings were not resolved")
        return self.info

    @property
    def speaks(self) -> Language:
        """The language ``voice`` reads (``resolved`` settings only)."""
        return self.speaks_as.speaks


def voice_info(scheduler: Scheduler, voice: str) -> VoiceInfo:
    """The server's one check of a voice (a request's, a speaker's, a chunk's in another
    language): its catalogue entry, or ``UnknownVoice``, a 400 or an error frame."""
    return scheduler.engine.check_voice(voice)


def speaker_info(scheduler: Scheduler, settings: ReplySettings, voice: str | None) -> VoiceInfo:
    """The entry of a speaker's ``voice`` as these settings resolve it (None: the reply's own)."""
    return voice_info(scheduler, settings.speaker(voice)) if voice else settings.speaks_as


def resolved(scheduler: Scheduler, settings: ReplySettings) -> ReplySettings:
    """The settings checked (voice, speed, format, rate) before any work starts, with the voice's
    entry kept so that nothing checks it again; settings already resolved as they are."""
    if settings.info is not None:
        return settings
    check_speed(settings.speed)
    output_rate(audio_format(settings.format), settings.sample_rate)
    return replace(settings, info=voice_info(scheduler, settings.voice))


def chunker_for(chunking: str, policy: ChunkPolicy) -> IncrementalSentenceChunker | WholeText:
    if chunking == "none":
        return WholeText()
    if chunking == "sentences":
        return IncrementalSentenceChunker(replace(policy, first_clause=False, schedule=()))
    if chunking == "auto":
        return IncrementalSentenceChunker(policy)
    raise InvalidInput(f"chunking must be one of {', '.join(CHUNKING)}, not {chunking!r}", code="invalid_chunking")


def shown(text: str) -> str:
    """A chunk's text as clients see it: a word given inline phonemes is the word alone."""
    return INLINE.sub(r"\1", text) if "](/" in text else text


def check_readable(settings: ReplySettings, text: str) -> None:
    """A whole text the reply's language cannot read is a 400 before any audio, not an error
    after the stream has begun (``unsupported_text``), and so are inline phonemes the model has
    no symbols for (``invalid_phonemes``). SSML is checked chunk by chunk as it is read, each in
    its own language."""
    if not is_ssml(text, settings.text_type):
        readable(settings.speaks, text)


def readable(language: Language, text: str) -> None:
    """Raise if ``text`` cannot be read in ``language`` (``check_readable``)."""
    check_script(text, language)
    for given in INLINE.finditer(text):
        to_kokoro(given.group(2), language, vocab())


def script_for(settings: ReplySettings, policy: ChunkPolicy) -> Script:
    """The reply's text stage: SSML (unless the client said plain text), rules, chunker."""
    rewriter = settings.lexicon.rewriter() if settings.lexicon else None
    ssml = None
    if settings.text_type != "text":
        ssml = SsmlReader(always=settings.text_type == "ssml", language=settings.speaks.tag)
    return Script(chunker_for(settings.chunking, policy), rewriter, ssml)


@dataclass(frozen=True, slots=True)
class Spoken:
    """A chunk queued to speak, with the voice and speed it is read in."""

    text: str
    voice: str
    speed: float
    ends_at: int | None = None
    """Where its part of the client's text ends, when a tag cut it there."""
    speaker: str = ""
    """The voice as the client named it (a saved voice's name): what word timestamps say spoke."""


def spoken(scheduler: Scheduler, settings: ReplySettings, say: Say, *, checked: bool) -> Spoken:
    """A chunk in the voice, language and speed its reading names (a dialogue's speaker, an SSML
    ``<lang>`` or ``<prosody>``); its text is checked here unless the reply's whole text was."""
    voice, speed, speaker = settings.voice, settings.speed, settings.voice_name
    if say.reading.voice is not None:  # a speaker of a dialogue: its own voice and language
        voice, speaker = settings.speaker(say.reading.voice), say.reading.voice
    if say.reading.language is not None:
        voice = with_language(voice, say.reading.language)
    if voice != settings.voice:  # another voice, or another language: its text is read in that one
        readable(voice_info(scheduler, voice).speaks, say.text)
    elif not checked:
        readable(settings.speaks, say.text)
    speed = min(MAX_SPEED, max(MIN_SPEED, speed * say.reading.speed))
    return Spoken(say.text, voice, speed, say.ends_at, speaker)
