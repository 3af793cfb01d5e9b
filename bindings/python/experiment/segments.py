"""Real-time segments (ODP) methods of :class:`experiment.Client` (mixed into it).

``fetch_qualified_segments`` asks the ODP segments service (the datafile's ``integrations`` entry, or the
``odp`` client option) which of the project's segments a user qualifies for; later decisions for that user
evaluate ``"match": "qualified"`` audience conditions against them. See the "Real-time segments" section of
include/experiment.h for the exact behaviour.
"""

from __future__ import annotations

import json
import threading
from concurrent.futures import Future
from ctypes import byref, c_char_p, c_int
from typing import Any, Dict, Iterable, List, Mapping, Optional, Union

from . import _native
from ._timeouts import timeout_ms as _timeout_ms
from .errors import InvalidArgumentError, error_for_status

__all__ = ["SegmentOption", "IGNORE_CACHE", "RESET_CACHE"]

_lib = _native.lib

#: fetch options (names as the reference SDK's OptimizelySegmentOption, or the EXP_SEGMENT_* bits)
IGNORE_CACHE = "IGNORE_CACHE"
RESET_CACHE = "RESET_CACHE"
_OPTION_BITS = {IGNORE_CACHE: 1, RESET_CACHE: 2}


class SegmentOption:
    """Options of :meth:`fetch_qualified_segments`: ``IGNORE_CACHE`` (fetch, leave the cache as
    it is) and ``RESET_CACHE`` (empty the cache, then fetch). Names (str) are accepted too."""
    IGNORE_CACHE = IGNORE_CACHE
    RESET_CACHE = RESET_CACHE


def _raise(status: int) -> "NoReturn":  # type: ignore[name-defined]  # noqa: F821
    raw = _lib.exp_last_error()
    raise error_for_status(status, raw.decode("utf-8", "replace") if raw else "")


def _bytes(value: Any, what: str, optional: bool = False) -> Optional[bytes]:
    if value is None and optional:
        return None
    if isinstance(value, str):
        value = value.encode("utf-8")
    if not isinstance(value, bytes):
        raise InvalidArgumentError("%s: expected str, got %s" % (what, type(value).__name__))
    if b"\0" in value:
        raise InvalidArgumentError("%s: contains a NUL character" % what)
    return value


def _option_bits(options: Iterable[Any]) -> int:
    bits = 0
    for option in options or ():
        if isinstance(option, int) and not isinstance(option, bool):
            bits |= option
        elif isinstance(option, str) and option.upper() in _OPTION_BITS:
            bits |= _OPTION_BITS[option.upper()]
        else:
            raise InvalidArgumentError("segment option %r: expected IGNORE_CACHE or RESET_CACHE" % (option,))
    return bits


def _take_json(out: c_char_p) -> Any:
    raw = out.value
    _native.lib.exp_free(out)
    return json.loads(raw) if raw is not None else None


