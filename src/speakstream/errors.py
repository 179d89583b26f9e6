"""Every error speakstream raises on purpose.

    SpeakstreamError            code, message, retryable
    ├── InvalidInput            the caller sent something we cannot speak (4xx, error frame)
    │   ├── UnknownVoice
    │   ├── ProtocolError       a wire message that does not parse or is not allowed now
    │   ├── NotFound            a pronunciation dictionary (or version) the server does not have
    │   └── OverLimit           more dictionaries or rules than the server keeps
    ├── Unauthorized            missing or wrong API key
    ├── Overloaded              too many sessions or queued chunks; retry later
    ├── AssetError              model or voices missing or corrupt; says which command fixes it
    ├── StoreUnavailable        a change the server cannot keep (its data directory is read-only)
    ├── EngineError             synthesis failed inside the engine
    └── SourceError             the LLM text source failed (HTTP error, timeout, bad stream)

Each carries a machine-readable ``code`` (stable, used in error frames and metrics) and whether a
retry can help. Foreign errors are translated at the boundary with ``raise ... from exc``.
"""

from __future__ import annotations


class SpeakstreamError(Exception):
    code = "internal_error"
    retryable = False
    http_status = 500

    def __init__(self, message: str, *, code: str | None = None, retryable: bool | None = None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        if retryable is not None:
            self.retryable = retryable

    def to_dict(self) -> dict[str, str | bool]:
        return {"code": self.code, "message": self.message, "retryable": self.retryable}


def internal_error() -> SpeakstreamError:
    """What a client is told of a bug: that it happened, never its text (that goes to the log)."""
    return SpeakstreamError("internal error; the server log has the details")


class InvalidInput(SpeakstreamError):
    code = "invalid_input"
    http_status = 400


class UnknownVoice(InvalidInput):
    code = "unknown_voice"


class UnsupportedMediaType(InvalidInput):
    code = "unsupported_media_type"
    http_status = 415


class ProtocolError(InvalidInput):
    code = "invalid_message"


class NotFound(InvalidInput):
    code = "not_found"
    http_status = 404


class Conflict(InvalidInput):
    code = "conflict"
    http_status = 409


class OverLimit(InvalidInput):
    """A stored thing (a pronunciation dictionary, its rules) past the server's bound."""

    code = "over_limit"
    http_status = 413


class Unauthorized(SpeakstreamError):
    code = "unauthorized"
    http_status = 401


class Overloaded(SpeakstreamError):
    code = "overloaded"
    retryable = True
    http_status = 503


class AssetError(SpeakstreamError):
    code = "missing_asset"
    http_status = 503


class StoreUnavailable(SpeakstreamError):
    """A change to what the server keeps (a dictionary) when it cannot write its data directory:
    the operator's to fix, not the caller's, and no retry helps (507 Insufficient Storage)."""

    code = "read_only_store"
    http_status = 507


class EngineError(SpeakstreamError):
    code = "engine_error"
    retryable = True
    http_status = 500


class SourceError(SpeakstreamError):
    code = "source_error"
    retryable = True
    http_status = 502
