"""Exceptions raised by the ``experiment`` binding.

Every error the library reports becomes an instance of a subclass of :class:`Error` chosen by the
library's ``exp_status`` code. ``.code`` is that (negative) code, ``.status`` its symbolic name and
``.message`` the text of ``exp_last_error()`` read on the failing thread right after the call.

Some classes also derive from a builtin exception where that is the natural Python meaning, so that
``except ValueError`` / ``except TypeError`` keep working: invalid arguments, options and UTF-8 are
``ValueError``s and unsupported attribute value types are ``TypeError``s.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple, Type

__all__ = [
    "Error",
    "InvalidArgumentError",
    "UnsupportedTypeError",
    "InvalidJSONError",
    "InvalidOptionError",
    "InvalidDatafileError",
    "UnsupportedVersionError",
    "NotReadyError",
    "UnknownFlagError",
    "UnknownExperimentError",
    "UnknownEventError",
    "UnknownVariationError",
    "NotTargetedError",
    "NotAllocatedError",
    "InvalidUTF8Error",
    "TooLargeError",
    "TooDeepError",
    "InvalidEventTagsError",
    "ClosedError",
    "BufferTooSmallError",
    "WaitTimeoutError",
    "TagInUseError",
    "TypeMismatchError",
    "QueueFullError",
    "StoreError",
    "ODPNotEnabledError",
    "InvalidUserIdError",
    "FetchFailedError",
    "NotFoundError",
    "DeliveryFailedError",
    "InternalError",
    "STATUS_NAMES",
    "error_for_status",
]

# The exp_status codes of include/experiment.h.
OK = 0
ERR_INVALID_ARGUMENT = -1
ERR_INVALID_JSON = -2
ERR_INVALID_OPTION = -3
ERR_INVALID_DATAFILE = -4
ERR_UNSUPPORTED_VERSION = -5
ERR_NOT_READY = -6
ERR_UNKNOWN_FLAG = -7
ERR_UNKNOWN_EXPERIMENT = -8
ERR_UNKNOWN_EVENT = -9
ERR_UNKNOWN_VARIATION = -10
ERR_NOT_TARGETED = -11
ERR_NOT_ALLOCATED = -12
ERR_INVALID_UTF8 = -13
ERR_TOO_LARGE = -14
ERR_TOO_DEEP = -15
ERR_INVALID_EVENT_TAGS = -16
ERR_CLOSED = -17
ERR_BUFFER_TOO_SMALL = -18
ERR_TIMEOUT = -19
ERR_TAG_IN_USE = -20
ERR_TYPE_MISMATCH = -21
ERR_QUEUE_FULL = -22
ERR_STORE = -23
ERR_ODP_NOT_ENABLED = -24
ERR_INVALID_USER_ID = -25
ERR_FETCH_FAILED = -26
ERR_NOT_FOUND = -27
ERR_DELIVERY_FAILED = -28
ERR_INTERNAL = -99

STATUS_NAMES: Dict[int, str] = {
    OK: "EXP_OK",
    ERR_INVALID_ARGUMENT: "EXP_ERR_INVALID_ARGUMENT",
    ERR_INVALID_JSON: "EXP_ERR_INVALID_JSON",
    ERR_INVALID_OPTION: "EXP_ERR_INVALID_OPTION",
    ERR_INVALID_DATAFILE: "EXP_ERR_INVALID_DATAFILE",
    ERR_UNSUPPORTED_VERSION: "EXP_ERR_UNSUPPORTED_VERSION",
    ERR_NOT_READY: "EXP_ERR_NOT_READY",
    ERR_UNKNOWN_FLAG: "EXP_ERR_UNKNOWN_FLAG",
    ERR_UNKNOWN_EXPERIMENT: "EXP_ERR_UNKNOWN_EXPERIMENT",
    ERR_UNKNOWN_EVENT: "EXP_ERR_UNKNOWN_EVENT",
    ERR_UNKNOWN_VARIATION: "EXP_ERR_UNKNOWN_VARIATION",
    ERR_NOT_TARGETED: "EXP_ERR_NOT_TARGETED",
    ERR_NOT_ALLOCATED: "EXP_ERR_NOT_ALLOCATED",
    ERR_INVALID_UTF8: "EXP_ERR_INVALID_UTF8",
    ERR_TOO_LARGE: "EXP_ERR_TOO_LARGE",
    ERR_TOO_DEEP: "EXP_ERR_TOO_DEEP",
    ERR_INVALID_EVENT_TAGS: "EXP_ERR_INVALID_EVENT_TAGS",
    ERR_CLOSED: "EXP_ERR_CLOSED",
    ERR_BUFFER_TOO_SMALL: "EXP_ERR_BUFFER_TOO_SMALL",
    ERR_TIMEOUT: "EXP_ERR_TIMEOUT",
    ERR_TAG_IN_USE: "EXP_ERR_TAG_IN_USE",
    ERR_TYPE_MISMATCH: "EXP_ERR_TYPE_MISMATCH",
    ERR_QUEUE_FULL: "EXP_ERR_QUEUE_FULL",
    ERR_STORE: "EXP_ERR_STORE",
    ERR_ODP_NOT_ENABLED: "EXP_ERR_ODP_NOT_ENABLED",
    ERR_INVALID_USER_ID: "EXP_ERR_INVALID_USER_ID",
    ERR_FETCH_FAILED: "EXP_ERR_FETCH_FAILED",
    ERR_NOT_FOUND: "EXP_ERR_NOT_FOUND",
    ERR_DELIVERY_FAILED: "EXP_ERR_DELIVERY_FAILED",
    ERR_INTERNAL: "EXP_ERR_INTERNAL",
}


class Error(Exception):
    """Base class of every error the library (or the binding on its behalf) reports."""

    #: the exp_status code this class stands for (instances carry the actual one in ``.code``)
    default_code: int = ERR_INTERNAL

    def __init__(self, message: str = "", code: Optional[int] = None) -> None:
        if code is None:
            code = self.default_code
        self.code: int = code
        self.message: str = message or STATUS_NAMES.get(code, "unknown error %d" % code)
        super().__init__(self.message)

    @property
    def status(self) -> str:
        """The symbolic name of ``code``, e.g. ``"EXP_ERR_UNKNOWN_FLAG"``."""
        return STATUS_NAMES.get(self.code, "EXP_ERR_%d" % -self.code)

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return "%s(%r, code=%d)" % (type(self).__name__, self.message, self.code)

    def __reduce__(self) -> Tuple[Any, Tuple[str, int]]:  # keep exceptions picklable (multiprocessing, pytest-xdist)
        return (type(self), (self.message, self.code))


class InvalidArgumentError(Error, ValueError):
    """A required argument is missing (None), out of range, or of a bad kind."""
    default_code = ERR_INVALID_ARGUMENT


class UnsupportedTypeError(InvalidArgumentError, TypeError):
    """A value (an attribute, a user property) has a type the library cannot carry."""
    default_code = ERR_INVALID_ARGUMENT


class InvalidJSONError(Error, ValueError):
    """A JSON text (options, attributes, tags, datafile) is malformed."""
    default_code = ERR_INVALID_JSON


class InvalidOptionError(Error, ValueError):
    """An unknown client option or decide option name, or an option of the wrong type or range."""
    default_code = ERR_INVALID_OPTION


class InvalidDatafileError(Error, ValueError):
    """The datafile is valid JSON but not a usable v4 datafile (or belongs to another project)."""
    default_code = ERR_INVALID_DATAFILE


class UnsupportedVersionError(InvalidDatafileError):
    """The datafile's "version" is not one this library reads."""
    default_code = ERR_UNSUPPORTED_VERSION