class _AsyncFetches:
    """One C callback per client for every async fetch; user_data carries the id of a pending Future."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pending: Dict[int, "Future[Any]"] = {}
        self.next_id = 1
        self.callback = _native.EXP_SEGMENTS_FN(self._complete)

    def add(self, future: "Future[Any]") -> int:
        with self.lock:
            ident = self.next_id
            self.next_id += 1
            self.pending[ident] = future
            return ident

    def discard(self, ident: int) -> None:
        with self.lock:
            self.pending.pop(ident, None)

    def _complete(self, status: int, segments: Optional[bytes], message: Optional[bytes], user_data: Any) -> None:
        try:
            with self.lock:
                future = self.pending.pop(int(user_data or 0), None)
            if future is None:
                return
            if status == 0:
                future.set_result(json.loads(segments or b"[]"))
            else:
                future.set_exception(error_for_status(status, (message or b"").decode("utf-8", "replace")))
        except BaseException:  # nothing may propagate into C
            pass


class SegmentsMixin:
    """Real-time segments methods; relies on the Client's ``_live()`` handle."""

    __slots__ = ()

    def fetch_qualified_segments(self, user_id: str, options: Iterable[Any] = ()) -> List[str]:
        """Fetches the segments (of those the project's audiences use) that ``user_id`` qualifies for, from
        the cache or ODP, and makes them the user's segments for decisions. ``options``: IGNORE_CACHE,
        RESET_CACHE. Raises InvalidUserIdError (ODP does not know the user), FetchFailedError,
        ODPNotEnabledError."""
        handle = self._live()  # type: ignore[attr-defined]
        out = c_char_p()
        status = _lib.exp_fetch_qualified_segments(handle, _bytes(user_id, "user_id"), _option_bits(options),
                                                   byref(out))
        if status:
            _raise(status)
        segments: List[str] = _take_json(out)
        return segments

    def fetch_qualified_segments_async(self, user_id: str, options: Iterable[Any] = (),
                                       callback: Any = None) -> "Future[List[str]]":
        """As :meth:`fetch_qualified_segments` on a library thread. Returns a Future of the segments (its
        exception is the typed error); ``callback(segments, error)`` is also called when given."""
        handle = self._live()  # type: ignore[attr-defined]
        fetches = getattr(handle, "_segment_fetches", None)
        if fetches is None:
            fetches = _AsyncFetches()
            handle.callbacks.append(fetches)  # alive as long as the library may call it
            handle._segment_fetches = fetches
        future: "Future[List[str]]" = Future()
        if callback is not None:
            if not callable(callback):
                raise TypeError("callback: expected a callable, got %r" % (callback,))

            def notify(done: "Future[List[str]]") -> None:
                error = done.exception()
                callback(None if error else done.result(), error)

            future.add_done_callback(notify)
        ident = fetches.add(future)
        status = _lib.exp_fetch_qualified_segments_async(handle, _bytes(user_id, "user_id"), _option_bits(options),
                                                         fetches.callback, ident)
        if status:
            fetches.discard(ident)
            _raise(status)
        return future

    def is_qualified_for(self, user_id: str, segment: str) -> bool:
        handle = self._live()  # type: ignore[attr-defined]
        out = c_int()
        status = _lib.exp_is_qualified_for(handle, _bytes(user_id, "user_id"), _bytes(segment, "segment"), byref(out))
        if status:
            _raise(status)
        return bool(out.value)

    def get_qualified_segments(self, user_id: str) -> Optional[List[str]]:
        """The user's qualified segments, or None when none were fetched or set."""
        handle = self._live()  # type: ignore[attr-defined]
        out = c_char_p()
        status = _lib.exp_get_qualified_segments_json(handle, _bytes(user_id, "user_id"), byref(out))
        if status:
            _raise(status)
        current: Optional[List[str]] = _take_json(out)
        return current

    def set_qualified_segments(self, user_id: str, segments: Optional[Iterable[str]]) -> None:
        """Replaces the user's qualified segments without ODP (None forgets them)."""
        handle = self._live()  # type: ignore[attr-defined]
        if segments is None:
            payload = None
        else:
            if isinstance(segments, (str, bytes)):
                raise InvalidArgumentError("segments: expected a list of strings, got a single string")
            payload = json.dumps(list(segments)).encode("utf-8")
        status = _lib.exp_set_qualified_segments_json(handle, _bytes(user_id, "user_id"), payload)
        if status:
            _raise(status)

    def identify_user(self, user_id: str) -> None:
        """Queues an ODP identify event linking ``user_id`` to the VUID (once per user)."""
        status = _lib.exp_identify_user(self._live(), _bytes(user_id, "user_id"))  # type: ignore[attr-defined]
        if status:
            _raise(status)

    def send_odp_event(self, action: str, identifiers: Union[Mapping[str, str], str],
                       type: Optional[str] = None, data: Union[Mapping[str, Any], str, None] = None) -> None:
        """Queues a custom ODP event (type defaults to "fullstack"), as the reference's send_odp_event."""
        handle = self._live()  # type: ignore[attr-defined]
        ids = identifiers if isinstance(identifiers, (str, bytes)) else json.dumps(dict(identifiers))
        payload = data if data is None or isinstance(data, (str, bytes)) else json.dumps(dict(data))
        status = _lib.exp_send_odp_event(handle, _bytes(type, "type", optional=True), _bytes(action, "action"),
                                         _bytes(ids, "identifiers"), _bytes(payload, "data", optional=True))
        if status:
            _raise(status)

    def flush_odp_events(self, timeout_s: float = 10.0) -> None:
        """Sends queued ODP events now; WaitTimeoutError when some remain after ``timeout_s``."""
        status = _lib.exp_flush_odp_events(self._live(), _timeout_ms(timeout_s, "timeout_s"))  # type: ignore[attr-defined]
        if status:
            _raise(status)

    @property
    def vuid(self) -> str:
        """The visitor id of the client's state directory (created and persisted on first use)."""
        out = c_char_p()
        status = _lib.exp_get_vuid(self._live(), byref(out))  # type: ignore[attr-defined]
        if status:
            _raise(status)
        raw = out.value
        _lib.exp_free(out)
        return raw.decode("utf-8") if raw else ""
