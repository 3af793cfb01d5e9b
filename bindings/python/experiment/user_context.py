"""User contexts: ``client.create_user_context(user_id, attributes)``, as optimizely-sdk's OptimizelyUserContext.

A context holds one user id with its own attributes, forced decisions and qualified segments (a native
``exp_user *``). Its methods have the names, arguments and results of the reference's ``OptimizelyUserContext``:
``decide``, ``decide_all``, ``decide_for_keys``, ``track_event``, ``set_attribute``, ``get_user_attributes``,
``set_forced_decision`` / ``get_forced_decision`` / ``remove_forced_decision`` / ``remove_all_forced_decisions``,
``fetch_qualified_segments``, ``is_qualified_for``, ``get_qualified_segments`` / ``set_qualified_segments``, and
the ``user_id`` / ``client`` members. As in the reference, data conditions never raise: deciding an unknown flag
gives the reference's error decision, deciding before the client is ready gives the "not configured" decision
(``decide_all`` / ``decide_for_keys``: ``{}``), tracking an unknown event only logs. Bad arguments (types the
library cannot take) and a closed client raise the binding's errors.

Forced decisions belong to the context: other contexts of the same user id never see them (a copy of a
context, such as the one each decision carries in ``user_context``, keeps its own).
"""

from __future__ import annotations

import ctypes
import json
import logging
import threading
from ctypes import addressof, byref, c_char_p, c_int, c_size_t, c_uint, c_void_p
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, NoReturn, Optional, Tuple

from . import _native
from .decision import _SLOTTED, Decision, OptionsArg, decide_options_to_int
from .errors import (ERR_BUFFER_TOO_SMALL, ERR_INVALID_EVENT_TAGS, ERR_NOT_READY, ERR_UNKNOWN_EVENT,
                     ERR_UNKNOWN_FLAG, ClosedError, InvalidArgumentError, UnsupportedTypeError, error_for_status)

__all__ = ["UserContext", "UserDecision", "OptimizelyDecisionContext", "OptimizelyForcedDecision"]

_lib = _native.lib
_log = logging.getLogger("experiment")


def _client_logger(handle: Any) -> logging.Logger:
    """The logger of the client a user handle belongs to (the one given to Client, else the package's)."""
    return getattr(handle.client_handle, "logger", None) or _log

# The reference's messages (optimizely.decision.optimizely_decision_message).
_SDK_NOT_READY = "Optimizely SDK not configured properly yet."
_FLAG_KEY_INVALID = 'No flag was found for key "{}".'

_SEGMENT_OPTION_BITS = {"IGNORE_CACHE": 1, "RESET_CACHE": 2}

# Guards the copy-on-write bookkeeping of every context (held briefly: changes to contexts are rare).
_cow_lock = threading.Lock()


class OptimizelyDecisionContext:
    """A flag key and an optional rule key (None: the flag as a whole): where a forced decision applies."""

    __slots__ = ("flag_key", "rule_key")

    def __init__(self, flag_key: str, rule_key: Optional[str] = None) -> None:
        self.flag_key = flag_key
        self.rule_key = rule_key

    def __hash__(self) -> int:
        return hash((self.flag_key, self.rule_key))

    def __eq__(self, other: object) -> bool:
        return (self.flag_key, self.rule_key) == (getattr(other, "flag_key", None), getattr(other, "rule_key", None))

    def __repr__(self) -> str:
        return "OptimizelyDecisionContext(%r, %r)" % (self.flag_key, self.rule_key)


class OptimizelyForcedDecision:
    """The variation key a forced decision gives."""

    __slots__ = ("variation_key",)

    def __init__(self, variation_key: str) -> None:
        self.variation_key = variation_key

    def __eq__(self, other: object) -> bool:
        return self.variation_key == getattr(other, "variation_key", None)

    def __repr__(self) -> str:
        return "OptimizelyForcedDecision(%r)" % (self.variation_key,)


