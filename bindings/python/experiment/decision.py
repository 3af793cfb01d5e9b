"""Value types of the binding: Decision, DecideOption and the Event handed to event dispatchers."""

from __future__ import annotations

import enum
import json
import sys
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Union

from . import _native
from .errors import InvalidOptionError

__all__ = ["Decision", "DecideOption", "Event", "decide_options_to_int", "decide_option_names"]


class DecideOption(enum.IntFlag):
    """The EXP_DECIDE_* bits. Members combine with ``|``; the names equal the option names of
    the header (and of Optimizely's ``OptimizelyDecideOption``)."""

    DISABLE_DECISION_EVENT = _native.EXP_DECIDE_DISABLE_DECISION_EVENT
    ENABLED_FLAGS_ONLY = _native.EXP_DECIDE_ENABLED_FLAGS_ONLY
    IGNORE_USER_PROFILE_SERVICE = _native.EXP_DECIDE_IGNORE_USER_PROFILE_SERVICE
    INCLUDE_REASONS = _native.EXP_DECIDE_INCLUDE_REASONS
    EXCLUDE_VARIABLES = _native.EXP_DECIDE_EXCLUDE_VARIABLES
    IGNORE_CMAB_CACHE = _native.EXP_DECIDE_IGNORE_CMAB_CACHE
    RESET_CMAB_CACHE = _native.EXP_DECIDE_RESET_CMAB_CACHE
    INVALIDATE_USER_CMAB_CACHE = _native.EXP_DECIDE_INVALIDATE_USER_CMAB_CACHE


_BY_NAME: Dict[str, int] = {m.name: int(m.value) for m in DecideOption}  # type: ignore[misc]
_ALL_BITS = 0
for _bit in _BY_NAME.values():
    _ALL_BITS |= _bit
# tuple of options -> bits; bounded (cleared when full) because options are usually a few constants
_CACHE: Dict[Any, int] = {}
_CACHE_MAX = 256

OptionsArg = Union[None, int, DecideOption, str, Iterable[Union[str, DecideOption]]]


def _one(option: Any) -> int:
    if isinstance(option, DecideOption):
        return int(option)
    if isinstance(option, str):
        bit = _BY_NAME.get(option)
        if bit is None:
            raise InvalidOptionError(
                "unknown decide option %r; known options: %s" % (option, ", ".join(_BY_NAME)))
        return bit
    if isinstance(option, int) and not isinstance(option, bool):
        if option < 0 or option & ~_ALL_BITS:
            raise InvalidOptionError("decide option bits %#x are not EXP_DECIDE_* bits" % option)
        return option
    raise InvalidOptionError("decide option %r: expected an option name or a DecideOption, got %s"
                             % (option, type(option).__name__))


def decide_options_to_int(options: OptionsArg) -> int:
    """Converts names / DecideOption members (a sequence, or one of them) to the EXP_DECIDE_* bit set.
    Unknown names raise :class:`InvalidOptionError` (a ``ValueError``)."""
    if not options:
        return 0
    if isinstance(options, (str, int)):
        return _one(options)
    try:
        key = tuple(options)
        cached = _CACHE.get(key)
    except TypeError:  # unhashable element, or not iterable at all
        try:
            key = None
            options = list(options)  # type: ignore[arg-type, unused-ignore]
        except TypeError:
            raise InvalidOptionError("decide options: expected a sequence of option names, got %s"
                                     % type(options).__name__) from None
        cached = None
    if cached is not None:
        return cached
    bits = 0
    for option in (key if key is not None else options):  # type: ignore[union-attr, unused-ignore]
        bits |= _one(option)
    if key is not None:
        if len(_CACHE) >= _CACHE_MAX:
            _CACHE.clear()
        _CACHE[key] = bits
    return bits


def decide_option_names(options: OptionsArg) -> List[str]:
    """The option names (in header order) of an options argument, for the client's JSON options."""
    bits = decide_options_to_int(options)
    return [name for name, bit in _BY_NAME.items() if bits & bit]


# Python 3.11+: the fields live in __slots__ (and instances stay weakly referenceable): a decision is
# smaller, its fields read faster, and the C accelerator fills them without a dict. Earlier versions
# keep the instance __dict__ (3.10's frozen slotted dataclasses do not unpickle).
_SLOTTED = sys.version_info >= (3, 11)


@dataclass(frozen=True, **({"slots": True, "weakref_slot": True} if _SLOTTED else {}))  # type: ignore[call-overload, unused-ignore]
class Decision:
    """The result of deciding one flag for one user."""

    flag_key: str
    enabled: bool
    variation_key: Optional[str]
    rule_key: Optional[str]
    variables: Dict[str, Any] = field(default_factory=dict)
    reasons: List[str] = field(default_factory=list)

    __hash__ = None  # type: ignore[assignment]  # has dict/list fields

    def to_dict(self) -> Dict[str, Any]:
        """The decision as a plain dict of its six fields (JSON-serializable)."""
        return {
            "flag_key": self.flag_key,
            "enabled": self.enabled,
            "variation_key": self.variation_key,
            "rule_key": self.rule_key,
            "variables": self.variables,
            "reasons": list(self.reasons),
        }


class Event:
    """One outgoing event batch, as handed to ``event_dispatcher.dispatch_event(event)``.

    ``url`` and ``http_verb`` as the library gives them, ``params`` the JSON body parsed to a dict (the
    reference SDK's event-batch format), ``headers`` the HTTP headers to send and ``body`` the raw bytes.
    """

    __slots__ = ("url", "http_verb", "params", "headers", "body")

    def __init__(self, url: str, http_verb: str, params: Any, body: bytes,
                 headers: Optional[Dict[str, str]] = None) -> None:
        self.url = url
        self.http_verb = http_verb
        self.params = params
        self.body = body
        self.headers = headers if headers is not None else {"Content-Type": "application/json"}

    @classmethod
    def from_body(cls, url: str, http_verb: str, body: bytes) -> "Event":
        """An Event from the URL, HTTP verb and JSON body the library hands a dispatcher."""
        return cls(url, http_verb, json.loads(body), body)

    def __repr__(self) -> str:
        return "Event(url=%r, http_verb=%r, %d body bytes)" % (self.url, self.http_verb, len(self.body))
