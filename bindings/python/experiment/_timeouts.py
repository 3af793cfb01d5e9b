"""Timeouts in seconds as the C ABI's int64 milliseconds, saturating instead of wrapping."""

from __future__ import annotations

import numbers
from typing import Any

from .errors import InvalidArgumentError, UnsupportedTypeError

INT64_MAX = (1 << 63) - 1


def timeout_ms(timeout_s: Any, what: str) -> int:
    """A timeout in seconds as the C ABI's int64 milliseconds: anything past its range (1e300, 2**64, inf)
    saturates to INT64_MAX, which the library reads as "wait until done"; NaN and negative values are
    refused rather than wrapped."""
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, numbers.Real):
        raise UnsupportedTypeError("%s: expected a number of seconds, got %s" % (what, type(timeout_s).__name__))
    if timeout_s != timeout_s:
        raise InvalidArgumentError("%s: NaN is not a timeout" % what)
    if timeout_s < 0:
        raise InvalidArgumentError("%s: expected 0 or more seconds, got %r" % (what, timeout_s))
    if timeout_s >= INT64_MAX / 1000:  # inf included
        return INT64_MAX
    return min(int(timeout_s * 1000), INT64_MAX)