@dataclass(frozen=True, **({"slots": True, "weakref_slot": False} if _SLOTTED else {}))
class UserDecision(Decision):
    """A Decision made through a user context: the fields of the reference's OptimizelyDecision, including
    ``user_context`` (a copy of the context as it was when deciding)."""

    user_context: Any = None

    def as_json(self) -> Dict[str, Any]:
        """The decision as the reference's ``OptimizelyDecision.as_json()`` gives it."""
        return {
            "variation_key": self.variation_key,
            "enabled": self.enabled,
            "variables": self.variables,
            "rule_key": self.rule_key,
            "flag_key": self.flag_key,
            "user_context": self.user_context.as_json() if self.user_context is not None else None,
            "reasons": list(self.reasons),
        }


_setattr = object.__setattr__
_new = object.__new__

# Helpers of the client module, bound on first use (client.py imports this module).
_client_helpers: Dict[str, Any] = {}


def _bind() -> None:
    if _client_helpers:
        return
    from . import client as client_module
    from ctypes import CFUNCTYPE
    _client_helpers.update(
        string=client_module._string, variables=client_module._variables,
        decision_key=client_module._decision_key, decision_reasons=client_module._decision_reasons,
        attributes=client_module._attributes, value_tuple=client_module._value_tuple,
        attributes_n=client_module._attributes_n, attribute_n=client_module._new_attribute_n,
        decisions_by_flag=client_module._decisions_by_flag, key=client_module._key,
        release=client_module._exp_decision_release,
        # Plain addresses and ints, as the client's own decide path: ctypes converts them fastest.
        decide=CFUNCTYPE(c_int, c_void_p, c_char_p, c_size_t, c_uint, c_void_p)(("exp_user_decide", _lib)),
        fast=None)
    speedups = client_module._speedups
    if speedups is not None and _SLOTTED and hasattr(speedups, "user_decide"):
        from ctypes import cast
        try:
            speedups.install_user_context(cast(_lib.exp_user_decide, c_void_p).value, UserDecision)
            _client_helpers["fast"] = speedups.user_decide
        except Exception as exc:  # an accelerator built from another version of this package
            _log.warning("experiment._speedups not used for user contexts (%s)", exc)


_SETTERS: Optional[Tuple[Any, ...]]
if _SLOTTED:  # the slots' own setters, as client.py fills Decision
    _SETTERS = tuple(getattr(UserDecision, name).__set__ for name in (
        "flag_key", "enabled", "variation_key", "rule_key", "variables", "reasons", "user_context"))
else:
    _SETTERS = None


def _fill(made: UserDecision, values: Tuple[Any, ...]) -> UserDecision:
    if _SETTERS is not None:
        for setter, value in zip(_SETTERS, values):
            setter(made, value)
    else:
        made.__dict__.update(zip(("flag_key", "enabled", "variation_key", "rule_key", "variables", "reasons",
                                  "user_context"), values))
    return made


def _user_decision(decision: Decision, context: "UserContext") -> UserDecision:
    return _fill(_new(UserDecision), (decision.flag_key, decision.enabled, decision.variation_key,
                                      decision.rule_key, decision.variables, decision.reasons, context))


def _from_native(d: Any, flag_key: Any, context: "UserContext") -> UserDecision:
    # Keys and reasons are read with their lengths: they may hold NUL bytes (a datafile key, a user id).
    key = _client_helpers["decision_key"]
    reasons = _client_helpers["decision_reasons"](d) if d.reason_count else []
    return _fill(_new(UserDecision), (flag_key, d.enabled != 0, key(d, _native.EXP_DECISION_VARIATION_KEY),
                                      key(d, _native.EXP_DECISION_RULE_KEY),
                                      _client_helpers["variables"](d.variables_json), reasons, context))


def _error_decision(flag_key: Any, context: "UserContext", reasons: List[str]) -> UserDecision:
    return _fill(_new(UserDecision), (flag_key, False, None, None, {}, reasons, context))


def _utf8(value: Any, what: str) -> bytes:
    """str or bytes -> UTF-8 bytes (NUL bytes allowed: every context call passes a length)."""
    if type(value) is str:
        try:
            return value.encode("utf-8")
        except UnicodeEncodeError as exc:
            from .errors import InvalidUTF8Error
            raise InvalidUTF8Error("%s: cannot be encoded as UTF-8 (%s at index %d)"
                                   % (what, exc.reason, exc.start)) from None
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        return _utf8(str(value), what)
    raise UnsupportedTypeError("%s: expected str, got %s" % (what, type(value).__name__))


def _raise(status: int) -> NoReturn:
    raise error_for_status(status, _native.last_error())


