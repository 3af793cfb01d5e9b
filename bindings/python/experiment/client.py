"""The Client: one libexperiment client handle (exp_client *) and the calls on it."""

from __future__ import annotations

import atexit
import ctypes
import json
import logging
import weakref
import marshal
import numbers
import os
from ctypes import (CFUNCTYPE, addressof, byref, c_char_p, c_double, c_int, c_int64, c_size_t, c_uint, c_void_p,
                    cast, string_at)
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple, Union

from . import _native
from ._native import EXP_EVENT_DISPATCH_FN, EXP_LOG_FN, EXP_NOTIFICATION_FN, EXP_READY_FN, ExpAttribute, ExpDecision, ExpValue
from ._native import ExpAttributeN
from ._native import EXP_PROFILE_LOOKUP_FN, EXP_PROFILE_SAVE_FN
from ._optimizely_config import OptimizelyConfig, optimizely_config_from_json
from .decision import _CACHE as _OPTION_BITS
from .decision import _SLOTTED, DecideOption, Decision, Event, OptionsArg, decide_options_to_int
from ._timeouts import timeout_ms as _timeout_ms
from .segments import SegmentsMixin  # real-time segments (ODP) methods
from .user_context import UserContextMixin  # create_user_context
from .start_modes import resolve as _resolve_start
from .sigma import UserExperiment
from .callbacks import DeliveryResult, PendingCalls, checked_callable
from .errors import (
    ERR_BUFFER_TOO_SMALL,
    ERR_CLOSED,
    ERR_INTERNAL,
    ERR_INVALID_ARGUMENT,
    ERR_INVALID_EVENT_TAGS,
    ERR_INVALID_JSON,
    ERR_INVALID_UTF8,
    ERR_NOT_READY,
    ERR_TOO_DEEP,
    ERR_TOO_LARGE,
    ERR_TIMEOUT,
    ERR_UNKNOWN_EVENT,
    ERR_UNKNOWN_EXPERIMENT,
    ERR_UNKNOWN_FLAG,
    ERR_UNKNOWN_VARIATION,
    ERR_NOT_FOUND,
    ClosedError,
    InvalidArgumentError,
    InvalidOptionError,
    InvalidUTF8Error,
    UnsupportedTypeError,
    error_for_status,
)

__all__ = ["Client", "validate_datafile", "library_version"]

_log = logging.getLogger("experiment")

Text = Union[str, bytes]
# Mapping is invariant in its key type: a Mapping[str | bytes, Any] alone would refuse a Dict[str, Any].
Attributes = Optional[Union[Mapping[str, Any], Mapping[bytes, Any], Mapping[Text, Any]]]

_lib = _native.lib
_last_error = _lib.exp_last_error
_exp_free = _lib.exp_free
# The decide path declares its pointer parameters as plain addresses (c_void_p) and passes ints:
# ctypes converts an int far faster than it type-checks an array or a byref() object.
_exp_decide = CFUNCTYPE(c_int, c_void_p, c_char_p, c_char_p, c_void_p, c_size_t, c_uint, c_void_p)(
    ("exp_decide", _lib))
_exp_decision_release = CFUNCTYPE(None, c_void_p)(("exp_decision_release", _lib))
_exp_decide_n = CFUNCTYPE(c_int, c_void_p, c_char_p, c_size_t, c_char_p, c_size_t, c_void_p, c_size_t, c_uint,
                          c_void_p)(("exp_decide_n", _lib))

# The statuses the evaluation calls answer as the reference answers data it cannot use (no exception): an
# unknown key, no datafile yet, a user id, key, attribute or tags the library cannot take.
_DATA_CONDITIONS = frozenset([ERR_NOT_READY, ERR_UNKNOWN_FLAG, ERR_UNKNOWN_EXPERIMENT, ERR_UNKNOWN_EVENT,
                              ERR_TOO_LARGE, ERR_INVALID_UTF8, ERR_INVALID_EVENT_TAGS, ERR_INVALID_JSON,
                              ERR_TOO_DEEP])

# The reference SDK's reasons for its error decisions (OptimizelyDecisionMessage).
_SDK_NOT_READY = "Optimizely SDK not configured properly yet."
_FLAG_KEY_INVALID = 'No flag was found for key "{}".'


def _load_speedups() -> Any:
    """The optional C accelerator (experiment/_speedups.c); None when it is not built or EXPERIMENT_NO_SPEEDUPS
    is set. Results are the same either way. _install_speedups() wires it up once Client exists."""
    if os.environ.get("EXPERIMENT_NO_SPEEDUPS"):
        return None
    try:
        from . import _speedups  # type: ignore[attr-defined]
    except ImportError:
        return None
    return _speedups


_speedups = _load_speedups()

_EXCLUDE_VARIABLES = int(DecideOption.EXCLUDE_VARIABLES)  # a plain int: `bits | flag` skips IntFlag's operators
_DISABLE_DECISION_EVENT = int(DecideOption.DISABLE_DECISION_EVENT)
_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1
_CACHE_MAX = 4096          # entries per cache (a full cache is cleared)
_CACHED_VALUE_MAX = 256    # longer strings are encoded per call, never cached


def _raise(status: int) -> "NoReturn":  # type: ignore[name-defined]  # noqa: F821
    """Raises the exception for a failed call. Must run right after the call, on the same thread."""
    raw = _last_error()
    raise error_for_status(status, raw.decode("utf-8", "replace") if raw else "")


# ------------------------------------------------------------------------------------------------
# Text arguments
# ------------------------------------------------------------------------------------------------

def _encode_slow(value: Any, what: str) -> Optional[bytes]:
    """str -> UTF-8 bytes; bytes as-is (so callers can hand the library any bytes); None -> NULL."""
    if isinstance(value, str):
        try:
            encoded = value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidUTF8Error("%s: cannot be encoded as UTF-8 (%s at index %d)"
                                   % (what, exc.reason, exc.start)) from None
    elif isinstance(value, bytes):
        encoded = value
    elif isinstance(value, (bytearray, memoryview)):
        encoded = bytes(value)
    elif value is None:
        return None
    else:
        raise UnsupportedTypeError("%s: expected str or bytes, got %s" % (what, type(value).__name__))
    if b"\0" in encoded:
        raise InvalidArgumentError("%s: contains a NUL character" % what)
    return encoded


# str -> bytes for keys (flag, experiment, event, attribute keys), which repeat from call to call.
_KEYS: Dict[str, bytes] = {}


def _key(value: Any, what: str) -> Optional[bytes]:
    if type(value) is str:
        encoded = _KEYS.get(value)
        if encoded is not None:
            return encoded
        encoded = _encode_slow(value, what)
        if len(value) <= _CACHED_VALUE_MAX:
            if len(_KEYS) >= _CACHE_MAX:
                _KEYS.clear()
            _KEYS[value] = encoded  # type: ignore[assignment]
        return encoded
    return _encode_slow(value, what)


def _id_text(value: Any, what: str) -> Optional[bytes]:
    """An experiment id as the datafile writes it: a str, or an int (Kameleoon's ids are ints: 3001 is
    "3001"). A bool is a programmer error (True is not an id), refused like any other type."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value).encode("ascii")
    if isinstance(value, bool):
        raise UnsupportedTypeError("%s: expected a str or int id, got bool" % what)
    return _key(value, what)


def _goal_id(value: Any) -> int:
    """A Kameleoon goal id: an int, or a str of decimal digits ("83023"); never a bool."""
    if isinstance(value, str) and value.isascii() and value.isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise UnsupportedTypeError("goal_id: expected an int (or a str of digits), got %s" % type(value).__name__)
    goal: int = value
    if not -(1 << 63) <= goal < (1 << 63):
        raise InvalidArgumentError("goal_id: %d is out of range" % goal)
    return goal


def _group_index(group_index: Any) -> int:
    """A forced membership's variation position for the C call: None is -1 (the bucketed variation)."""
    index = -1 if group_index is None else group_index
    if not isinstance(index, int) or isinstance(index, bool):
        raise UnsupportedTypeError("group_index: expected an int or None, got %s" % type(group_index).__name__)
    if index < -1 or index > 0x7FFFFFFF:
        raise InvalidArgumentError("group_index: %d is not a variation position" % index)
    return index


def _text(value: Any, what: str) -> Optional[bytes]:
    """Like _key, uncached: for user ids and other values that rarely repeat."""
    if type(value) is str:
        try:
            encoded = value.encode("utf-8")
        except UnicodeEncodeError:
            return _encode_slow(value, what)
        if b"\0" in encoded:
            raise InvalidArgumentError("%s: contains a NUL character" % what)
        return encoded
    return _encode_slow(value, what)


def _json_dict(text: str) -> Dict[str, Any]:
    """A JSON object the library wrote (typed for callers: the library's JSON outputs are documented)."""
    value: Dict[str, Any] = json.loads(text)
    return value


def _json_list(text: str) -> List[Dict[str, Any]]:
    """A JSON array of objects the library wrote."""
    value: List[Dict[str, Any]] = json.loads(text)
    return value


def _take_sized_string(out: c_void_p, length: c_size_t) -> Optional[str]:
    """Reads and frees a `char **` result whose length the library gave (it may contain NUL bytes)."""
    if out.value is None:
        return None
    raw = ctypes.string_at(out.value, length.value)
    _exp_free(out)
    return raw.decode("utf-8")


def _take_string(out: c_char_p) -> Optional[str]:
    """Reads and frees a `char **` result."""
    raw = out.value
    if raw is None:
        return None
    _exp_free(out)
    return raw.decode("utf-8")


def _datafile_bytes(datafile: Any) -> Optional[bytes]:
    if isinstance(datafile, str):
        try:
            return datafile.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidUTF8Error("datafile: cannot be encoded as UTF-8 (%s at index %d)"
                                   % (exc.reason, exc.start)) from None
    if isinstance(datafile, bytes):
        return datafile
    if isinstance(datafile, (bytearray, memoryview)):
        return bytes(datafile)
    if datafile is None:
        return None
    raise UnsupportedTypeError("datafile: expected str or bytes, got %s" % type(datafile).__name__)


# ------------------------------------------------------------------------------------------------
# Typed values and attributes
# ------------------------------------------------------------------------------------------------

