"""Typed errors. Each message is written for the person using the app: it says
what went wrong and, where there is one, what to do about it."""

from __future__ import annotations


class PlaygroundError(Exception):
    """Base class; `str(error)` is safe to show to a user."""


class InvalidInput(PlaygroundError, ValueError):
    """The caller's input was rejected before anything was written."""


class NotFound(PlaygroundError, LookupError):
    """The thing asked for does not exist (or is not the caller's)."""


class SessionDeleted(NotFound):
    """The session was deleted by its owner: a late report or turn of it is not kept."""


class DatabaseUnavailable(PlaygroundError, ConnectionError):
    """The database could not be reached; retrying later may work."""


class AuthError(PlaygroundError, PermissionError):
    """A token or credential was missing, invalid, expired or revoked.

    `code` is the auth server's error code when it gave one (e.g. Supabase
    Auth's "session_expired"), so callers can tell cases apart without parsing
    the message."""

    def __init__(self, message: str = "", *, code: str | None = None):
        super().__init__(message)
        self.code = code


class RateLimited(AuthError):
    """Too many attempts from one client in a short time; `retry_after` says how many seconds to wait."""

    def __init__(self, message: str = "", *, retry_after: float = 60.0):
        super().__init__(message, code="over_request_rate_limit")
        self.retry_after = retry_after


class AuthUnavailable(AuthError, ConnectionError):
    """The auth server could not be reached or failed; nothing was decided about
    the visitor's session, so it must be kept and the request retried later."""


class EmbeddingUnavailable(PlaygroundError, RuntimeError):
    """The embedding model could not be loaded or could not embed the text."""


class ConfigurationError(PlaygroundError, RuntimeError):
    """Settings or schema do not fit together (e.g. embedding dimensions)."""