class NotReadyError(Error):
    """The client has no datafile yet."""
    default_code = ERR_NOT_READY


class UnknownFlagError(Error, KeyError):
    """No feature flag with that key in the current datafile."""
    default_code = ERR_UNKNOWN_FLAG

    def __str__(self) -> str:  # KeyError would otherwise repr() the message
        return self.message


class UnknownExperimentError(Error, KeyError):
    """No experiment with that key or id in the current datafile."""
    default_code = ERR_UNKNOWN_EXPERIMENT

    def __str__(self) -> str:
        return self.message


class UnknownEventError(Error, KeyError):
    """No event with that key in the current datafile."""
    default_code = ERR_UNKNOWN_EVENT

    def __str__(self) -> str:
        return self.message


class UnknownVariationError(Error, KeyError):
    """No variation with that key in the experiment or flag."""
    default_code = ERR_UNKNOWN_VARIATION

    def __str__(self) -> str:
        return self.message


class NotTargetedError(Error):
    """trigger_experiment: the user does not meet the experiment's audience."""
    default_code = ERR_NOT_TARGETED


class NotAllocatedError(Error):
    """trigger_experiment: the experiment is not running, or the user is outside its traffic."""
    default_code = ERR_NOT_ALLOCATED


class InvalidUTF8Error(Error, ValueError):
    """A string argument is not valid UTF-8 (or cannot be encoded as UTF-8)."""
    default_code = ERR_INVALID_UTF8