def _value_fields(value: Any) -> Tuple[int, int, int, float, Optional[bytes]]:
    """The exp_value fields for any Python value, as the reference SDK types it; never raises. bool before int
    (bool is an int). Strings may contain NUL (the length-delimited calls take them; see _plain_attribute)."""
    if value is None:
        return (_native.EXP_VALUE_NULL, 0, 0, 0.0, None)
    if isinstance(value, str):
        try:
            return (_native.EXP_VALUE_STRING, 0, 0, 0.0, value.encode("utf-8"))
        except UnicodeEncodeError:  # lone surrogates: no UTF-8 for the library to compare
            _log.warning("attribute value %r cannot be encoded as UTF-8: conditions treat it as an unsupported type",
                         value)
            return (_native.EXP_VALUE_OTHER, 0, 0, 0.0, None)
    if isinstance(value, bool):
        return (_native.EXP_VALUE_BOOL, 1 if value else 0, 0, 0.0, None)
    if isinstance(value, numbers.Integral):  # int and its subclasses, and other integer types
        number = int(value)
        if _INT64_MIN <= number <= _INT64_MAX:
            return (_native.EXP_VALUE_INT, 0, number, 0.0, None)
        return (_native.EXP_VALUE_BIG_INT, 0, 0, 0.0, str(number).encode("ascii"))
    if isinstance(value, float):  # NaN and infinities too: conditions treat them as the reference does
        return (_native.EXP_VALUE_DOUBLE, 0, 0, float(value), None)
    # dict, list, bytes, any other object: present for "exists", unknown for every other condition (bytes are
    # not text to the reference: b"NL" never equals "NL")
    return (_native.EXP_VALUE_OTHER, 0, 0, 0.0, None)


def _value_tuple(key: Any, value: Any, what: str) -> Tuple[int, int, int, float, Optional[bytes]]:
    """The exp_value fields for a value passed through a NUL-terminated call (exp_value, exp_attribute)."""
    fields = _value_fields(value)
    if fields[4] is not None and b"\0" in fields[4]:
        raise InvalidArgumentError("%s %r: contains a NUL character (only decide, decide_all, decide_for_keys, "
                                   "get_variation, activate and track take those)" % (what, key))
    return fields


def _property_value(key: Any, value: Any) -> Tuple[int, int, int, float, Optional[bytes]]:
    """The exp_value of a stored user property: stricter than a per-call attribute, as a property is kept and
    read back (get_user_properties): str, int within 64 bits, float, bool or None."""
    if isinstance(value, (str, bytes, bytearray, memoryview)):
        encoded = _encode_slow(value, "property %r" % (key,))  # InvalidUTF8Error / NUL, as for any stored text
        try:
            encoded.decode("utf-8")  # type: ignore[union-attr]
        except UnicodeDecodeError:
            raise InvalidUTF8Error("property %r: not valid UTF-8" % (key,)) from None
    fields = _value_tuple(key, value, "property")
    if fields[0] == _native.EXP_VALUE_BIG_INT:
        raise InvalidArgumentError("property %r: integer %d does not fit in 64 bits" % (key, value))
    if fields[0] == _native.EXP_VALUE_OTHER:
        raise UnsupportedTypeError("property %r: unsupported value type %s (expected str, int, float, bool or None)"
                                   % (key, type(value).__name__))
    return fields


def _attribute_key(key: Any) -> Optional[bytes]:
    """UTF-8 of an attribute key; None (the attribute is left out, as the reference leaves out a key no
    condition can name) for a key that is not a str or bytes or has no UTF-8."""
    if type(key) is str:
        encoded = _KEYS.get(key)
        if encoded is not None:
            return encoded
    if isinstance(key, str):
        try:
            encoded = key.encode("utf-8")
        except UnicodeEncodeError:
            _log.warning("attribute key %r cannot be encoded as UTF-8: the attribute is left out", key)
            return None
        if type(key) is str and len(key) <= _CACHED_VALUE_MAX:
            if len(_KEYS) >= _CACHE_MAX:
                _KEYS.clear()
            _KEYS[key] = encoded
        return encoded
    # bytes and other keys: no condition names them (the reference compares keys as str), and the reference
    # leaves them out of payloads
    _log.debug("attribute key %r is not a str: the attribute is left out", key)
    return None


def _new_attribute(item: Tuple[Any, Any], cache: Optional[Dict[Any, ExpAttribute]]) -> Optional[ExpAttribute]:
    key, value = item
    encoded = _attribute_key(key)
    if encoded is None:
        return None
    if b"\0" in encoded:
        raise InvalidArgumentError("attribute key %r: contains a NUL character (only decide, decide_all, "
                                   "decide_for_keys, get_variation, activate and track take those)" % (key,))
    attribute = ExpAttribute(encoded, _value_tuple(key, value, "attribute"))
    if cache is not None and (type(value) is not str or len(value) <= _CACHED_VALUE_MAX):
        if len(cache) >= _CACHE_MAX:
            cache.clear()
        cache[item] = attribute
    return attribute


def _new_attribute_n(item: Tuple[Any, Any], cache: Optional[Dict[Any, ExpAttributeN]]) -> Optional[ExpAttributeN]:
    key, value = item
    encoded = _attribute_key(key)
    if encoded is None:
        return None
    fields = _value_fields(value)
    attribute = ExpAttributeN(encoded, len(encoded), fields, len(fields[4]) if fields[4] is not None else 0)
    if cache is not None and (type(value) is not str or len(value) <= _CACHED_VALUE_MAX):
        if len(cache) >= _CACHE_MAX:
            cache.clear()
        cache[item] = attribute
    return attribute


# Prebuilt exp_attribute structs per (key, value) item, one cache per exact value type so that
# True, 1 and 1.0 (equal as dict keys) never share an entry. Entries are never mutated: copying one
# into a call's array copies the struct and makes the array keep its key/value bytes alive.
_ATTRIBUTE_CACHES: Dict[type, Dict[Any, ExpAttribute]] = {
    str: {}, bool: {}, int: {}, float: {}, type(None): {},
}
_ARRAY_TYPES = [ExpAttribute * n for n in range(65)]


def _attributes(attributes: Attributes) -> Tuple[Any, int]:
    """(exp_attribute array or None, count) for the typed path."""
    if not attributes:
        if attributes is None or hasattr(attributes, "items"):
            return None, 0
        raise UnsupportedTypeError("attributes: expected a dict, got %s" % type(attributes).__name__)
    try:
        items = attributes.items()
    except AttributeError:
        raise UnsupportedTypeError("attributes: expected a dict, got %s" % type(attributes).__name__) from None
    count = len(attributes)
    array = _ARRAY_TYPES[count]() if count <= 64 else (ExpAttribute * count)()
    caches = _ATTRIBUTE_CACHES
    i = 0
    for item in items:
        cache = caches.get(type(item[1]))
        if cache is not None:
            attribute = cache.get(item)
            if attribute is None:
                attribute = _new_attribute(item, cache)
        else:  # subclasses, bytes values, other types: build without caching
            attribute = _new_attribute(item, None)
        if attribute is None:
            continue  # a key that is not a str: left out, as no condition can name it
        array[i] = attribute
        i += 1
    return array, i


_ATTRIBUTE_N_CACHES: Dict[type, Dict[Any, ExpAttributeN]] = {
    str: {}, bool: {}, int: {}, float: {}, type(None): {},
}
_ARRAY_N_TYPES = [ExpAttributeN * n for n in range(65)]


def _attributes_n(attributes: Attributes) -> Tuple[Any, int]:
    """(exp_attribute_n array or None, count) for the length-delimited calls. Any value type is taken (see
    _value_fields); a key that is not a str is left out. Only a non-mapping raises (a programmer error)."""
    if not attributes:
        if attributes is None or hasattr(attributes, "items"):
            return None, 0
        raise UnsupportedTypeError("attributes: expected a dict, got %s" % type(attributes).__name__)
    try:
        items = attributes.items()
    except AttributeError:
        raise UnsupportedTypeError("attributes: expected a dict, got %s" % type(attributes).__name__) from None
    count = len(attributes)
    array = _ARRAY_N_TYPES[count]() if count <= 64 else (ExpAttributeN * count)()
    caches = _ATTRIBUTE_N_CACHES
    i = 0
    for item in items:
        cache = caches.get(type(item[1])) if type(item[0]) is str else None
        attribute = cache.get(item) if cache is not None else None
        if attribute is None:
            attribute = _new_attribute_n(item, cache)
            if attribute is None:
                continue
        array[i] = attribute
        i += 1
    return array, i


def _text_n(value: Any, what: str) -> bytes:
    """UTF-8 of a user id or key for the length-delimited calls (NUL allowed). A value that is not a str
    (or bytes) is a programmer error, as in the reference SDK's API (which refuses it)."""
    if type(value) is str or isinstance(value, str):
        try:
            return value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidUTF8Error("%s: cannot be encoded as UTF-8 (%s at index %d)"
                                   % (what, exc.reason, exc.start)) from None
    if isinstance(value, (bytes, bytearray, memoryview)):
        encoded = bytes(value)
        try:
            encoded.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidUTF8Error("%s: not valid UTF-8 (%s at index %d)" % (what, exc.reason, exc.start)) from None
        return encoded
    raise UnsupportedTypeError("%s: expected str or bytes, got %s" % (what, type(value).__name__))


def _logger_of(handle: Any) -> logging.Logger:
    return getattr(handle, "logger", None) or _log


def _error_decision(flag_key: Any, reason: str) -> Decision:
    """The reference SDK's error decision: disabled, no variation or rule, no variables, one reason."""
    return _make_decision(flag_key, False, None, None, {}, [reason])


def _check_json_attributes(attributes: Attributes) -> Optional[bytes]:
    """Attributes for the *_json calls: the same type rules as the typed path, then JSON text."""
    if attributes is None:
        return None
    if not hasattr(attributes, "items"):
        raise UnsupportedTypeError("attributes: expected a dict, got %s" % type(attributes).__name__)
    plain: Dict[str, Any] = {}
    for key, value in attributes.items():
        if isinstance(key, bytes):
            try:
                key = key.decode("utf-8")
            except UnicodeDecodeError:
                raise InvalidUTF8Error("attribute key %r: not valid UTF-8" % (key,)) from None
        elif not isinstance(key, str):
            raise UnsupportedTypeError("attribute key %r: expected str, got %s" % (key, type(key).__name__))
        fields = _value_tuple(key, value, "attribute")
        kind = fields[0]
        if kind in (_native.EXP_VALUE_OTHER, _native.EXP_VALUE_BIG_INT):
            raise UnsupportedTypeError("attribute %r: a %s cannot be passed as JSON (the typed calls take it)"
                                       % (key, type(value).__name__))
        if kind == _native.EXP_VALUE_STRING:
            try:
                plain[key] = fields[4].decode("utf-8")  # type: ignore[union-attr]
            except UnicodeDecodeError:
                raise InvalidUTF8Error("attribute %r: not valid UTF-8" % key) from None
        elif kind == _native.EXP_VALUE_BOOL:
            plain[key] = bool(fields[1])
        elif kind == _native.EXP_VALUE_INT:
            plain[key] = fields[2]
        elif kind == _native.EXP_VALUE_DOUBLE:
            plain[key] = fields[3]
        else:
            plain[key] = None
    try:
        return json.dumps(plain, allow_nan=False).encode("ascii")
    except ValueError:
        raise InvalidArgumentError("attributes: NaN and infinite numbers cannot be passed as JSON") from None


