"""Python callables handed to the library's asynchronous calls (Kameleoon's runWhenReady and completion
handlers): run-when-ready, a conversion's or a user flush's delivery, an asynchronous flush.

One ctypes callback per client and kind serves every call; each call's ``user_data`` is the id of its
pending Python callable, so a callable (and the ctypes object the library calls) stays alive until the
library called it, exactly once. Exceptions raised by a callable are logged on the ``experiment`` logger,
never propagated into C.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable, Dict, Optional

from . import _native
from .errors import Error, error_for_status

__all__ = ["DeliveryResult", "PendingCalls"]

_log = logging.getLogger("experiment")


class DeliveryResult:
    """The outcome a delivery callback (``on_complete``) receives: ``ok`` (true when every event was
    delivered; the result itself is truthy then, like Kameleoon's success flag), ``sent`` (how many events
    were delivered) and ``error`` (None, or the :class:`Error` saying why not: DeliveryFailedError,
    WaitTimeoutError, ClosedError)."""

    __slots__ = ("ok", "sent", "error")

    def __init__(self, sent: int, error: Optional[Error]) -> None:
        self.ok: bool = error is None
        self.sent: int = sent
        self.error: Optional[Error] = error

    def __bool__(self) -> bool:
        return self.ok

    def __repr__(self) -> str:
        return "DeliveryResult(ok=%r, sent=%d, error=%r)" % (self.ok, self.sent, self.error)


def _message() -> str:
    raw = _native.lib.exp_last_error()
    return raw.decode("utf-8", "replace") if raw else ""


class PendingCalls:
    """The pending callables of one client, by id, with the two ctypes callbacks that reach them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: Dict[int, Callable[..., None]] = {}
        self._next_id = 1
        self.ready_callback = _native.EXP_READY_FN(self._on_ready)
        self.delivery_callback = _native.EXP_DELIVERY_FN(self._on_delivery)

    def add(self, function: Callable[..., None]) -> int:
        """Keeps ``function`` until the library calls it; its id goes to the library as user_data."""
        with self._lock:
            ident = self._next_id
            self._next_id += 1
            self._pending[ident] = function
            return ident

    def discard(self, ident: int) -> None:
        """The call failed, so the library will not call back: forget the callable."""
        with self._lock:
            self._pending.pop(ident, None)

    def _take(self, user_data: Any) -> Optional[Callable[..., None]]:
        with self._lock:
            return self._pending.pop(int(user_data or 0), None)

    def _on_ready(self, status: int, user_data: Any) -> None:
        try:
            function = self._take(user_data)
            if function is not None:
                function(status == 0)
        except BaseException:  # nothing may propagate into C
            _log.exception("run_when_ready callback failed")

    def _on_delivery(self, status: int, sent: int, user_data: Any) -> None:
        try:
            function = self._take(user_data)
            if function is not None:
                error = None if status == 0 else error_for_status(status, _message())
                function(DeliveryResult(int(sent), error))
        except BaseException:  # nothing may propagate into C
            _log.exception("on_complete callback failed")


def checked_callable(function: Any, name: str) -> Callable[..., None]:
    """``function`` when it is callable, else a TypeError naming the argument."""
    if not callable(function):
        raise TypeError("%s: expected a callable, got %r" % (name, function))
    result: Callable[..., None] = function
    return result