class _UserHandle(c_void_p):
    """An exp_user * that frees itself when the last context using it goes. It keeps its client's Python
    handle alive, so the native client is never freed under it."""

    __slots__ = ("client_handle",)

    def __init__(self, address: int, client_handle: Any) -> None:
        super().__init__(address)
        self.client_handle = client_handle

    def __del__(self) -> None:
        address = self.value
        if address:
            self.value = None
            try:
                _lib.exp_user_free(address)
            except Exception:  # interpreter shutdown
                pass


_ForcedDecision = OptimizelyForcedDecision


class UserContext:
    """One user of a client: ``client.create_user_context(user_id, attributes=None)``.

    Copying is cheap: a copy shares the native context until one of them changes (copy on write), so every
    decision can carry a copy of its context in ``user_context``, as the reference's do.
    """

    __slots__ = ("client", "user_id", "_attributes", "_h", "_shared", "__weakref__")

    OptimizelyDecisionContext = OptimizelyDecisionContext
    OptimizelyForcedDecision = OptimizelyForcedDecision

    def __init__(self, client: Any, user_id: str, attributes: Optional[Dict[str, Any]] = None) -> None:
        _bind()
        # exp_attribute_n: keys and string values cross with their lengths, so they may hold NUL bytes (the
        # reference's contexts take any str, as its decide does).
        typed_attributes = _client_helpers["attributes_n"]
        if attributes is not None and not hasattr(attributes, "items"):
            raise UnsupportedTypeError("attributes: expected a dict, got %s" % type(attributes).__name__)
        if not isinstance(user_id, (str, bytes)):
            raise UnsupportedTypeError("user_id: expected str, got %s" % type(user_id).__name__)
        self.client = client
        self.user_id = user_id
        self._attributes: Dict[str, Any] = dict(attributes) if attributes else {}
        self._shared = False
        client_handle = client._live()
        array, count = typed_attributes(self._attributes)
        raw_id = _utf8(user_id, "user_id")
        out = c_void_p()
        status = _lib.exp_user_create_n(client_handle, raw_id, len(raw_id),
                                      addressof(array) if array is not None else None, count, byref(out))
        if status:
            _raise(status)
        self._h = _UserHandle(out.value or 0, client_handle)

    # -- copies ------------------------------------------------------------------------------------

    def _clone(self) -> "UserContext":
        """A copy with its own attributes, forced decisions and segments. It shares the native context and
        the attribute dict until either one changes (copy on write), so a copy costs a few attribute stores."""
        copy = _new(UserContext)
        copy.client = self.client
        copy.user_id = self.user_id
        with _cow_lock:
            copy._attributes = self._attributes
            copy._h = self._h
            copy._shared = self._shared = True
        return copy

    copy = _clone

    def _own(self) -> _UserHandle:
        """The native context, made private to this context first if a copy may share it (call under
        _cow_lock): the native context is cloned and the attribute dict copied."""
        handle = self._h
        if self._shared:
            out = c_void_p()
            status = _lib.exp_user_clone(handle, byref(out))
            if status:
                _raise(status)
            handle = self._h = _UserHandle(out.value or 0, handle.client_handle)
            self._attributes = dict(self._attributes)
            self._shared = False
        return handle

    def _live(self) -> _UserHandle:
        if self.client._h is None:
            raise ClosedError("the client is closed")
        return self._h

    # -- attributes --------------------------------------------------------------------------------

    def get_user_attributes(self) -> Dict[str, Any]:
        """A copy of the context's attributes."""
        return dict(self._attributes)

    def set_attribute(self, attribute_key: str, attribute_value: Any) -> None:
        """Sets one attribute (used by every later decision and conversion of this context)."""
        attribute = _client_helpers["attribute_n"]((attribute_key, attribute_value), None)
        if attribute is None:  # a key that is not a str: no condition can name it (kept for get_user_attributes)
            with _cow_lock:
                self._own()
                self._attributes[attribute_key] = attribute_value
            return
        with _cow_lock:
            status = _lib.exp_user_set_attribute_n(self._own(), byref(attribute))
            if status:
                _raise(status)
            self._attributes[attribute_key] = attribute_value

    def as_json(self) -> Dict[str, Any]:
        """``{"user_id": ..., "attributes": {...}}``, as the reference's context gives it."""
        return {"user_id": self.user_id, "attributes": self.get_user_attributes()}

    def __repr__(self) -> str:
        return "UserContext(%r, %r)" % (self.user_id, self.get_user_attributes())

    # -- decisions ---------------------------------------------------------------------------------

    def decide(self, key: str, options: OptionsArg = None) -> UserDecision:
        """Decides flag ``key`` for this context (``options``: decide option names)."""
        handle = self._h
        if self.client._h is None:
            raise ClosedError("the client is closed")
        bits = decide_options_to_int(options) if options else 0
        fast = _client_helpers["fast"]
        if fast is not None:
            # The accelerator: the native call and the UserDecision in C (None: a key it leaves to us).
            result = fast(handle.value, key, bits, self._clone())
            if isinstance(result, UserDecision):
                return result
            if result is not None:
                return self._failed_decision(result, key)
        # (A key with a NUL byte is passed whole, with its length: a datafile key may hold "\u0000".)
        raw = _client_helpers["key"](key, "flag_key") if type(key) is str and "\0" not in key else _utf8(key, "flag_key")
        decision = _native.ExpDecision()
        address = addressof(decision)
        status = _client_helpers["decide"](handle.value, raw, len(raw), bits, address)
        if status:
            return self._failed_decision(status, key)
        try:
            return _from_native(decision, key, self._clone())
        finally:
            _client_helpers["release"](address)

    def _failed_decision(self, status: int, key: Any) -> UserDecision:
        """The reference's decision for an unknown flag or a client not ready; raises for other statuses."""
        if status == ERR_UNKNOWN_FLAG:
            return _error_decision(key, self._clone(), [_FLAG_KEY_INVALID.format(key)])
        if status == ERR_NOT_READY:
            return _error_decision(key, self._clone(), [_SDK_NOT_READY])
        _raise(status)

    def decide_all(self, options: OptionsArg = None) -> Dict[str, UserDecision]:
        """Decides every flag of the datafile (in datafile order); ``{}`` before the client is ready."""
        handle = self._live()
        bits = decide_options_to_int(options) if options else 0
        capacity = c_size_t()
        status = _lib.exp_flag_count(handle.client_handle, byref(capacity))
        for _attempt in range(8):  # the datafile may be replaced between the two calls
            if status == ERR_NOT_READY:
                return {}
            if status:
                _raise(status)
            cap = capacity.value
            decisions = (_native.ExpDecision * max(cap, 1))()
            filled = c_size_t()
            status = _lib.exp_user_decide_all(handle, bits, decisions, cap, byref(filled))
            if status == ERR_BUFFER_TOO_SMALL:
                capacity = c_size_t(filled.value)
                status = 0
                continue
            if status == ERR_NOT_READY:
                return {}
            if status:
                _raise(status)
            n = min(filled.value, cap)
            try:
                by_flag = _client_helpers["decisions_by_flag"](decisions, n)
            finally:
                _lib.exp_decisions_release(decisions, n)
            copy = self._clone()
            return {flag: _user_decision(d, copy) for flag, d in by_flag.items()}
        raise error_for_status(ERR_BUFFER_TOO_SMALL, "exp_user_decide_all kept asking for a larger buffer")

    def decide_for_keys(self, keys: Iterable[str], options: OptionsArg = None) -> Dict[str, UserDecision]:
        """Decides the flags ``keys``; an unknown key gives a disabled decision without reasons. ``{}``
        before the client is ready."""
        handle = self._live()
        if isinstance(keys, (str, bytes)) or keys is None:
            raise UnsupportedTypeError("keys: expected a list of flag keys, got %s" % type(keys).__name__)
        names = list(keys)
        raws = [_utf8(name, "flag key") for name in names]
        count = len(raws)
        bits = decide_options_to_int(options) if options else 0
        key_array = (c_char_p * max(count, 1))(*raws)
        length_array = (c_size_t * max(count, 1))(*[len(raw) for raw in raws])
        decisions = (_native.ExpDecision * max(count, 1))()
        filled = c_size_t()
        status = _lib.exp_user_decide_for_keys(handle, key_array, length_array, count, bits, decisions, count,
                                               byref(filled))
        if status == ERR_NOT_READY:
            return {}
        if status:
            _raise(status)
        copy = self._clone()
        result: Dict[str, UserDecision] = {}
        try:
            key = _client_helpers["decision_key"]
            for i in range(filled.value):
                flag_key = key(decisions[i], _native.EXP_DECISION_FLAG_KEY)
                result[flag_key] = _from_native(decisions[i], flag_key, copy)
        finally:
            _lib.exp_decisions_release(decisions, filled.value)
        return result

    # -- conversions -------------------------------------------------------------------------------

    def track_event(self, event_key: str, event_tags: Optional[Dict[str, Any]] = None) -> None:
        """Records conversion ``event_key`` for this context's user with its attributes. An unknown event, a
        client not ready yet or event tags the reference refuses are logged, not raised (as the reference)."""
        handle = self._live()
        raw = _utf8(event_key, "event_key")
        if event_tags is None:
            tags_json = None
        else:
            if not isinstance(event_tags, dict):
                _client_logger(handle).error("Provided event tags are in an invalid format.")
                return
            try:
                tags_json = json.dumps(event_tags, allow_nan=False).encode("utf-8")
            except (TypeError, ValueError) as exc:
                raise InvalidArgumentError("event_tags: %s" % exc) from None
        status = _lib.exp_user_track(handle, raw, len(raw), tags_json)
        if status in (ERR_UNKNOWN_EVENT, ERR_NOT_READY, ERR_INVALID_EVENT_TAGS):
            _client_logger(handle).error("track_event(%r): %s", event_key, _native.last_error())
            return
        if status:
            _raise(status)

    # -- forced decisions --------------------------------------------------------------------------

    @staticmethod
    def _context_keys(decision_context: Any) -> Any:
        try:
            flag_key = decision_context.flag_key
            rule_key = decision_context.rule_key
        except AttributeError:
            raise UnsupportedTypeError("decision_context: expected an OptimizelyDecisionContext, got %s"
                                       % type(decision_context).__name__) from None
        flag = _utf8(flag_key, "flag_key")
        rule = None if rule_key is None else _utf8(rule_key, "rule_key")
        return flag, rule

    def set_forced_decision(self, decision_context: Any, decision: Any) -> bool:
        """Forces ``decision.variation_key`` for ``decision_context`` (flag key, and rule key or None) in this
        context only. Returns True."""
        flag, rule = self._context_keys(decision_context)
        variation = _utf8(getattr(decision, "variation_key", None) if decision is not None else None,
                          "variation_key") if getattr(decision, "variation_key", None) is not None else None
        if variation is None:
            raise InvalidArgumentError("decision: expected an OptimizelyForcedDecision with a variation key")
        self._live()
        with _cow_lock:
            status = _lib.exp_user_set_forced_decision(self._own(), flag, len(flag), rule,
                                                       len(rule) if rule is not None else 0, variation,
                                                       len(variation))
        if status:
            _raise(status)
        return True

    def get_forced_decision(self, decision_context: Any) -> Optional["_ForcedDecision"]:
        """The forced decision for ``decision_context``, or None."""
        flag, rule = self._context_keys(decision_context)
        out, length = c_void_p(), c_size_t()
        status = _lib.exp_user_get_forced_decision_len(self._live(), flag, len(flag), rule,
                                                       len(rule) if rule is not None else 0, byref(out),
                                                       byref(length))
        if status:
            _raise(status)
        if out.value is None:
            return None
        variation = ctypes.string_at(out.value, length.value).decode("utf-8")
        _lib.exp_free(out)
        return OptimizelyForcedDecision(variation)

    def remove_forced_decision(self, decision_context: Any) -> bool:
        """Removes the forced decision for ``decision_context``; True when there was one."""
        flag, rule = self._context_keys(decision_context)
        removed = c_int()
        self._live()
        with _cow_lock:
            status = _lib.exp_user_remove_forced_decision(self._own(), flag, len(flag), rule,
                                                          len(rule) if rule is not None else 0, byref(removed))
        if status:
            _raise(status)
        return removed.value != 0

    def remove_all_forced_decisions(self) -> bool:
        """Removes every forced decision of this context. Returns True."""
        self._live()
        with _cow_lock:
            status = _lib.exp_user_remove_all_forced_decisions(self._own())
        if status:
            _raise(status)
        return True

    # -- qualified segments ------------------------------------------------------------------------

    def get_qualified_segments(self) -> Optional[List[str]]:
        """A copy of the context's qualified segments; None when never fetched or set."""
        out = c_char_p()
        status = _lib.exp_user_get_qualified_segments_json(self._h, byref(out))
        if status:
            _raise(status)
        raw = out.value
        _lib.exp_free(out)
        return json.loads(raw) if raw is not None else None

    def set_qualified_segments(self, segments: Optional[List[str]]) -> None:
        """Replaces the context's qualified segments (None forgets them)."""
        if segments is not None and (isinstance(segments, (str, bytes)) or not hasattr(segments, "__iter__")):
            raise UnsupportedTypeError("segments: expected a list of str or None, got %s" % type(segments).__name__)
        text = json.dumps(None if segments is None else list(segments)).encode("utf-8")
        with _cow_lock:
            status = _lib.exp_user_set_qualified_segments_json(self._own(), text)
        if status:
            _raise(status)

    qualified_segments = property(get_qualified_segments, set_qualified_segments)

    def is_qualified_for(self, segment: str) -> bool:
        """Whether ``segment`` is among the context's qualified segments."""
        raw = _utf8(segment, "segment")
        out = c_int()
        status = _lib.exp_user_is_qualified_for(self._h, raw, len(raw), byref(out))
        if status:
            _raise(status)
        return out.value != 0

    def fetch_qualified_segments(self, callback: Any = None, options: Optional[List[str]] = None) -> Any:
        """Fetches the user's qualified segments from ODP (cache first; ``options``: "IGNORE_CACHE",
        "RESET_CACHE") into the context. Returns True on success, False otherwise (the context then has
        none). With ``callback``, fetches on a thread, calls ``callback(success)`` there and returns the thread."""
        bits = 0
        for option in options or ():
            name = option.upper() if isinstance(option, str) else getattr(option, "value", option)
            if name not in _SEGMENT_OPTION_BITS:
                raise InvalidArgumentError("segment option %r: expected IGNORE_CACHE or RESET_CACHE" % (option,))
            bits |= _SEGMENT_OPTION_BITS[name]

        def fetch() -> bool:
            with _cow_lock:
                handle = self._own()
            status = _lib.exp_user_fetch_qualified_segments(handle, bits, None)
            if status:
                _client_logger(handle).error("fetch_qualified_segments: %s", _native.last_error())
            success: bool = status == 0
            if callable(callback):
                callback(success)
            return success

        self._live()
        if callback:
            thread = threading.Thread(target=fetch, name="FetchQualifiedSegmentsThread")
            thread.start()
            return thread
        return fetch()