# ------------------------------------------------------------------------------------------------
# Decisions
# ------------------------------------------------------------------------------------------------

_STRINGS: Dict[bytes, str] = {}   # flag/variation/rule keys: bytes -> str
_VARIABLES: Dict[bytes, Tuple[Any, Optional[bytes]]] = {}  # variables_json -> (flat dict, marshal snapshot)
_new = object.__new__


def _string(raw: Optional[bytes]) -> Optional[str]:
    if raw is None:
        return None
    text = _STRINGS.get(raw)
    if text is None:
        text = raw.decode("utf-8")
        if len(_STRINGS) >= _CACHE_MAX:
            _STRINGS.clear()
        _STRINGS[raw] = text
    return text


def _variables(raw: Optional[bytes]) -> Dict[str, Any]:
    """The parsed variables. Each distinct JSON text is parsed once; every decision still gets objects of
    its own, so callers may mutate them: a shallow dict copy when all values are scalars, else a copy
    rebuilt from a marshal snapshot (measured ~4x faster than json.loads and ~7x faster than deepcopy
    for a typical "json" variable)."""
    if raw is None:
        return {}
    entry = _VARIABLES.get(raw)
    if entry is None:
        parsed = json.loads(raw)
        if isinstance(parsed, dict) and not any(isinstance(v, (dict, list)) for v in parsed.values()):
            entry = (parsed, None)
        else:
            entry = (None, marshal.dumps(parsed))
        if len(_VARIABLES) >= _CACHE_MAX:
            _VARIABLES.clear()
        _VARIABLES[raw] = entry
    flat, snapshot = entry
    if snapshot is None:
        assert flat is not None
        return flat.copy()
    rebuilt: Dict[str, Any] = marshal.loads(snapshot)
    return rebuilt


def _make_decision(flag_key: Optional[str], enabled: bool, variation_key: Optional[str],
                   rule_key: Optional[str], variables: Dict[str, Any], reasons: List[str]) -> Decision:
    # Decision is a frozen dataclass; filling the instance directly skips the frozen __setattr__ path
    # (and the generated __init__), which cost more than the native call itself.
    decision = _new(Decision)
    if _SLOTTED:
        _set_flag_key(decision, flag_key)
        _set_enabled(decision, enabled)
        _set_variation_key(decision, variation_key)
        _set_rule_key(decision, rule_key)
        _set_variables(decision, variables)
        _set_reasons(decision, reasons)
        return decision
    fields = decision.__dict__
    fields["flag_key"] = flag_key
    fields["enabled"] = enabled
    fields["variation_key"] = variation_key
    fields["rule_key"] = rule_key
    fields["variables"] = variables
    fields["reasons"] = reasons
    return decision


_PY_MAKE_DECISION = _make_decision  # (the accelerator's new_decision replaces it)

if _SLOTTED:  # the slots' own setters: no frozen __setattr__ in the way
    _set_flag_key = Decision.flag_key.__set__  # type: ignore[attr-defined, union-attr, unused-ignore]
    _set_enabled = Decision.enabled.__set__  # type: ignore[attr-defined, union-attr, unused-ignore]
    _set_variation_key = Decision.variation_key.__set__  # type: ignore[attr-defined, union-attr, unused-ignore]
    _set_rule_key = Decision.rule_key.__set__  # type: ignore[attr-defined, union-attr, unused-ignore]
    _set_variables = Decision.variables.__set__  # type: ignore[attr-defined]
    _set_reasons = Decision.reasons.__set__  # type: ignore[attr-defined]


def _decision_bytes(d: ExpDecision, field: int, index: int = 0) -> Optional[bytes]:
    """A string of a filled exp_decision whole (a datafile key or a reason quoting a user id may hold NUL
    bytes, where the struct's char * field would end), or None for a NULL field."""
    text = c_void_p()
    length = c_size_t()
    if _lib.exp_decision_text_n(d, field, index, byref(text), byref(length)) != 0 or text.value is None:
        return None
    return string_at(text.value, length.value)


def _decision_key(d: ExpDecision, field: int) -> Optional[str]:
    """The flag, variation or rule key of a filled exp_decision (None when NULL)."""
    return _string(_decision_bytes(d, field))


def _decision_reasons(d: ExpDecision) -> List[str]:
    return [(_decision_bytes(d, _native.EXP_DECISION_REASON, i) or b"").decode("utf-8")
            for i in range(d.reason_count)]


def _from_native(d: ExpDecision, flag_key: Optional[str] = None) -> Decision:
    """A Decision from a filled exp_decision. `flag_key` saves reading back a key the caller passed."""
    reasons = _decision_reasons(d) if d.reason_count else []
    return _make_decision(flag_key if flag_key is not None else _decision_key(d, _native.EXP_DECISION_FLAG_KEY),
                          d.enabled != 0, _decision_key(d, _native.EXP_DECISION_VARIATION_KEY),
                          _decision_key(d, _native.EXP_DECISION_RULE_KEY), _variables(d.variables_json), reasons)


def _decisions_by_flag(decisions: Any, count: int) -> Dict[str, Decision]:
    """{flag key: Decision} for the first `count` filled exp_decisions of a ctypes array."""
    result: Dict[str, Decision] = {}
    for i in range(count):
        d = _from_native(decisions[i])
        result[d.flag_key] = d  # type: ignore[index, unused-ignore]
    return result


_PY_DECISIONS_BY_FLAG = _decisions_by_flag  # (the accelerator's replaces it)


def _decisions_by_flag_in_c(decisions: Any, count: int) -> Dict[str, Decision]:
    return _speedups.decisions_by_flag(addressof(decisions), count)  # type: ignore[union-attr, no-any-return, unused-ignore]


def _from_json(flag_key: str, obj: Any) -> Decision:
    return _make_decision(obj.get("flag_key", flag_key), bool(obj.get("enabled")), obj.get("variation_key"),
                          obj.get("rule_key"), obj.get("variables") or {}, list(obj.get("reasons") or ()))


# ------------------------------------------------------------------------------------------------
# The handle
# ------------------------------------------------------------------------------------------------

class _Handle(c_void_p):
    """An exp_client * that frees itself (exp_client_free) when the last reference goes.

    The Client drops its reference in close(); every call holds one in a local variable for its
    duration. So exp_client_free() runs in close() when no call is in flight, else when the last
    in-flight call returns: it never races with other calls on the client, as the header requires.
    It also keeps every installed event-dispatch callback alive for as long as the library may call it.
    """

    def __init__(self, address: int) -> None:
        super().__init__(address)
        self.callbacks: List[Any] = []
        self.logger: Optional[logging.Logger] = None  # the client's logger (binding messages go there too)
        # Python callables waiting for the library's asynchronous answers (run_when_ready, on_complete).
        self.pending = PendingCalls()

    def free(self) -> None:
        address = self.value
        if address:
            self.value = None
            _lib.exp_client_free(address)

    def __del__(self) -> None:
        try:
            self.free()
        except Exception:  # interpreter shutdown
            pass


class _BorrowedHandle(_Handle):
    """A handle found by tag (exp_client_find): its creator frees it, so this one never does."""

    def free(self) -> None:
        self.value = None


def _closed_error() -> ClosedError:
    return ClosedError("the client is closed")


def _options_json(sdk_key: Any, default_decide_options: OptionsArg, user_store_capacity: Any,
                  log_level: Any = None, extra: Optional[Dict[str, Any]] = None) -> Optional[bytes]:
    # Further options pass through under their C names (the library rejects unknown ones).
    options: Dict[str, Any] = dict(extra or {})
    if log_level is not None:
        options["log_level"] = log_level
    if sdk_key is not None:
        options["sdk_key"] = sdk_key
    if default_decide_options:
        if isinstance(default_decide_options, (str, int)):
            default_decide_options = [default_decide_options]  # type: ignore[list-item]
        names: List[Any] = []
        for option in default_decide_options:  # type: ignore[union-attr, unused-ignore]
            if isinstance(option, DecideOption):
                names.extend(m.name for m in DecideOption if m & option)
            else:
                names.append(option)  # names are checked by the library (EXP_ERR_INVALID_OPTION)
        options["default_decide_options"] = names
    if user_store_capacity is not None:
        options["user_store_capacity"] = user_store_capacity
    if not options:
        return None
    try:
        return json.dumps(options, allow_nan=False).encode("ascii")
    except (TypeError, ValueError) as exc:
        raise InvalidOptionError("client options: %s" % exc) from None


_NULL_DISPATCH = EXP_EVENT_DISPATCH_FN()

# exp_log_level -> logging level
_LOG_LEVELS = {1: logging.ERROR, 2: logging.WARNING, 3: logging.INFO, 4: logging.DEBUG}


def _make_log_callback(logger: logging.Logger) -> Any:
    """An exp_log_fn forwarding the library's messages to a `logging` logger. Nothing may propagate
    into C, so a failing handler is reported by logging's own error handling only."""
    def on_log(level: int, message: Optional[bytes], _user_data: Any) -> None:
        try:
            logger.log(_LOG_LEVELS.get(level, logging.ERROR), "%s", (message or b"").decode("utf-8", "replace"))
        except BaseException:  # pragma: no cover - logging handles its own errors; belt and braces
            pass

    return EXP_LOG_FN(on_log)


_NOTIFICATION_TYPES = {"decision": 1, "track": 2, "log_event": 3, "config_update": 4, "datafile_fetch": 5,
                       "event": 6}


def _make_notification_callback(listener: Any) -> Any:
    def on_notification(_kind: int, payload: Optional[bytes], _user_data: Any) -> None:
        try:
            listener(json.loads(payload or b"null"))
        except BaseException:  # nothing may propagate into C
            _log.exception("notification listener %r failed", listener)

    return EXP_NOTIFICATION_FN(on_notification)


def _make_dispatch_callback(dispatcher: Any) -> Any:
    dispatch_event = dispatcher.dispatch_event

    def on_event(event_p: Any, _user_data: Any) -> int:
        try:
            event = event_p.contents
            body = string_at(event.body, event.body_length) if event.body else b""
            url = event.url.decode("utf-8") if event.url is not None else ""
            verb = event.http_verb.decode("utf-8") if event.http_verb is not None else ""
            dispatch_event(Event.from_body(url, verb, body))
            return 0
        except BaseException:  # nothing may propagate into C
            _log.exception("event dispatcher %r failed to dispatch an event", dispatcher)
            return 1

    return EXP_EVENT_DISPATCH_FN(on_event)