class TooLargeError(Error, ValueError):
    """An input exceeds a documented limit (see "Limits" in the README)."""
    default_code = ERR_TOO_LARGE


class TooDeepError(Error, ValueError):
    """A JSON document nests deeper than its limit."""
    default_code = ERR_TOO_DEEP


class InvalidEventTagsError(Error, ValueError):
    """Event tags are not a JSON object (a dict)."""
    default_code = ERR_INVALID_EVENT_TAGS


class ClosedError(Error):
    """The client was closed."""
    default_code = ERR_CLOSED


class BufferTooSmallError(Error):
    """A caller-provided array was too short (the binding sizes its own: not expected from Python)."""
    default_code = ERR_BUFFER_TOO_SMALL


class WaitTimeoutError(Error, TimeoutError):
    """A wait (exp_client_wait_ready, flush, close drain) ran out of time."""

    default_code = ERR_TIMEOUT


class TagInUseError(Error):
    """Exp_client_create: another open client already has this tag."""

    default_code = ERR_TAG_IN_USE


class TypeMismatchError(Error, TypeError):
    """A typed accessor asked for a type the value does not have."""

    default_code = ERR_TYPE_MISMATCH


class QueueFullError(Error):
    """The event queue is at capacity and its policy is "reject"."""

    default_code = ERR_QUEUE_FULL


class StoreError(Error, OSError):
    """The local state store (SQLite file, Redis, callbacks) failed."""

    default_code = ERR_STORE


class ODPNotEnabledError(Error):
    """Real-time segments are disabled or not configured."""

    default_code = ERR_ODP_NOT_ENABLED


class InvalidUserIdError(Error, ValueError):
    """The segments service does not know or accept this user identifier."""

    default_code = ERR_INVALID_USER_ID


class FetchFailedError(Error, ConnectionError):
    """A network fetch (datafile, segments) failed."""

    default_code = ERR_FETCH_FAILED


class NotFoundError(Error, LookupError):
    """No such entry (e.g. no client with that tag)."""

    default_code = ERR_NOT_FOUND


class DeliveryFailedError(Error):
    """An event was not delivered: the endpoint failed it (it stays queued and is retried) or refused it
    for good, or it had nowhere to go. Passed to delivery callbacks (``on_complete``), never raised by a
    call."""

    default_code = ERR_DELIVERY_FAILED


class InternalError(Error):
    """A bug in the library: please report it with the message."""
    default_code = ERR_INTERNAL


_CLASSES: Dict[int, Type[Error]] = {
    ERR_INVALID_ARGUMENT: InvalidArgumentError,
    ERR_INVALID_JSON: InvalidJSONError,
    ERR_INVALID_OPTION: InvalidOptionError,
    ERR_INVALID_DATAFILE: InvalidDatafileError,
    ERR_UNSUPPORTED_VERSION: UnsupportedVersionError,
    ERR_NOT_READY: NotReadyError,
    ERR_UNKNOWN_FLAG: UnknownFlagError,
    ERR_UNKNOWN_EXPERIMENT: UnknownExperimentError,
    ERR_UNKNOWN_EVENT: UnknownEventError,
    ERR_UNKNOWN_VARIATION: UnknownVariationError,
    ERR_NOT_TARGETED: NotTargetedError,
    ERR_NOT_ALLOCATED: NotAllocatedError,
    ERR_INVALID_UTF8: InvalidUTF8Error,
    ERR_TOO_LARGE: TooLargeError,
    ERR_TOO_DEEP: TooDeepError,
    ERR_INVALID_EVENT_TAGS: InvalidEventTagsError,
    ERR_CLOSED: ClosedError,
    ERR_BUFFER_TOO_SMALL: BufferTooSmallError,
    ERR_TIMEOUT: WaitTimeoutError,
    ERR_TAG_IN_USE: TagInUseError,
    ERR_TYPE_MISMATCH: TypeMismatchError,
    ERR_QUEUE_FULL: QueueFullError,
    ERR_STORE: StoreError,
    ERR_ODP_NOT_ENABLED: ODPNotEnabledError,
    ERR_INVALID_USER_ID: InvalidUserIdError,
    ERR_FETCH_FAILED: FetchFailedError,
    ERR_NOT_FOUND: NotFoundError,
    ERR_DELIVERY_FAILED: DeliveryFailedError,
    ERR_INTERNAL: InternalError,
}


def error_for_status(code: int, message: str) -> Error:
    """The exception instance for a non-OK status. Unknown codes give a plain :class:`Error`."""
    cls = _CLASSES.get(code, Error)
    return cls(message, code)