class UserContextMixin:
    """Client.create_user_context (mixed into Client)."""

    __slots__ = ()

    def create_user_context(self, user_id: str, attributes: Optional[Dict[str, Any]] = None) -> UserContext:
        """A user context for ``user_id`` with ``attributes`` (copied), as optimizely-sdk's
        ``create_user_context``. The client need not be ready yet."""
        return UserContext(self, user_id, attributes)

    def user_profile(self, user_id: str) -> Optional[Dict[str, Any]]:
        """The user's stored sticky-bucketing profile, read from the profile store itself:
        ``{"user_id": ..., "experiment_bucket_map": {experiment_id: {"variation_id": ...}}}``, or None when it
        has none. Raises NotFoundError when the client has no profile store (profile_store="none")."""
        raw = _utf8(user_id, "user_id")
        out = c_char_p()
        status = _lib.exp_profile_get(self._live(), raw, len(raw), byref(out))  # type: ignore[attr-defined]
        if status:
            _raise(status)
        text = out.value
        if text is None:
            return None
        _lib.exp_free(out)
        profile: Dict[str, Any] = json.loads(text)
        return profile

    def delete_user_profile(self, user_id: str) -> bool:
        """Deletes the user's stored profile (store and cache); True when there was one. The user is
        bucketed afresh at the next decision."""
        raw = _utf8(user_id, "user_id")
        deleted = c_int()
        status = _lib.exp_profile_delete(self._live(), raw, len(raw), byref(deleted))  # type: ignore[attr-defined]
        if status:
            _raise(status)
        return deleted.value != 0