_ERR_INVALID_ARGUMENT = -1
_ERR_CLOSED = -17
# Python clients by tag (Client.find returns the same object) and clients with a background thread,
# closed at interpreter exit so no library thread calls into a finalizing interpreter.
_BY_TAG: "weakref.WeakValueDictionary[str, Client]" = weakref.WeakValueDictionary()
_MANAGED: "weakref.WeakSet[Client]" = weakref.WeakSet()


def _register(client: "Client", tag: Any, managed: bool) -> None:
    if isinstance(tag, str):
        _BY_TAG[tag] = client
    if managed:
        _MANAGED.add(client)


@atexit.register
def _close_managed_clients() -> None:
    for client in list(_MANAGED):
        try:
            client.close()
        except Exception:
            pass


def _make_ready_callback(on_ready: Any) -> Any:
    def on_status(status: int, _user_data: Any) -> None:
        try:
            if on_ready is not None:
                on_ready(None if status == 0 else error_for_status(status, "asynchronous start: %s"
                                                                   % _native.status_str(status)))
        except BaseException:  # nothing may propagate into C
            _log.exception("on_ready callback %r failed", on_ready)

    return EXP_READY_FN(on_status)


def _start_async(handle: "_Handle", fallback: Any, on_ready: Any) -> None:
    if on_ready is not None and not callable(on_ready):
        raise TypeError("on_ready: expected a callable, got %r" % (on_ready,))
    data = _datafile_bytes(fallback)
    callback = _make_ready_callback(on_ready)
    handle.callbacks.append(callback)  # alive as long as the library may call it
    status = _lib.exp_client_start_async(handle, data, len(data) if data is not None else 0, callback, None)
    if status:
        _raise(status)


def _start_sync(handle: "_Handle", datafile: Any, update: int) -> None:
    """exp_client_start_sync: the cached datafile for the sdk_key, else `datafile`; then `update`."""
    data = _datafile_bytes(datafile)
    status = _lib.exp_client_start_sync(handle, data, len(data) if data is not None else 0, update, None)
    if status:
        _raise(status)


class Client(SegmentsMixin, UserContextMixin):
    """A libexperiment client.

    ``Client(sdk_key=None, datafile=None, *, default_decide_options=(), user_store_capacity=None,
    event_dispatcher=None, log_level=None, logger=None, **options)``: ``options`` are the other client
    options under their C names (state_dir, profile_store, event_endpoint, ...); ``profile_store`` may also be
    an object with ``lookup(user_id) -> dict | None`` and ``save(profile_dict)`` (sticky bucketing in the
    host's own store). How it starts (see experiment/start_modes.py): with ``sdk_key`` and a ``datafile`` (str or
    bytes) at once from that datafile, then kept fresh (a background fetch, then polling_interval_s); with ``sdk_key`` alone it fetches its datafile in the
    background (options datafile_url_template, datafile_access_token, polling_interval_s, cache_ttl_s, ...) and
    calls ``on_ready(error_or_None)`` once (see :meth:`start_async`); with a datafile alone it uses that one.
    ``start`` picks a mode by name: the Swift SDK's ``"S1"``-``"S3"`` and ``"A1"``-``"A3"``, ``"sync"`` (the
    datafile given, nothing fetched), ``"async"``, ``"none"``. The library's messages go to ``logger`` (a
    :class:`logging.Logger`; default
    ``logging.getLogger("experiment")``) at ``log_level`` ("error", "warning" (default), "info", "debug").
    Safe to use from many threads at once. ``close()`` (or leaving a ``with`` block) releases the
    native client; afterwards every call raises :class:`ClosedError`.
    """

    # _native: the accelerator's view of _h (a _speedups.Native), None without it or once closed
    __slots__ = ("_h", "_dispatcher", "_native", "__weakref__")

    def __init__(self, sdk_key: Optional[str] = None, datafile: Optional[Text] = None, *,
                 default_decide_options: OptionsArg = (), user_store_capacity: Optional[int] = None,
                 event_dispatcher: Any = None, log_level: Optional[str] = None,
                 logger: Optional[logging.Logger] = None, start: Optional[str] = None,
                 on_ready: Any = None, **options: Any) -> None:
        self._h: Optional[_Handle] = None
        self._dispatcher = None
        self._native = None
        kind, sync_update = _resolve_start(start, sdk_key, datafile, options)  # see start_modes.py
        if event_dispatcher is not None and not callable(getattr(event_dispatcher, "dispatch_event", None)):
            raise TypeError("event_dispatcher: expected an object with a dispatch_event(event) method, got %r"
                            % (event_dispatcher,))
        profile_service = options.get("profile_store")
        if profile_service is not None and not isinstance(profile_service, (str, dict)):
            _check_profile_service(profile_service)
            options["profile_store"] = "callbacks"  # installed below, before the datafile
        else:
            profile_service = None
        options_json = _options_json(sdk_key, default_decide_options, user_store_capacity, log_level, options)
        out = c_void_p()
        status = _lib.exp_client_create(options_json, byref(out))
        if status:
            _raise(status)
        if not out.value:
            raise error_for_status(-99, "exp_client_create returned EXP_OK without a client")
        handle = _Handle(out.value)
        handle.logger = logger if logger is not None else _log
        try:
            log_callback = _make_log_callback(handle.logger)
            handle.callbacks.append(log_callback)  # alive as long as the library may call it
            status = _lib.exp_client_set_logger(handle, log_callback, None)
            if status:
                _raise(status)
            if event_dispatcher is not None:
                self._install_dispatcher(handle, event_dispatcher)
            if profile_service is not None:
                _install_profile_service(handle, profile_service)
            if kind == "static":
                self._start(handle, datafile)
            elif kind == "managed":
                _start_sync(handle, datafile, sync_update)
            elif kind == "async":
                _start_async(handle, datafile, on_ready)
        except BaseException:
            handle.free()
            raise
        self._h = handle
        self._native = _native_of(handle, options.get("profile_store"), default_decide_options)
        _register(self, options.get("tag"), kind in ("async", "managed"))

    # -- lifecycle -----------------------------------------------------------------------------

    def _live(self) -> _Handle:
        handle = self._h
        if handle is None:
            raise _closed_error()
        return handle

    @staticmethod
    def _start(handle: _Handle, datafile: Any) -> None:
        data = _datafile_bytes(datafile)
        status = _lib.exp_client_start(handle, data, len(data) if data is not None else 0)
        if status:
            _raise(status)

    def start(self, datafile: Text) -> None:
        """Starts the client synchronously with a datafile, or replaces its datafile. A datafile that
        is rejected changes nothing: the client keeps deciding with its current one."""
        self._start(self._live(), datafile)

    def wait_ready(self, timeout_s: Optional[float] = 0.0) -> bool:
        """Whether the client has a datafile, waiting up to ``timeout_s`` seconds for one (None: the
        library's default, 2 s). False on timeout, and at once when an asynchronous start gave up with no
        datafile to use (:meth:`datafile_status` then says why; a later poll may still make it ready).
        Raises :class:`ClosedError` when the client is (or gets) closed."""
        timeout_ms = -1 if timeout_s is None else _timeout_ms(timeout_s, "timeout_s")
        handle = self._live()
        status = _lib.exp_client_wait_ready(handle, timeout_ms)
        if status in (_ERR_CLOSED, _ERR_INVALID_ARGUMENT):
            _raise(status)
        return bool(status == 0)

    async def wait_ready_async(self, timeout_s: Optional[float] = None) -> bool:
        """``await client.wait_ready_async()``: wait_ready without blocking the event loop (the Swift SDK's
        async-await start, mode A3)."""
        import asyncio
        return await asyncio.get_running_loop().run_in_executor(None, self.wait_ready, timeout_s)

    # -- datafile lifecycle ---------------------------------------------------------------------

    def start_async(self, fallback: Optional[Text] = None, on_ready: Any = None) -> None:
        """Fetches the datafile for ``sdk_key`` in the background; if that fails, starts from the cached
        datafile (``state_dir``), else from ``fallback``. ``on_ready(error)`` is called once, on a library
        thread, with None when the client became ready, else the :class:`Error` saying why not. Polling
        (``polling_interval_s``) or the cache-TTL mode (``cache_ttl_s``) then keeps the datafile fresh."""
        handle = self._live()
        _start_async(handle, fallback, on_ready)
        _register(self, None, True)

    def refresh(self) -> None:
        """Fetches the datafile now (on this thread). Raises :class:`FetchFailedError` or the datafile's
        validation error; the current datafile stays in use either way."""
        status = _lib.exp_client_refresh(self._live())
        if status:
            _raise(status)

    def datafile_status(self) -> Dict[str, Any]:
        """The datafile lifecycle's state and counters: ready, revision, source, fetches, fetch_failures,
        not_modified, rejected, updates, cache_writes, last_error_code, last_error, ..."""
        out = c_char_p()
        status = _lib.exp_client_datafile_status_json(self._live(), byref(out))
        if status:
            _raise(status)
        return _json_dict(_take_string(out) or "null")

    @staticmethod
    def find(tag: str) -> "Client":
        """The open client created with ``tag=tag`` (:class:`NotFoundError` when none). A client created
        by this process's Python code is returned as the same object; one created by C code is returned
        as a borrowed client whose ``close()`` only detaches it (its creator owns it)."""
        out = c_void_p()
        status = _lib.exp_client_find(_text(tag, "tag"), byref(out))
        if status:
            _raise(status)
        existing = _BY_TAG.get(tag)
        if existing is not None and existing._h is not None and existing._h.value == out.value:
            return existing
        borrowed = Client.__new__(Client)
        borrowed._h = _BorrowedHandle(out.value or 0)
        borrowed._dispatcher = None
        borrowed._native = _native_of(borrowed._h, "unknown", ())
        return borrowed

    @property
    def ready(self) -> bool:
        """True once the client has a datafile."""
        handle = self._live()
        out = c_int()
        status = _lib.exp_client_is_ready(handle, byref(out))
        if status:
            _raise(status)
        return out.value != 0

    @property
    def config(self) -> Dict[str, Any]:
        """Facts about the current datafile: revision, project_id, account_id, environment_key, flags,
        experiments, events."""
        handle = self._live()
        out = c_char_p()
        status = _lib.exp_client_config_json(handle, byref(out))
        if status:
            _raise(status)
        return _json_dict(_take_string(out) or "null")

    def optimizely_config_json(self) -> str:
        """optimizely-sdk's OptimizelyConfig of the datafile in use as the library's JSON document
        (exp_client_optimizely_config_json). Needs ``keep_datafile=True`` (else :class:`NotFoundError`);
        :class:`NotReadyError` before the client has a datafile."""
        handle = self._live()
        out = c_char_p()
        status = _lib.exp_client_optimizely_config_json(handle, byref(out))
        if status:
            _raise(status)
        return _take_string(out) or "null"

    def get_optimizely_config(self) -> "OptimizelyConfig":
        """optimizely-sdk's OptimizelyConfig of the datafile in use (see :meth:`optimizely_config_json`)."""
        return optimizely_config_from_json(self.optimizely_config_json())

    @property
    def datafile_json(self) -> str:
        """The datafile in use, byte for byte as it was given or fetched (decoded as UTF-8); it changes when a
        newer datafile is swapped in. Needs the option ``keep_datafile=True`` (else :class:`NotFoundError`);
        :class:`NotReadyError` before the client has a datafile."""
        handle = self._live()
        out = c_char_p()
        length = c_size_t()
        status = _lib.exp_client_datafile_json(handle, byref(out), byref(length))
        if status:
            _raise(status)
        try:
            return string_at(out, length.value).decode("utf-8")
        finally:
            _exp_free(out)

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called (every call then raises :class:`ClosedError`)."""
        return self._h is None

    def close(self) -> bool:
        """Closes the client and frees the native handle. Idempotent. Waits up to close_timeout_ms for this
        client's queued events (retrying failures); True when all were delivered, False when some stay on
        disk for the next client (exp_client_close answered EXP_ERR_TIMEOUT)."""
        handle = self._h
        if handle is None:
            return True
        self._h = None
        self._native = None
        # A client found by tag and created elsewhere belongs to its creator: only detach from it.
        status = 0 if isinstance(handle, _BorrowedHandle) else _lib.exp_client_close(handle)
        # Dropping the last reference frees the handle (see _Handle); in-flight calls on other threads
        # hold their own reference and the last of them frees it.
        del handle
        if status == ERR_TIMEOUT:
            return False
        if status:
            _raise(status)
        return True

    def __enter__(self) -> "Client":
        """The client itself, for ``with Client(...) as client:`` (ClosedError when closed)."""
        self._live()
        return self

    def __exit__(self, *_exc: Any) -> None:
        """Closes the client on leaving the ``with`` block."""
        self.close()

    def __repr__(self) -> str:
        return "<experiment.Client %s>" % ("closed" if self._h is None else "at %#x" % (self._h.value or 0))

    # -- notification listeners ----------------------------------------------------------------

    def add_listener(self, kind: Any, listener: Any) -> int:
        """Calls ``listener(payload)`` (a dict) for every notification of ``kind``: "decision", "track",
        "log_event", "config_update" or "datafile_fetch" (how each datafile fetch ended: ``outcome``
        "updated", "not_modified", "failed" or "rejected"; or an EXP_NOTIFY_* number). Listeners run
        synchronously on the thread that caused the notification; an exception in one is logged and
        swallowed. Returns an id for :meth:`remove_listener`."""
        handle = self._live()
        code = _NOTIFICATION_TYPES.get(kind, kind) if isinstance(kind, str) else kind
        if not isinstance(code, int) or isinstance(code, bool):
            raise InvalidArgumentError("listener kind: expected one of %s, got %r"
                                       % (", ".join(sorted(_NOTIFICATION_TYPES)), kind))
        if not callable(listener):
            raise TypeError("listener: expected a callable, got %r" % (listener,))
        callback = _make_notification_callback(listener)
        out = c_int64()
        status = _lib.exp_add_notification_listener(handle, code, callback, None, byref(out))
        if status:
            _raise(status)
        handle.callbacks.append(callback)  # alive as long as the library may call it
        return out.value

    def remove_listener(self, listener_id: int) -> None:
        """Removes a listener added with :meth:`add_listener` (NotFoundError when there is none)."""
        status = _lib.exp_remove_notification_listener(self._live(), listener_id)
        if status:
            _raise(status)

    # -- events --------------------------------------------------------------------------------

    def _install_dispatcher(self, handle: _Handle, dispatcher: Any) -> None:
        if dispatcher is None:
            callback = _NULL_DISPATCH  # a NULL exp_event_dispatch_fn: removes the dispatcher
        else:
            if not callable(getattr(dispatcher, "dispatch_event", None)):
                raise TypeError("event_dispatcher: expected an object with a dispatch_event(event) method, "
                                "got %r" % (dispatcher,))
            callback = _make_dispatch_callback(dispatcher)
            handle.callbacks.append(callback)  # alive as long as the library may call it
        status = _lib.exp_client_set_event_dispatcher(handle, callback, None)
        if status:
            _raise(status)
        self._dispatcher = dispatcher

    def set_event_dispatcher(self, dispatcher: Any) -> None:
        """Installs (or with None removes) the object whose dispatch_event(event) receives events."""
        self._install_dispatcher(self._live(), dispatcher)

    @property
    def event_dispatcher(self) -> Any:
        """The object installed with ``event_dispatcher=`` or :meth:`set_event_dispatcher` (None: the built-in pipeline)."""
        return self._dispatcher

    # -- decisions -----------------------------------------------------------------------------

    # With the C accelerator, Client.decide and Client.variation_key are replaced by C method descriptors
    # (_install_speedups, below the class) that take the common calls without running these methods; these
    # remain the reference and take every call the accelerator leaves to them (closed client, unusual
    # arguments: see _speedups.c).

    def decide(self, user_id: Text, flag_key: Text, attributes: Attributes = None,
               options: OptionsArg = ()) -> Decision:
        """Decides one flag for one user. Never raises for data: an unknown flag or a client without a
        datafile gives the reference SDK's error decision (disabled, no variation, its reason) and a log
        message. Raises for programmer errors only: a closed client, a user id that is not a str, attributes
        that are not a mapping, unknown options."""
        handle = self._h
        if handle is None:
            raise _closed_error()
        # A tuple of options seen before costs one dict lookup (decide_options_to_int's own cache).
        bits = _OPTION_BITS.get(options) if type(options) is tuple else None
        if bits is None:
            bits = decide_options_to_int(options) if options else 0
        user = _text_n(user_id, "user_id")
        if not isinstance(flag_key, (str, bytes)):
            _logger_of(handle).error("decide: the flag key %r is not a str", flag_key)
            return _error_decision(flag_key, _FLAG_KEY_INVALID.format(flag_key))
        key = _text_n(flag_key, "flag_key")
        array, count = _attributes_n(attributes) if attributes else (None, 0)
        decision = ExpDecision()
        address = addressof(decision)
        status = _exp_decide_n(handle.value, user, len(user), key, len(key),
                               addressof(array) if array is not None else None, count, bits, address)
        try:
            if status:
                return self._decide_failed(handle, status, flag_key, decision)
            return _from_native(decision, flag_key if type(flag_key) is str else None)
        finally:
            _exp_decision_release(address)

    def _decide_strict(self, user_id: Text, flag_key: Text, attributes: Attributes, bits: int) -> Decision:
        """decide that raises the library's error instead of answering with an error decision: for callers
        that map errors themselves (the OpenFeature provider's error codes)."""
        handle = self._live()
        user = _text_n(user_id, "user_id")
        key = _text_n(flag_key, "flag_key")
        array, count = _attributes_n(attributes) if attributes else (None, 0)
        decision = ExpDecision()
        address = addressof(decision)
        status = _exp_decide_n(handle.value, user, len(user), key, len(key),
                               addressof(array) if array is not None else None, count, bits, address)
        try:
            if status:
                _raise(status)
            return _from_native(decision, flag_key if type(flag_key) is str else None)
        finally:
            _exp_decision_release(address)

    @staticmethod
    def _decide_failed(handle: Any, status: int, flag_key: Any, decision: ExpDecision) -> Decision:
        """The decision for a failed exp_decide_n: the reference's error decision for not ready, an unknown flag
        and a key or user id past the library's limits (logged); ClosedError; a library bug raises."""
        message = (_last_error() or b"").decode("utf-8", "replace")
        if status not in _DATA_CONDITIONS:  # a closed client, the store, a library bug: not data
            raise _closed_error() if status == ERR_CLOSED else error_for_status(status, message)
        if isinstance(flag_key, (bytes, bytearray, memoryview)):
            flag_key = bytes(flag_key).decode("utf-8", "replace")
        logger = _logger_of(handle)
        if status == ERR_NOT_READY:
            logger.error("decide %r: %s", flag_key, message)
            return _error_decision(flag_key, _SDK_NOT_READY)
        # Unknown flag, or a key or user id past the library's limits: the reference's "no flag" answer (the
        # reason is made here, from the caller's key: the library's C string stops at a NUL byte).
        logger.error("decide %r: %s", flag_key, message)
        return _error_decision(flag_key, _FLAG_KEY_INVALID.format(flag_key))

    def variation_key(self, user_id: Text, flag_key: Text, attributes: Attributes = None,
                      options: OptionsArg = ()) -> Optional[str]:
        """The variation key ``decide`` gives (None when the user gets none, and for an unknown flag or a
        client without a datafile): the quickest decision to ask for, as nothing else is converted. Sends the
        same impression event as ``decide``."""
        if self._h is None:
            raise _closed_error()
        bits = _OPTION_BITS.get(options) if type(options) is tuple else None
        if bits is None:
            bits = decide_options_to_int(options) if options else 0
        return self.decide(user_id, flag_key, attributes, bits | _EXCLUDE_VARIABLES).variation_key

    def decide_all(self, user_id: Text, attributes: Attributes = None,
                   options: OptionsArg = ()) -> Dict[str, Decision]:
        """Decides every flag of the datafile (in datafile order) for one user; {} (and a log message) when
        the client has no datafile yet, as the reference SDK."""
        handle = self._live()
        bits = decide_options_to_int(options)
        uid = _text_n(user_id, "user_id")
        array, count = _attributes_n(attributes)
        capacity = c_size_t()
        status = _lib.exp_flag_count(handle, byref(capacity))
        for _attempt in range(8):  # the datafile may be replaced between the two calls
            if status:
                return self._decide_many_failed(handle, status, "decide_all")
            cap = capacity.value
            decisions = (ExpDecision * max(cap, 1))()
            filled = c_size_t()
            status = _lib.exp_decide_all_n(handle, uid, len(uid), array, count, bits, decisions, cap, byref(filled))
            if status == ERR_BUFFER_TOO_SMALL:
                capacity = c_size_t(filled.value)
                status = 0
                continue
            if status:
                return self._decide_many_failed(handle, status, "decide_all")
            n = min(filled.value, cap)
            try:
                return _decisions_by_flag(decisions, n)
            finally:
                _lib.exp_decisions_release(decisions, n)
        raise error_for_status(ERR_BUFFER_TOO_SMALL, "exp_decide_all kept asking for a larger buffer")

    @staticmethod
    def _decide_many_failed(handle: Any, status: int, what: str) -> Dict[str, Decision]:
        """decide_all / decide_for_keys after a failed call: {} with a log message (not ready, user id past
        the limits), ClosedError for a closed client."""
        message = (_last_error() or b"").decode("utf-8", "replace")
        if status not in _DATA_CONDITIONS:
            raise _closed_error() if status == ERR_CLOSED else error_for_status(status, message)
        _logger_of(handle).error("%s: %s", what, message)
        return {}

    def decide_for_keys(self, user_id: Text, keys: Iterable[Text], attributes: Attributes = None,
                        options: OptionsArg = ()) -> Dict[str, Decision]:
        """Decides the given flags for one user. Unknown keys (and keys that are not str) give a disabled
        decision without reasons, and a client without a datafile gives {}, as in the reference SDK."""
        handle = self._live()
        if isinstance(keys, (str, bytes)) or keys is None:
            raise UnsupportedTypeError("keys: expected a sequence of flag keys, not %s"
                                       % ("None (use decide_all for every flag)" if keys is None
                                          else "a single %s" % type(keys).__name__))
        names: List[Any] = list(keys)
        encoded: List[bytes] = []
        for key in names:
            try:
                encoded.append(_text_n(key, "flag key"))
            except (UnsupportedTypeError, InvalidUTF8Error):
                encoded.append(b"")  # names no flag: a disabled decision, keyed by the caller's object
        count = len(names)
        key_array = (c_char_p * max(count, 1))(*encoded)
        length_array = (c_size_t * max(count, 1))(*[len(key) for key in encoded])
        array, attribute_count = _attributes_n(attributes)
        bits = decide_options_to_int(options)
        decisions = (ExpDecision * max(count, 1))()
        filled = c_size_t()
        uid = _text_n(user_id, "user_id")
        status = _lib.exp_decide_for_keys_n(handle, uid, len(uid), key_array, length_array, count, array,
                                            attribute_count, bits, decisions, count, byref(filled))
        if status:
            return self._decide_many_failed(handle, status, "decide_for_keys")
        try:
            result = _decisions_by_flag(decisions, filled.value)
            if any(type(name) is not str or "\0" in name for name in names):
                result = self._keyed_by_caller(result, names, encoded, decisions, filled.value)
            return result
        finally:
            _lib.exp_decisions_release(decisions, filled.value)

    @staticmethod
    def _keyed_by_caller(result: Dict[str, Decision], names: List[Any], encoded: List[bytes], decisions: Any,
                         filled: int) -> Dict[Any, Decision]:
        """decide_for_keys' result keyed by the caller's own key objects when some are not plain str (or hold
        NUL, which the C strings of the decisions cut short): the decisions follow the keys' order."""
        keyed: Dict[Any, Decision] = {}
        position = 0
        for name, key in zip(names, encoded):
            if position >= filled:
                break
            raw = decisions[position].flag_key or b""
            if raw != key.split(b"\0", 1)[0]:
                continue  # left out (ENABLED_FLAGS_ONLY)
            decision = _from_native(decisions[position], name if isinstance(name, str) else None)
            try:
                hash(name)
            except TypeError:
                name = repr(name)
            keyed[name] = _make_decision(name, decision.enabled, decision.variation_key, decision.rule_key,
                                         decision.variables, list(decision.reasons))
            position += 1
        return keyed

    # -- experiments ---------------------------------------------------------------------------

    def get_variation(self, experiment_key: Text, user_id: Text, attributes: Attributes = None) -> Optional[str]:
        """The variation key the user gets in the experiment (None when none), without an event. None (and a
        log message) for an unknown experiment or a client without a datafile, as the reference SDK."""
        return self._variation_key(_lib.exp_get_variation_len, "get_variation", experiment_key, user_id, attributes)

    def activate(self, experiment_key: Text, user_id: Text, attributes: Attributes = None) -> Optional[str]:
        """As get_variation, and sends an impression when the user gets a variation."""
        return self._variation_key(_lib.exp_activate_len, "activate", experiment_key, user_id, attributes)

    def _variation_key(self, function: Any, what: str, experiment_key: Text, user_id: Text,
                       attributes: Attributes) -> Optional[str]:
        handle = self._live()
        uid = _text_n(user_id, "user_id")
        if not isinstance(experiment_key, (str, bytes)) or not experiment_key:
            _logger_of(handle).error('%s: provided "experiment_key" is in an invalid format (%r)', what,
                                     experiment_key)
            return None
        key = _text_n(experiment_key, "experiment_key")
        array, count = _attributes_n(attributes)
        out, length = c_void_p(), c_size_t()
        status = function(handle, key, len(key), uid, len(uid), array, count, byref(out), byref(length))
        if status:
            message = (_last_error() or b"").decode("utf-8", "replace")
            if status not in _DATA_CONDITIONS:
                raise _closed_error() if status == ERR_CLOSED else error_for_status(status, message)
            _logger_of(handle).error("%s: %s", what, message)
            return None
        return _take_sized_string(out, length)

    def trigger_experiment(self, user_id: Text, experiment_id: Union[Text, int], attributes: Attributes = None) -> str:
        """The variation id of the experiment with id ``experiment_id`` (a str, or an int as Kameleoon's
        ids are: ``3001`` means ``"3001"``) for the user (sends an impression).
        Raises NotTargetedError, NotAllocatedError, UnknownExperimentError, NotReadyError; UnsupportedTypeError
        (a TypeError) for an id of another type, a bool included."""
        handle = self._live()
        array, count = _attributes(attributes)
        out = c_char_p()
        status = _lib.exp_trigger_experiment(handle, _text(user_id, "user_id"), _id_text(experiment_id, "experiment_id"),
                                             array, count, byref(out))
        if status:
            _raise(status)
        result = _take_string(out)
        if result is None:
            raise error_for_status(-99, "exp_trigger_experiment returned EXP_OK without a variation id")
        return result

    # -- forced variations and decisions -------------------------------------------------------

    # -- sticky bucketing (user profiles) and Sigma forced memberships --------------------------------

    def profile_stats(self) -> Dict[str, Any]:
        """The profile store's counters: {"store", "lookups", "cache_hits", "saves", "errors", "cached",
        "override_errors"} (overrides whose write to the state file failed: they hold in memory only)."""
        handle = self._live()
        out = c_char_p()
        status = _lib.exp_client_profile_stats(handle, byref(out))
        if status:
            _raise(status)
        return _json_dict(_take_string(out) or "{}")

    def force_include(self, user_id: Text, experiment_id: Union[Text, int], group_index: Optional[int] = None) -> None:
        """Sigma include_force: the user is in the experiment (id: a str or an int), in the variation at
        position ``group_index`` or, when None, the bucketed one, whatever the audiences and traffic.
        Persisted."""
        handle = self._live()
        status = _lib.exp_force_include(handle, _text(user_id, "user_id"), _id_text(experiment_id, "experiment_id"),
                                        _group_index(group_index))
        if status:
            _raise(status)

    def force_exclude(self, user_id: Text, experiment_id: Union[Text, int]) -> None:
        """Sigma exclude_force: the user is kept out of the experiment (id: a str or an int). Persisted."""
        handle = self._live()
        status = _lib.exp_force_exclude(handle, _text(user_id, "user_id"), _id_text(experiment_id, "experiment_id"))
        if status:
            _raise(status)

    def force_include_key(self, user_id: Text, experiment_key: Text, group_index: Optional[int] = None) -> None:
        """Sigma includeForce(experimentName:, groupIndex:): :meth:`force_include` with the experiment named
        by key (resolved to its id in the current datafile; kept by id). NotReadyError without a datafile,
        UnknownExperimentError, UnknownVariationError for a group index the experiment lacks."""
        handle = self._live()
        status = _lib.exp_force_include_key(handle, _text(user_id, "user_id"), _key(experiment_key, "experiment_key"),
                                            _group_index(group_index))
        if status:
            _raise(status)

    def force_exclude_key(self, user_id: Text, experiment_key: Text) -> None:
        """Sigma excludeForce(experimentName:): :meth:`force_exclude` with the experiment named by key."""
        handle = self._live()
        status = _lib.exp_force_exclude_key(handle, _text(user_id, "user_id"), _key(experiment_key, "experiment_key"))
        if status:
            _raise(status)

    def force_clear_key(self, user_id: Text, experiment_key: Text) -> None:
        """Removes the user's forced membership of the experiment named by key (see :meth:`force_clear`)."""
        handle = self._live()
        status = _lib.exp_force_clear_key(handle, _text(user_id, "user_id"), _key(experiment_key, "experiment_key"))
        if status:
            _raise(status)

    def force_exclude_all(self, user_id: Text) -> None:
        """Sigma exclude_force_all: the user is kept out of every experiment. Persisted."""
        handle = self._live()
        status = _lib.exp_force_exclude_all(handle, _text(user_id, "user_id"))
        if status:
            _raise(status)

    def force_clear(self, user_id: Text, experiment_id: Union[Text, int, None] = None) -> None:
        """Removes the user's forced membership of one experiment (id: a str or an int), or all of them (and
        exclude-all)."""
        handle = self._live()
        status = _lib.exp_force_clear(handle, _text(user_id, "user_id"),
                                      None if experiment_id is None else _id_text(experiment_id, "experiment_id"))
        if status:
            _raise(status)

    def set_forced_variation(self, experiment_key: Text, user_id: Text, variation_key: Optional[Text]) -> None:
        """Forces ``user_id`` into ``variation_key`` of the experiment (None removes the forced variation).
        Kept in the state file, so it survives restarts. UnknownExperimentError / UnknownVariationError."""
        handle = self._live()
        # The length-delimited form: user ids and keys may hold NUL bytes, as the reference takes any str.
        experiment = _text_n(experiment_key, "experiment_key")
        user = _text_n(user_id, "user_id")
        variation = None if variation_key is None else _text_n(variation_key, "variation_key")
        status = _lib.exp_set_forced_variation_n(handle, experiment, len(experiment), user, len(user), variation,
                                                 len(variation) if variation is not None else 0)
        if status:
            _raise(status)

    def get_forced_variation(self, experiment_key: Text, user_id: Text) -> Optional[str]:
        """The variation key forced for ``user_id`` in the experiment, or None."""
        handle = self._live()
        out, length = c_void_p(), c_size_t()
        experiment = _text_n(experiment_key, "experiment_key")
        user = _text_n(user_id, "user_id")
        status = _lib.exp_get_forced_variation_n(handle, experiment, len(experiment), user, len(user), byref(out),
                                                 byref(length))
        if status:
            _raise(status)
        return _take_sized_string(out, length)

    def set_forced_decision(self, user_id: Text, flag_key: Text, variation_key: Optional[Text],
                            rule_key: Optional[Text] = None) -> None:
        """Forces the flag's decision for ``user_id`` to ``variation_key`` (for one rule with ``rule_key``,
        else for the flag); None as variation key removes that forced decision."""
        handle = self._live()
        status = _lib.exp_set_forced_decision(handle, _text(user_id, "user_id"), _key(flag_key, "flag_key"),
                                              _key(rule_key, "rule_key"), _key(variation_key, "variation_key"))
        if status:
            _raise(status)

    def remove_forced_decisions(self, user_id: Text) -> None:
        """Removes every forced decision of ``user_id``."""
        handle = self._live()
        status = _lib.exp_remove_forced_decisions(handle, _text(user_id, "user_id"))
        if status:
            _raise(status)

    # -- user properties -----------------------------------------------------------------------

    def set_user_property(self, user_id: Text, key: Text, value: Any) -> None:
        """Stores a property (str, int, float, bool or None) that later calls for the user see as an
        attribute; per-call attributes with the same key win."""
        handle = self._live()
        if not isinstance(key, (str, bytes)) and key is not None:
            raise UnsupportedTypeError("property key %r: expected str, got %s" % (key, type(key).__name__))
        typed = ExpValue(*_property_value(key, value))
        status = _lib.exp_set_user_property(handle, _text(user_id, "user_id"), _key(key, "property key"),
                                            byref(typed))
        if status:
            _raise(status)

    def remove_user_property(self, user_id: Text, key: Text) -> None:
        """Removes one property of ``user_id`` (nothing happens when it has none)."""
        handle = self._live()
        status = _lib.exp_remove_user_property(handle, _text(user_id, "user_id"), _key(key, "property key"))
        if status:
            _raise(status)

    def clear_user_properties(self, user_id: Text) -> None:
        """Removes every property of ``user_id``."""
        handle = self._live()
        status = _lib.exp_clear_user_properties(handle, _text(user_id, "user_id"))
        if status:
            _raise(status)

    def get_user_properties(self, user_id: Text) -> Dict[str, Any]:
        """The properties stored for ``user_id`` as a dict ({} when none)."""
        handle = self._live()
        out = c_char_p()
        status = _lib.exp_get_user_properties_json(handle, _text(user_id, "user_id"), byref(out))
        if status:
            _raise(status)
        return _json_dict(_take_string(out) or "{}")

    # -- conversions ---------------------------------------------------------------------------

    def track(self, event_key: Text, user_id: Text, attributes: Attributes = None, tags: Any = None) -> None:
        """Records a conversion. ``tags`` is a dict of event tags ("revenue" an integer in cents, "value"
        a number), or JSON text (str or bytes) passed to the library as-is. As the reference SDK, an unknown
        event, a client without a datafile or tags that are not a JSON object send nothing and log why."""
        handle = self._live()
        uid = _text_n(user_id, "user_id")
        logger = _logger_of(handle)
        if not isinstance(event_key, (str, bytes)) or not event_key:
            logger.error('track: provided "event_key" is in an invalid format (%r)', event_key)
            return
        key = _text_n(event_key, "event_key")
        array, count = _attributes_n(attributes)
        if tags is None:
            tags_json = None
        elif isinstance(tags, (str, bytes, bytearray, memoryview)):
            tags_json = _encode_slow(tags, "tags")
        else:
            try:
                tags_json = json.dumps(tags, allow_nan=False).encode("ascii")
            except (TypeError, ValueError) as exc:
                logger.error("track: event tags are in an invalid format (%s): nothing is sent", exc)
                return
        status = _lib.exp_track_n(handle, key, len(key), uid, len(uid), array, count, tags_json)
        if status:
            message = (_last_error() or b"").decode("utf-8", "replace")
            if status not in _DATA_CONDITIONS:  # a full queue, the store: not data, as before
                raise _closed_error() if status == ERR_CLOSED else error_for_status(status, message)
            logger.error("track: %s: nothing is sent", message)

    # -- Sigma: user properties, typed flag values, the user's flags / experiments / holdouts --------

    def set_user_properties(self, user_id: Text, properties: Mapping[str, Any]) -> None:
        """Sigma setUserProperties: replaces all the user's properties. Keys: profile_id, device_id, email,
        app_version, os_name, os_version, geo_code, geo_country, geo_state, geo_city (strings) and
        "custom.<name>" (str, int, float or bool). Audiences see each under its own name."""
        self._sigma_properties(_lib.exp_set_user_properties, user_id, properties)

    def edit_user_properties(self, user_id: Text, properties: Mapping[str, Any]) -> None:
        """Sigma editUserProperties: merges; a None value removes that key."""
        self._sigma_properties(_lib.exp_edit_user_properties, user_id, properties)

    def _sigma_properties(self, function: Any, user_id: Text, properties: Any) -> None:
        handle = self._live()
        if isinstance(properties, (str, bytes)):
            text = _encode_slow(properties, "properties")
        else:
            try:
                text = json.dumps(properties, allow_nan=False).encode("utf-8")
            except (TypeError, ValueError) as exc:
                raise UnsupportedTypeError("properties: %s" % exc) from None
        status = function(handle, _text(user_id, "user_id"), text)
        if status:
            _raise(status)

    def _flag(self, function: Any, out: Any, user_id: Text, flag_key: Text, variable_key: Optional[Text],
              attributes: Attributes) -> bool:
        handle = self._live()
        array, count = _attributes(attributes)
        found = c_int()
        status = function(handle, _text(user_id, "user_id"), _key(flag_key, "flag_key"),
                          _key(variable_key, "variable_key"), array, count, byref(out), byref(found))
        if status:
            if status in (ERR_NOT_READY, ERR_UNKNOWN_FLAG, ERR_UNKNOWN_VARIATION, ERR_NOT_FOUND):
                # As the reference's typed variable getters: no value (None), and a log message.
                _logger_of(handle).error("flag %r: %s", flag_key, (_last_error() or b"").decode("utf-8", "replace"))
                return False
            _raise(status)
        return bool(found.value)

    def flag_bool(self, user_id: Text, flag_key: Text, variable_key: Optional[Text] = None,
                  attributes: Attributes = None) -> Optional[bool]:
        """Sigma checkFlag as a bool: without variable_key whether the flag is enabled, else a boolean
        variable. None when the user has no value (no variation); TypeMismatchError for another type."""
        out = c_int()
        return bool(out.value) if self._flag(_lib.exp_flag_bool, out, user_id, flag_key, variable_key,
                                             attributes) else None

    def flag_int(self, user_id: Text, flag_key: Text, variable_key: Text,
                 attributes: Attributes = None) -> Optional[int]:
        """An integer variable's value for the user, or None when the user has no value; TypeMismatchError
        for a variable of another type."""
        out = c_int64()
        return out.value if self._flag(_lib.exp_flag_int, out, user_id, flag_key, variable_key, attributes) else None

    def flag_double(self, user_id: Text, flag_key: Text, variable_key: Text,
                    attributes: Attributes = None) -> Optional[float]:
        """A double variable's value for the user, or None when the user has no value; TypeMismatchError
        for a variable of another type."""
        out = c_double()
        return out.value if self._flag(_lib.exp_flag_double, out, user_id, flag_key, variable_key,
                                       attributes) else None

    def _flag_text(self, function: Any, user_id: Text, flag_key: Text, variable_key: Text,
                   attributes: Attributes) -> Optional[str]:
        out = c_char_p()
        found = self._flag(function, out, user_id, flag_key, variable_key, attributes)
        text = _take_string(out)
        return text if found else None

    def flag_string(self, user_id: Text, flag_key: Text, variable_key: Text,
                    attributes: Attributes = None) -> Optional[str]:
        """A string variable's value for the user, or None when the user has no value; TypeMismatchError
        for a variable of another type."""
        return self._flag_text(_lib.exp_flag_string, user_id, flag_key, variable_key, attributes)

    def flag_json(self, user_id: Text, flag_key: Text, variable_key: Text, attributes: Attributes = None) -> Any:
        """A json variable's value, parsed (None when the user has no value)."""
        text = self._flag_text(_lib.exp_flag_json, user_id, flag_key, variable_key, attributes)
        return json.loads(text) if text is not None else None

    def check_flag(self, user_id: Text, flag_key: Text, value_type: Any = bool, variable_key: Optional[Text] = None,
                   attributes: Attributes = None) -> Any:
        """Sigma checkFlag<T>: value_type is bool, int, float, str or dict/"json"."""
        accessors = {bool: self.flag_bool, int: self.flag_int, float: self.flag_double, str: self.flag_string,
                     dict: self.flag_json, "json": self.flag_json}
        accessor = accessors.get(value_type)
        if accessor is None:
            raise InvalidArgumentError("value_type: expected bool, int, float, str, dict or \"json\", got %r"
                                       % (value_type,))
        return accessor(user_id, flag_key, variable_key, attributes)  # type: ignore[operator]

    def _user_report(self, function: Any, user_id: Text, attributes: Attributes) -> str:
        handle = self._live()
        array, count = _attributes(attributes)
        out = c_char_p()
        status = function(handle, _text(user_id, "user_id"), array, count, byref(out))
        if status:
            _raise(status)
        return _take_string(out) or ""

    def user_flags(self, user_id: Text, attributes: Attributes = None) -> Dict[str, Any]:
        """Every flag the user has a value for: {flag_key: {"enabled", "variation_key", "variables"}}."""
        return _json_dict(self._user_report(_lib.exp_user_flags_json, user_id, attributes))

    def user_experiments(self, user_id: Text, attributes: Attributes = None) -> str:
        """The user's experiments as "expId.groupIndex|..." ("" when none)."""
        return self._user_report(_lib.exp_user_experiments, user_id, attributes)

    def user_experiments_json(self, user_id: Text, attributes: Attributes = None) -> List[Dict[str, Any]]:
        """The user's experiments as a list of dicts (the JSON form of :meth:`user_experiments`)."""
        return _json_list(self._user_report(_lib.exp_user_experiments_json, user_id, attributes))

    def user_holdouts(self, user_id: Text, attributes: Attributes = None) -> str:
        """The holdouts the user is in as "holdoutId.0|..." ("" when none)."""
        return self._user_report(_lib.exp_user_holdouts, user_id, attributes)

    def user_holdouts_json(self, user_id: Text, attributes: Attributes = None) -> List[Dict[str, Any]]:
        """The holdouts the user is in as a list of dicts (the JSON form of :meth:`user_holdouts`)."""
        return _json_list(self._user_report(_lib.exp_user_holdouts_json, user_id, attributes))

    def get_holdout(self, user_id: Text, holdout_key: Text, attributes: Attributes = None) -> bool:
        """Whether the user is in the holdout (NotFoundError for an unknown key)."""
        handle = self._live()
        array, count = _attributes(attributes)
        out = c_int()
        status = _lib.exp_get_holdout(handle, _text(user_id, "user_id"), _key(holdout_key, "holdout_key"), array,
                                      count, byref(out))
        if status:
            _raise(status)
        return bool(out.value)

    def get_experiment(self, user_id: Text, experiment_key: Text, attributes: Attributes = None) -> Any:
        """The user's UserExperiment (variation and typed parameters), or None when the user is not in it."""
        handle = self._live()
        array, count = _attributes(attributes)
        out = c_void_p()
        status = _lib.exp_get_experiment(handle, _text(user_id, "user_id"), _key(experiment_key, "experiment_key"),
                                         array, count, byref(out))
        if status:
            _raise(status)
        return UserExperiment(out.value) if out.value else None


# -- host profile store (user profile service) ----------------------------------------------------

    # -- event pipeline and Kameleoon user data -----------------------------------------------------

    def flush(self) -> bool:
        """Sends this client's queued events now, retrying failures, for at most the client's
        close_timeout_ms. True when none is left; False when some remain queued (they are retried)."""
        status = _lib.exp_flush(self._live())
        if status == ERR_TIMEOUT:
            return False
        if status:
            _raise(status)
        return True

    def stats(self) -> Dict[str, Any]:
        """The event counters: queued, sent, retried, failed, dropped, poisoned, batches_sent, expired,
        pending, backlog, dead_letter, last_error (see exp_client_stats)."""
        out = c_char_p()
        status = _lib.exp_client_stats(self._live(), byref(out))
        if status:
            _raise(status)
        return _json_dict(_take_string(out) or "{}")

    def track_conversion(self, user_id: Text, goal_id: Union[int, str], revenue: Optional[float] = None,
                         on_complete: Optional[Callable[[DeliveryResult], None]] = None) -> None:
        """Kameleoon trackConversion: goal ``goal_id`` (an int, or a str of digits) for the user, sent now with
        the user's pending data. ``on_complete(result)`` (optional, Kameleoon's completion handler) is called
        once with a :class:`DeliveryResult` when the event's POST ended (true when delivered; else its
        ``error`` says why: DeliveryFailedError when the endpoint failed it, which keeps it queued for a
        retry, or refused it; WaitTimeoutError when the client closed with it still on disk) — on a library
        thread, or on this thread before the call returns with a host ``event_dispatcher``. A bool goal id
        is an UnsupportedTypeError (a TypeError)."""
        goal = _goal_id(goal_id)
        amount = float("nan") if revenue is None else float(revenue)
        handle = self._live()
        if on_complete is None:
            status = _lib.exp_track_conversion(handle, _text(user_id, "user_id"), goal, amount)
        else:
            pending, ident = handle.pending, handle.pending.add(checked_callable(on_complete, "on_complete"))
            status = _lib.exp_track_conversion_with_callback(handle, _text(user_id, "user_id"), goal, amount,
                                                             pending.delivery_callback, ident)
            if status:
                pending.discard(ident)
        if status:
            _raise(status)

    def run_when_ready(self, callback: Callable[[bool], None], timeout_ms: int = 2000) -> None:
        """Kameleoon runWhenReady: returns at once; ``callback(ready)`` is called exactly once — with True as
        soon as the client has a datafile (on this thread, before the call returns, when it has one
        already), with False on a library thread after ``timeout_ms`` milliseconds (negative: 2000), when
        an asynchronous start gave up with no datafile to use, or when the client is closed first (close()
        returns only after the callback ran). Exceptions raised by ``callback`` are logged, not raised."""
        function = checked_callable(callback, "callback")
        if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int):
            raise UnsupportedTypeError("timeout_ms: expected an int, got %s" % type(timeout_ms).__name__)
        timeout = max(-1, min(timeout_ms, _INT64_MAX))
        handle = self._live()
        ident = handle.pending.add(function)
        status = _lib.exp_client_run_when_ready(handle, timeout, handle.pending.ready_callback, ident)
        if status:
            handle.pending.discard(ident)
            _raise(status)

    def flush_async(self, on_complete: Callable[[DeliveryResult], None]) -> None:
        """:meth:`flush` without blocking: returns at once; ``on_complete(result)`` is called once on a
        library thread with a :class:`DeliveryResult`: true when none of this client's events is left,
        else ``error`` is WaitTimeoutError (some remain queued after close_timeout_ms and are retried) or
        ClosedError; ``sent`` counts this client's events delivered meanwhile."""
        handle = self._live()
        ident = handle.pending.add(checked_callable(on_complete, "on_complete"))
        status = _lib.exp_client_flush_async(handle, handle.pending.delivery_callback, ident)
        if status:
            handle.pending.discard(ident)
            _raise(status)

    def add_user_data(self, user_id: Text, *entries: Dict[str, Any]) -> None:
        """Kameleoon addData: entries such as ``{"type": "custom", "index": 1, "value": "gold"}``,
        ``{"type": "interest", "index": 2}``, ``{"type": "conversion", "goal_id": 32, "revenue": 10.0}``;
        sent with the user's next trigger / conversion or by :meth:`flush_user`."""
        try:
            data = json.dumps(list(entries), allow_nan=False).encode("utf-8")
        except (TypeError, ValueError) as exc:
            raise InvalidArgumentError("user data: %s" % exc) from None
        status = _lib.exp_add_user_data(self._live(), _text(user_id, "user_id"), data)
        if status:
            _raise(status)

    def flush_user(self, user_id: Text, on_complete: Optional[Callable[[DeliveryResult], None]] = None) -> None:
        """Kameleoon flush(user, completionHandler): sends the user's pending user data now. ``on_complete``
        as for :meth:`track_conversion` (a user with no pending data: true, ``sent`` 0, on this thread)."""
        handle = self._live()
        if on_complete is None:
            status = _lib.exp_flush_user(handle, _text(user_id, "user_id"))
        else:
            pending, ident = handle.pending, handle.pending.add(checked_callable(on_complete, "on_complete"))
            status = _lib.exp_flush_user_with_callback(handle, _text(user_id, "user_id"), pending.delivery_callback,
                                                       ident)
            if status:
                pending.discard(ident)
        if status:
            _raise(status)


# ------------------------------------------------------------------------------------------------
# The C accelerator (experiment/_speedups.c)
# ------------------------------------------------------------------------------------------------

# The Python methods, also when the accelerator replaces them on the class.
_PY_DECIDE = Client.decide
_PY_VARIATION_KEY = Client.variation_key


def _native_of(handle: "_Handle", profile_store: Any, default_decide_options: OptionsArg) -> Any:
    """The accelerator's Native for a handle (its exp_client address); None without the accelerator.
    A decide keeps the GIL unless it may wait: on the profile store (SQLite, the default, Redis, or
    unknown: a client found by tag) or on the event queue (an impression not disabled by the call's or
    the client's default options)."""
    if _speedups is None or not handle.value:
        return None
    try:
        events_off = bool(decide_options_to_int(default_decide_options) & _DISABLE_DECISION_EVENT)
    except Exception:  # the library accepted them: an entry only it knows, so assume events
        events_off = False
    return _speedups.Native(handle.value, profile_store not in ("none", "callbacks"), events_off)


def _install_speedups() -> None:
    """Hands the accelerator the library's exp_decide and exp_decision_release (the same .so ctypes loaded)
    and the binding's own helpers, then makes Client.decide and Client.variation_key its C methods."""
    global _speedups, _make_decision, _decisions_by_flag
    if _speedups is None:
        return
    from .decision import _ALL_BITS
    try:
        _speedups.install(cast(_lib.exp_decide, c_void_p).value, cast(_lib.exp_decision_release, c_void_p).value, {
            "Client": Client, "DecideOption": DecideOption, "Decision": Decision, "all_option_bits": _ALL_BITS,
            "raise_status": _raise, "decide_options_to_int": decide_options_to_int, "option_bits": _OPTION_BITS,
            "variables": _variables, "variables_cache": _VARIABLES,
            "decision_text_n": cast(_lib.exp_decision_text_n, c_void_p).value,
        })
    except Exception as exc:  # e.g. an extension built from another version of this package
        _log.warning("experiment._speedups not used (%s): deciding through ctypes", exc)
        _speedups = None
        return
    _make_decision = _speedups.new_decision  # same results, without Python frames or ctypes field reads
    _decisions_by_flag = _decisions_by_flag_in_c
    Client.decide = _speedups.FastMethod(_PY_DECIDE, _speedups.DECIDE)  # type: ignore[method-assign]
    Client.variation_key = _speedups.FastMethod(_PY_VARIATION_KEY, _speedups.VARIATION_KEY)  # type: ignore[method-assign]


_install_speedups()


def _check_profile_service(service: Any) -> None:
    if not callable(getattr(service, "lookup", None)) or not callable(getattr(service, "save", None)):
        raise TypeError("profile_store: expected \"sqlite\", \"none\", {\"redis\": {...}} or an object with "
                        "lookup(user_id) and save(profile) methods, got %r" % (service,))


def _install_profile_service(handle: Any, service: Any) -> None:
    """Installs `service` (lookup(user_id) -> dict | None, save(profile_dict)) as the client's profile
    store. Profiles cross as the documented JSON; an exception in either method is logged, counted by
    the library as a store error, and the decision goes on without sticky bucketing."""
    def on_lookup(user_id: Optional[bytes], reply: Any, _user_data: Any) -> int:
        try:
            # The whole id from the reply (the NUL-terminated argument would stop at a NUL byte).
            whole, length = ctypes.c_void_p(), ctypes.c_size_t()
            if _lib.exp_profile_reply_user_id(reply, ctypes.byref(whole), ctypes.byref(length)) == 0 and whole.value:
                user_id = ctypes.string_at(whole.value, length.value)
            profile = service.lookup((user_id or b"").decode("utf-8"))
            if profile is None:
                return 0
            data = json.dumps(profile).encode("utf-8")
            return 0 if _lib.exp_profile_reply_set(reply, data, len(data)) == 0 else 1
        except BaseException:  # nothing may propagate into C
            _log.exception("profile store %r failed to look a profile up", service)
            return 1

    def on_save(_user_id: Optional[bytes], profile_json: Optional[bytes], _user_data: Any) -> int:
        try:
            service.save(json.loads(profile_json or b"null"))
            return 0
        except BaseException:  # nothing may propagate into C
            _log.exception("profile store %r failed to save a profile", service)
            return 1

    lookup_callback, save_callback = EXP_PROFILE_LOOKUP_FN(on_lookup), EXP_PROFILE_SAVE_FN(on_save)
    handle.callbacks.extend([lookup_callback, save_callback])  # alive as long as the library may call them
    status = _lib.exp_client_set_profile_store(handle, lookup_callback, save_callback, None)
    if status:
        _raise(status)


def validate_datafile(datafile: Text) -> None:
    """Returns None if a client would accept the datafile, else raises the error a client would give."""
    data = _datafile_bytes(datafile)
    status = _lib.exp_validate_datafile(data, len(data) if data is not None else 0)
    if status:
        _raise(status)


def library_version() -> str:
    """The loaded library's version (exp_version())."""
    raw = _lib.exp_version()
    return raw.decode("utf-8") if raw else ""
