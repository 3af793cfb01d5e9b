"""Every size_t parameter of the C ABI, whatever its value (issue 18, item 1): a count or length of 2^63 or
more (an `int n = -1` passed as a count, SIZE_MAX) is EXP_ERR_TOO_LARGE like any count past its limit, never
a crash or a "failed to allocate" abort.

The list of parameters is read from include/experiment.h: a function that gains a size_t parameter and is
not walked here fails `test_every_size_parameter_of_the_header_is_walked`. Each one is walked with 0, 1,
limit, limit + 1, 2^40, 2^63 and SIZE_MAX, with buffers really as long as the limit where the value claims
that much (so an accepted value reads only memory it was given)."""

from __future__ import annotations

import ctypes
import json
import re
from ctypes import byref, c_char_p, c_double, c_int, c_int64, c_size_t, c_void_p
from typing import Callable, Dict, List, Tuple

import pytest

from experiment import _native
from experiment._native import ExpAttribute, ExpAttributeN, ExpDecision, lib
from conftest import HEADER_PATH
from test_sigma import sigma_datafile

OK = 0
INVALID_ARGUMENT = -1
TOO_LARGE = -14
BUFFER_TOO_SMALL = -18
SIZE_MAX = 2 ** 64 - 1


def header_text() -> str:
    with open(HEADER_PATH, encoding="utf-8") as f:
        return f.read()


def header_limit(name: str) -> int:
    """The value of an EXP_MAX_* define, e.g. (64u * 1024u * 1024u)."""
    match = re.search(r"#define\s+%s\s+(.+?)\s*(/\*|$)" % name, header_text(), re.M)
    assert match, name
    return int(eval(match.group(1).replace("u", "")))  # noqa: S307 - integer arithmetic of the header


def size_parameters() -> List[Tuple[str, str]]:
    """(function, parameter) for every by-value size_t parameter of every function the header declares."""
    text = re.sub(r"/\*.*?\*/", "", header_text(), flags=re.S)
    found = []
    for match in re.finditer(r"\b(exp_\w+)\s*\(([^;{}()]*)\)\s*;", text):
        for parameter in match.group(2).split(","):
            words = parameter.split()
            if len(words) >= 2 and words[-2] == "size_t" and not words[-1].startswith("*"):
                found.append((match.group(1), words[-1]))
    return found


# -------------------------------------------------------------------------------------------------
# What each parameter may be, and a call that passes `value` for it with everything else valid
# -------------------------------------------------------------------------------------------------

MAX_ATTRIBUTES = header_limit("EXP_MAX_ATTRIBUTES")
MAX_DECISIONS = header_limit("EXP_MAX_DECISIONS")
MAX_DATAFILE = header_limit("EXP_MAX_DATAFILE_BYTES")
MAX_PROFILE = header_limit("EXP_MAX_PROFILE_BYTES")
MAX_KEY = header_limit("EXP_MAX_KEY_BYTES")

_KEYS = [("a%d" % i).encode() for i in range(MAX_ATTRIBUTES)]
ATTRIBUTES = (ExpAttribute * MAX_ATTRIBUTES)()
for _i, _key in enumerate(_KEYS):
    ATTRIBUTES[_i].key = _key
    ATTRIBUTES[_i].value.type = 2      # EXP_VALUE_INT
    ATTRIBUTES[_i].value.int_value = _i
ATTRIBUTES_N = (ExpAttributeN * MAX_ATTRIBUTES)()   # the same, length-delimited (the *_n calls)
for _i, _key in enumerate(_KEYS):
    ATTRIBUTES_N[_i].key = _key
    ATTRIBUTES_N[_i].key_length = len(_key)
    ATTRIBUTES_N[_i].value.type = 2
    ATTRIBUTES_N[_i].value.int_value = _i


class Walk:
    """One client with the Sigma test datafile (flags, experiments, holdouts, an event)."""

    def __init__(self) -> None:
        self.handle = c_void_p()
        options = json.dumps({"sdk_key": "sizes"}).encode()
        assert lib.exp_client_create(options, byref(self.handle)) == OK
        data = json.dumps(sigma_datafile()).encode()
        assert lib.exp_client_start(self.handle, data, len(data)) == OK, _native.last_error()
        self.flags = c_size_t()
        assert lib.exp_flag_count(self.handle, byref(self.flags)) == OK

    def close(self) -> None:
        lib.exp_client_free(self.handle)


def attribute_call(name: str) -> Callable[[Walk, int], int]:
    """A call of `name` with `value` as attribute_count over a real array of EXP_MAX_ATTRIBUTES attributes."""
    out_str = c_char_p()
    flag = (b"u1", b"checkout", b"count")

    out_void = c_void_p()

    def release(status: int) -> int:
        if status == OK and out_str.value is not None:
            lib.exp_free(out_str)
            out_str.value = None
        if status == OK and out_void.value is not None:
            lib.exp_free(out_void)
            out_void.value = None
        return status

    calls: Dict[str, Callable[[Walk, int], int]] = {
        "exp_decide": lambda w, n: decide(w, n),
        "exp_decide_all": lambda w, n: decide_all(w, n, capacity=w.flags.value),
        "exp_decide_for_keys": lambda w, n: decide_for_keys(w, 1, n, capacity=1),
        "exp_get_variation": lambda w, n: release(lib.exp_get_variation(w.handle, b"checkout_test", b"u1",
                                                                        ATTRIBUTES, n, byref(out_str))),
        "exp_activate": lambda w, n: release(lib.exp_activate(w.handle, b"checkout_test", b"u1", ATTRIBUTES, n,
                                                              byref(out_str))),
        "exp_trigger_experiment": lambda w, n: release(lib.exp_trigger_experiment(w.handle, b"u1", b"3001",
                                                                                  ATTRIBUTES, n, byref(out_str))),
        "exp_track": lambda w, n: lib.exp_track(w.handle, b"purchase", b"u1", ATTRIBUTES, n, None),
        "exp_flag_bool": lambda w, n: lib.exp_flag_bool(w.handle, *flag[:2], None, ATTRIBUTES, n,
                                                        byref(c_int()), byref(c_int())),
        "exp_flag_int": lambda w, n: lib.exp_flag_int(w.handle, *flag, ATTRIBUTES, n, byref(c_int64()),
                                                      byref(c_int())),
        "exp_flag_double": lambda w, n: lib.exp_flag_double(w.handle, b"u1", b"checkout", b"ratio", ATTRIBUTES, n,
                                                            byref(c_double()), byref(c_int())),
        "exp_flag_string": lambda w, n: release(lib.exp_flag_string(w.handle, b"u1", b"checkout", b"title",
                                                                    ATTRIBUTES, n, byref(out_str), byref(c_int()))),
        "exp_flag_json": lambda w, n: release(lib.exp_flag_json(w.handle, b"u1", b"checkout", b"cfg", ATTRIBUTES, n,
                                                                byref(out_str), byref(c_int()))),
        "exp_get_holdout": lambda w, n: lib.exp_get_holdout(w.handle, b"u1", b"global_holdout", ATTRIBUTES, n,
                                                            byref(c_int())),
        "exp_get_experiment": lambda w, n: experiment_handle(w, n),
        "exp_decide_n": lambda w, n: decide_n(w, attribute_count=n),
        "exp_decide_all_n": lambda w, n: decide_all_n(w, n, capacity=w.flags.value),
        "exp_decide_for_keys_n": lambda w, n: decide_for_keys_n(w, 1, n, capacity=1),
        "exp_get_variation_n": lambda w, n: release(lib.exp_get_variation_n(
            w.handle, b"checkout_test", 13, b"u1", 2, ATTRIBUTES_N, n, byref(out_str))),
        "exp_activate_n": lambda w, n: release(lib.exp_activate_n(
            w.handle, b"checkout_test", 13, b"u1", 2, ATTRIBUTES_N, n, byref(out_str))),
        "exp_get_variation_len": lambda w, n: release(lib.exp_get_variation_len(
            w.handle, b"checkout_test", 13, b"u1", 2, ATTRIBUTES_N, n, byref(out_void), byref(c_size_t()))),
        "exp_activate_len": lambda w, n: release(lib.exp_activate_len(
            w.handle, b"checkout_test", 13, b"u1", 2, ATTRIBUTES_N, n, byref(out_void), byref(c_size_t()))),
        "exp_track_n": lambda w, n: lib.exp_track_n(w.handle, b"purchase", 8, b"u1", 2, ATTRIBUTES_N, n, None),
        "exp_user_create": lambda w, n: user_create(w, KEY_BUFFER, 2, ATTRIBUTES, n),
        "exp_user_create_n": lambda w, n: user_create_n(w, n),
    }
    for report in ("exp_user_flags_json", "exp_user_experiments", "exp_user_experiments_json",
                   "exp_user_holdouts", "exp_user_holdouts_json", "exp_get_experiment_json"):
        function = getattr(lib, report)
        if report == "exp_get_experiment_json":
            calls[report] = lambda w, n, f=function: release(f(w.handle, b"u1", b"checkout_test", ATTRIBUTES, n,
                                                               byref(out_str)))
        else:
            calls[report] = lambda w, n, f=function: release(f(w.handle, b"u1", ATTRIBUTES, n, byref(out_str)))
    return calls[name]


def decide(walk: Walk, attribute_count: int) -> int:
    decision = ExpDecision()
    status = lib.exp_decide(walk.handle, b"u1", b"checkout", ATTRIBUTES, attribute_count, 0, byref(decision))
    lib.exp_decision_release(byref(decision))
    return status


def decide_all(walk: Walk, attribute_count: int, capacity: int) -> int:
    out = (ExpDecision * walk.flags.value)()
    filled = c_size_t()
    status = lib.exp_decide_all(walk.handle, b"u1", ATTRIBUTES, attribute_count, 0, out, capacity, byref(filled))
    if status == OK:
        assert filled.value == walk.flags.value
        lib.exp_decisions_release(out, filled.value)
    return status


def decide_for_keys(walk: Walk, key_count: int, attribute_count: int, capacity: int) -> int:
    """keys and out are real arrays of min(key_count, EXP_MAX_DECISIONS) entries (unknown keys beyond the
    first: each gives a cheap "unknown flag" decision)."""
    length = max(1, min(key_count, MAX_DECISIONS))
    keys = (c_char_p * length)(*([b"checkout"] + [b"no_such_flag"] * (length - 1)))
    out = (ExpDecision * length)()
    filled = c_size_t()
    status = lib.exp_decide_for_keys(walk.handle, b"u1", keys, key_count, ATTRIBUTES, attribute_count, 0, out,
                                     capacity, byref(filled))
    if status == OK:
        assert filled.value == key_count
        lib.exp_decisions_release(out, filled.value)
    return status


# Key and user id buffers as long as EXP_MAX_KEY_BYTES: an accepted length reads only memory it was given.
_LONG_USER = ctypes.create_string_buffer(b"u" * MAX_KEY)
_LONG_KEY = ctypes.create_string_buffer(b"k" * MAX_KEY)


def decide_n(walk: Walk, attribute_count: int = 0, user_length: int = 2, flag_length: int = 8) -> int:
    decision = ExpDecision()
    user = _LONG_USER if user_length != 2 else b"u1"
    flag = _LONG_KEY if flag_length != 8 else b"checkout"
    status = lib.exp_decide_n(walk.handle, user, user_length, flag, flag_length, ATTRIBUTES_N, attribute_count, 0,
                              byref(decision))
    lib.exp_decision_release(byref(decision))
    return status


def decide_all_n(walk: Walk, attribute_count: int, capacity: int, user_length: int = 2) -> int:
    out = (ExpDecision * walk.flags.value)()
    filled = c_size_t()
    user = _LONG_USER if user_length != 2 else b"u1"
    status = lib.exp_decide_all_n(walk.handle, user, user_length, ATTRIBUTES_N, attribute_count, 0, out, capacity,
                                  byref(filled))
    if status == OK:
        lib.exp_decisions_release(out, filled.value)
    return status


def decide_for_keys_n(walk: Walk, key_count: int, attribute_count: int, capacity: int, user_length: int = 2) -> int:
    length = max(1, min(key_count, MAX_DECISIONS))
    keys = (c_char_p * length)(*([b"checkout"] + [b"no_such_flag"] * (length - 1)))
    lengths = (c_size_t * length)(*([8] + [12] * (length - 1)))
    out = (ExpDecision * length)()
    filled = c_size_t()
    user = _LONG_USER if user_length != 2 else b"u1"
    status = lib.exp_decide_for_keys_n(walk.handle, user, user_length, keys, lengths, key_count, ATTRIBUTES_N,
                                       attribute_count, 0, out, capacity, byref(filled))
    if status == OK:
        assert filled.value == key_count
        lib.exp_decisions_release(out, filled.value)
    return status


def key_length_call(name: str, parameter: str) -> Callable[[Walk, int], int]:
    """A *_n call with `value` as the byte length of its user id or key, over a buffer that long."""
    out_str = c_char_p()

    def variation(function: Callable[..., int], w: Walk, key: bytes, key_length: int, user: bytes,
                  user_length: int) -> int:
        if name.endswith("_len"):
            out_void = c_void_p()
            status = function(w.handle, key, key_length, user, user_length, None, 0, byref(out_void),
                              byref(c_size_t()))
            if status == OK and out_void.value is not None:
                lib.exp_free(out_void)
            return status
        status = function(w.handle, key, key_length, user, user_length, None, 0, byref(out_str))
        if status == OK and out_str.value is not None:
            lib.exp_free(out_str)
            out_str.value = None
        return status

    if name == "exp_decide_n":
        if parameter == "user_id_length":
            return lambda w, n: decide_n(w, user_length=n)
        return lambda w, n: decide_n(w, flag_length=n)
    if name == "exp_decide_all_n":
        return lambda w, n: decide_all_n(w, 0, capacity=w.flags.value, user_length=n)
    if name == "exp_decide_for_keys_n":
        return lambda w, n: decide_for_keys_n(w, 1, 0, capacity=1, user_length=n)
    if name == "exp_user_create_n":
        def create_n(w: Walk, n: int) -> int:
            out = c_void_p()
            status = lib.exp_user_create_n(w.handle, _LONG_USER, n, None, 0, byref(out))
            lib.exp_user_free(out)
            return status
        return create_n
    if name == "exp_set_forced_variation_n":
        def set_forced_n(w: Walk, n: int) -> int:
            lengths = {"experiment_key_length": 13, "user_id_length": 2, "variation_key_length": 7}
            lengths[parameter] = n
            texts = {"experiment_key_length": b"checkout_test", "user_id_length": b"u1",
                     "variation_key_length": b"control"}
            texts[parameter] = _LONG_KEY if parameter != "user_id_length" else _LONG_USER
            return lib.exp_set_forced_variation_n(w.handle, texts["experiment_key_length"],
                                                  lengths["experiment_key_length"], texts["user_id_length"],
                                                  lengths["user_id_length"], texts["variation_key_length"],
                                                  lengths["variation_key_length"])
        return set_forced_n
    if name == "exp_get_forced_variation_n":
        def get_forced_n(w: Walk, n: int) -> int:
            out_void = c_void_p()
            if parameter == "user_id_length":
                status = lib.exp_get_forced_variation_n(w.handle, b"checkout_test", 13, _LONG_USER, n,
                                                        byref(out_void), byref(c_size_t()))
            else:
                status = lib.exp_get_forced_variation_n(w.handle, _LONG_KEY, n, b"u1", 2, byref(out_void),
                                                        byref(c_size_t()))
            if status == OK and out_void.value is not None:
                lib.exp_free(out_void)
            return status
        return get_forced_n
    if name == "exp_track_n":
        if parameter == "user_id_length":
            return lambda w, n: lib.exp_track_n(w.handle, b"purchase", 8, _LONG_USER, n, None, 0, None)
        return lambda w, n: lib.exp_track_n(w.handle, _LONG_KEY, n, b"u1", 2, None, 0, None)
    function = getattr(lib, name)
    if parameter == "user_id_length":
        return lambda w, n: variation(function, w, b"checkout_test", 13, _LONG_USER, n)
    return lambda w, n: variation(function, w, _LONG_KEY, n, b"u1", 2)


def experiment_handle(walk: Walk, attribute_count: int) -> int:
    out = c_void_p()
    status = lib.exp_get_experiment(walk.handle, b"u1", b"checkout_test", ATTRIBUTES, attribute_count, byref(out))
    lib.exp_experiment_free(out)
    return status


def datafile_length_call(name: str) -> Callable[[Walk, int], int]:
    """A zero-filled buffer as long as the limit: an accepted length reads only NULs (invalid JSON)."""
    buffer = ctypes.create_string_buffer(MAX_DATAFILE + 1)
    if name == "exp_validate_datafile":
        return lambda w, n: lib.exp_validate_datafile(buffer, n)
    if name == "exp_client_start":
        return lambda w, n: lib.exp_client_start(w.handle, buffer, n)

    def start_async(_walk: Walk, n: int) -> int:
        # A client of its own (start_async runs once per client) whose fetch can only fail, locally.
        handle = c_void_p()
        options = json.dumps({"sdk_key": "sizes", "datafile_url_template": "file:///nonexistent/{sdk_key}.json",
                              "retry_count": 0}).encode()
        assert lib.exp_client_create(options, byref(handle)) == OK
        try:
            return lib.exp_client_start_async(handle, buffer, n, _native.EXP_READY_FN(), None)
        finally:
            lib.exp_client_free(handle)
    return start_async


# Messages of calls whose exp_last_error is gone by the time they return (read on the calling thread).
MESSAGES: Dict[Callable[[Walk, int], int], str] = {}


def profile_length_call(_name: str) -> Callable[[Walk, int], int]:
    """exp_profile_reply_set from inside a real lookup callback, with a buffer as long as the limit."""
    buffer = ctypes.create_string_buffer(b" " * MAX_PROFILE)

    def call(walk: Walk, n: int) -> int:
        seen: List[int] = []

        def lookup(_user: bytes, reply: int, _data: object) -> int:
            status = lib.exp_profile_reply_set(reply, buffer, n)
            seen.append((status, _native.last_error()))   # read here: later calls on this thread clear it
            return 0

        lookup_fn = _native.EXP_PROFILE_LOOKUP_FN(lookup)
        save_fn = _native.EXP_PROFILE_SAVE_FN(lambda _u, _j, _d: 0)
        handle = c_void_p()
        options = json.dumps({"sdk_key": "sizes", "profile_store": "callbacks"}).encode()
        assert lib.exp_client_create(options, byref(handle)) == OK
        try:
            data = json.dumps(sigma_datafile()).encode()
            assert lib.exp_client_start(handle, data, len(data)) == OK
            assert lib.exp_client_set_profile_store(handle, lookup_fn, save_fn, None) == OK
            decision = ExpDecision()
            lib.exp_decide(handle, b"u1", b"checkout", None, 0, 0, byref(decision))
            lib.exp_decision_release(byref(decision))
        finally:
            lib.exp_client_free(handle)
        assert seen and len(set(seen)) == 1, seen   # a failed lookup may be retried (the save re-reads)
        MESSAGES[call] = seen[0][1]
        return seen[0][0]
    return call


def release_call(_name: str) -> Callable[[Walk, int], int]:
    """exp_decisions_release has no status: a refused count leaves a message in exp_last_error."""
    decisions = (ExpDecision * MAX_DECISIONS)()

    def call(_walk: Walk, n: int) -> int:
        lib.exp_decide(None, None, None, None, 0, 0, None)  # sets exp_last_error to something else
        lib.exp_decisions_release(decisions, n)
        return TOO_LARGE if "exceeds the limit" in _native.last_error() else OK
    return call


# (function, parameter) -> (limit, call). A limit of None: an output capacity, where any value is accepted.
def walked() -> Dict[Tuple[str, str], Tuple[object, Callable[[Walk, int], int]]]:
    table: Dict[Tuple[str, str], Tuple[object, Callable[[Walk, int], int]]] = {}
    for name, parameter in size_parameters():
        if parameter == "attribute_count":
            table[(name, parameter)] = (MAX_ATTRIBUTES, attribute_call(name))
        elif parameter.endswith("_length") and (name.endswith("_n") or name in ("exp_get_variation_len",
                                                                                  "exp_activate_len")):
            table[(name, parameter)] = (MAX_KEY, key_length_call(name, parameter))
    table[("exp_client_start", "length")] = (MAX_DATAFILE, datafile_length_call("exp_client_start"))
    table[("exp_validate_datafile", "length")] = (MAX_DATAFILE, datafile_length_call("exp_validate_datafile"))
    table[("exp_client_start_async", "length")] = (MAX_DATAFILE, datafile_length_call("exp_client_start_async"))
    table[("exp_profile_reply_set", "length")] = (MAX_PROFILE, profile_length_call("exp_profile_reply_set"))
    table[("exp_decide_for_keys", "key_count")] = (
        MAX_DECISIONS, lambda w, n: decide_for_keys(w, n, 0, capacity=max(1, min(n, MAX_DECISIONS))))
    table[("exp_decisions_release", "count")] = (MAX_DECISIONS, release_call("exp_decisions_release"))
    table[("exp_decide_all", "capacity")] = (None, lambda w, n: decide_all(w, 0, capacity=n))
    table[("exp_decide_for_keys", "capacity")] = (None, lambda w, n: decide_for_keys(w, 1, 0, capacity=n))
    table[("exp_decide_for_keys_n", "key_count")] = (
        MAX_DECISIONS, lambda w, n: decide_for_keys_n(w, n, 0, capacity=max(1, min(n, MAX_DECISIONS))))
    table[("exp_decide_all_n", "capacity")] = (None, lambda w, n: decide_all_n(w, 0, capacity=n))
    table[("exp_decide_for_keys_n", "capacity")] = (None, lambda w, n: decide_for_keys_n(w, 1, 0, capacity=n))
    # An unknown flag's error decision holds exactly one reason, whatever the options: index 0 is the last
    # valid one, and every larger index (SIZE_MAX and 2^63 included) is refused, never read.
    table[("exp_decision_text_n", "index")] = (0, decision_text_index)
    table.update(context_walks())
    return table


def decision_text_index(walk: Walk, n: int) -> int:
    decision = ExpDecision()
    status = lib.exp_decide(walk.handle, b"u1", b"no_such_flag", None, 0, 0, byref(decision))
    assert status != OK and decision.reason_count == 1, (status, decision.reason_count)
    try:
        return lib.exp_decision_text_n(byref(decision), _native.EXP_DECISION_REASON, n, byref(c_void_p()),
                                       byref(c_size_t()))
    finally:
        lib.exp_decision_release(byref(decision))


# -------------------------------------------------------------------------------------------------
# User contexts, exp_client_start_sync, stored profiles: ids and keys come with their lengths
# -------------------------------------------------------------------------------------------------

MAX_KEY = header_limit("EXP_MAX_KEY_BYTES")
KEY_BUFFER = ctypes.create_string_buffer(b"k" * MAX_KEY)


def user_create(walk: Walk, user_id: object, user_id_length: int, attributes: object, count: int) -> int:
    out = c_void_p()
    status = lib.exp_user_create(walk.handle, user_id, user_id_length, attributes, count, byref(out))
    lib.exp_user_free(out)
    return status


def user_create_n(walk: Walk, count: int) -> int:
    out = c_void_p()
    status = lib.exp_user_create_n(walk.handle, b"u1", 2, ATTRIBUTES_N, count, byref(out))
    lib.exp_user_free(out)
    return status


def user_of(walk: Walk) -> c_void_p:
    """The walk's own user context (made once)."""
    user = getattr(walk, "user", None)
    if user is None:
        user = c_void_p()
        assert lib.exp_user_create(walk.handle, b"u1", 2, None, 0, byref(user)) == OK
        walk.user = user  # type: ignore[attr-defined]
    return user


def user_decide_all(walk: Walk, capacity: int) -> int:
    out = (ExpDecision * walk.flags.value)()
    filled = c_size_t()
    status = lib.exp_user_decide_all(user_of(walk), 0, out, capacity, byref(filled))
    if status == OK:
        lib.exp_decisions_release(out, filled.value)
    return status


def user_decide_for_keys(walk: Walk, key_count: int, capacity: int) -> int:
    length = max(1, min(key_count, MAX_DECISIONS))
    keys = (c_char_p * length)(*([b"checkout"] + [b"no_such_flag"] * (length - 1)))
    lengths = (c_size_t * length)(*([8] + [12] * (length - 1)))
    out = (ExpDecision * length)()
    filled = c_size_t()
    status = lib.exp_user_decide_for_keys(user_of(walk), keys, lengths, key_count, 0, out, capacity, byref(filled))
    if status == OK:
        lib.exp_decisions_release(out, filled.value)
    return status


def user_decide(walk: Walk, n: int) -> int:
    decision = ExpDecision()
    status = lib.exp_user_decide(user_of(walk), KEY_BUFFER, n, 0, byref(decision))
    lib.exp_decision_release(byref(decision))
    return status


def forced(function: str, position: int) -> Callable[[Walk, int], int]:
    """exp_user_*_forced_decision with `value` as the length of its key number `position` (others valid)."""
    def call(walk: Walk, n: int) -> int:
        lengths = [8, 8, 2]
        lengths[position] = n
        if function == "exp_user_set_forced_decision":
            return lib.exp_user_set_forced_decision(user_of(walk), KEY_BUFFER, lengths[0], KEY_BUFFER, lengths[1],
                                                    KEY_BUFFER, lengths[2])
        if function == "exp_user_get_forced_decision":
            out = c_char_p()
            status = lib.exp_user_get_forced_decision(user_of(walk), KEY_BUFFER, lengths[0], KEY_BUFFER, lengths[1],
                                                      byref(out))
            if status == OK and out.value is not None:
                lib.exp_free(out)
            return status
        if function == "exp_user_get_forced_decision_len":
            out_void = c_void_p()
            status = lib.exp_user_get_forced_decision_len(user_of(walk), KEY_BUFFER, lengths[0], KEY_BUFFER,
                                                          lengths[1], byref(out_void), byref(c_size_t()))
            if status == OK and out_void.value is not None:
                lib.exp_free(out_void)
            return status
        return lib.exp_user_remove_forced_decision(user_of(walk), KEY_BUFFER, lengths[0], KEY_BUFFER, lengths[1],
                                                   None)
    return call


def start_sync(_walk: Walk, n: int) -> int:
    """A client of its own (a managed start runs once per client): a NUL-filled bundled datafile."""
    buffer = DATAFILE_BUFFER
    handle = c_void_p()
    assert lib.exp_client_create(json.dumps({"sdk_key": "sizes-sync"}).encode(), byref(handle)) == OK
    try:
        return lib.exp_client_start_sync(handle, buffer, n, 0, None)
    finally:
        lib.exp_client_free(handle)


DATAFILE_BUFFER = ctypes.create_string_buffer(MAX_DATAFILE + 1)


def context_walks() -> Dict[Tuple[str, str], Tuple[object, Callable[[Walk, int], int]]]:
    def profile_get(w: Walk, n: int) -> int:
        out = c_char_p()
        status = lib.exp_profile_get(w.handle, KEY_BUFFER, n, byref(out))
        if status == OK and out.value is not None:
            lib.exp_free(out)
        return status

    value = _native.ExpValue(2, 0, 7, 0.0, None)
    return {
        ("exp_user_create", "user_id_length"): (MAX_KEY, lambda w, n: user_create(w, KEY_BUFFER, n, None, 0)),
        ("exp_user_set_attribute", "key_length"): (
            MAX_KEY, lambda w, n: lib.exp_user_set_attribute(user_of(w), KEY_BUFFER, n, byref(value))),
        ("exp_user_remove_attribute", "key_length"): (
            MAX_KEY, lambda w, n: lib.exp_user_remove_attribute(user_of(w), KEY_BUFFER, n)),
        ("exp_user_decide", "flag_key_length"): (MAX_KEY, user_decide),
        ("exp_user_decide_all", "capacity"): (None, user_decide_all),
        ("exp_user_decide_for_keys", "key_count"): (
            MAX_DECISIONS, lambda w, n: user_decide_for_keys(w, n, capacity=max(1, min(n, MAX_DECISIONS)))),
        ("exp_user_decide_for_keys", "capacity"): (None, lambda w, n: user_decide_for_keys(w, 1, capacity=n)),
        ("exp_user_track", "event_key_length"): (
            MAX_KEY, lambda w, n: lib.exp_user_track(user_of(w), KEY_BUFFER, n, None)),
        ("exp_user_set_forced_decision", "flag_key_length"): (MAX_KEY, forced("exp_user_set_forced_decision", 0)),
        ("exp_user_set_forced_decision", "rule_key_length"): (MAX_KEY, forced("exp_user_set_forced_decision", 1)),
        ("exp_user_set_forced_decision", "variation_key_length"): (
            MAX_KEY, forced("exp_user_set_forced_decision", 2)),
        ("exp_user_get_forced_decision", "flag_key_length"): (MAX_KEY, forced("exp_user_get_forced_decision", 0)),
        ("exp_user_get_forced_decision", "rule_key_length"): (MAX_KEY, forced("exp_user_get_forced_decision", 1)),
        ("exp_user_get_forced_decision_len", "flag_key_length"): (
            MAX_KEY, forced("exp_user_get_forced_decision_len", 0)),
        ("exp_user_get_forced_decision_len", "rule_key_length"): (
            MAX_KEY, forced("exp_user_get_forced_decision_len", 1)),
        ("exp_user_remove_forced_decision", "flag_key_length"): (
            MAX_KEY, forced("exp_user_remove_forced_decision", 0)),
        ("exp_user_remove_forced_decision", "rule_key_length"): (
            MAX_KEY, forced("exp_user_remove_forced_decision", 1)),
        ("exp_user_is_qualified_for", "segment_length"): (
            MAX_KEY, lambda w, n: lib.exp_user_is_qualified_for(user_of(w), KEY_BUFFER, n, byref(c_int()))),
        ("exp_client_start_sync", "length"): (MAX_DATAFILE, start_sync),
        ("exp_profile_get", "user_id_length"): (MAX_KEY, profile_get),
        ("exp_profile_delete", "user_id_length"): (
            MAX_KEY, lambda w, n: lib.exp_profile_delete(w.handle, KEY_BUFFER, n, None)),
    }


WALKED = walked()


def test_every_size_parameter_of_the_header_is_walked():
    declared = set(size_parameters())
    assert len(declared) >= 26, sorted(declared)   # the parse found the header's functions
    assert declared - set(WALKED) == set(), "size_t parameters nobody walks: %s" % sorted(declared - set(WALKED))
    assert set(WALKED) - declared == set(), "walked but not in the header: %s" % sorted(set(WALKED) - declared)


@pytest.fixture(scope="module")
def walk():
    w = Walk()
    yield w
    w.close()


@pytest.mark.parametrize("function,parameter", sorted(WALKED))
def test_size_parameter_answers_for_every_value(walk, function, parameter):
    limit, call = WALKED[(function, parameter)]
    if limit is None:
        # An output capacity: too small is BUFFER_TOO_SMALL, anything from the needed size up (SIZE_MAX
        # included) is accepted and only the needed entries are written.
        needed = walk.flags.value if function in ("exp_decide_all", "exp_decide_all_n", "exp_user_decide_all") else 1
        for value in (0, needed - 1):
            assert call(walk, value) == BUFFER_TOO_SMALL, (value, _native.last_error())
        for value in (needed, needed + 1, 2 ** 40, 2 ** 63, SIZE_MAX):
            assert call(walk, value) == OK, (value, _native.last_error())
        return
    for value in (0, 1, limit):
        status = call(walk, value)
        assert status not in (TOO_LARGE,), (value, status, _native.last_error())
    for value in (limit + 1, 2 ** 40, 2 ** 63, SIZE_MAX):
        status = call(walk, value)
        assert status in (TOO_LARGE, INVALID_ARGUMENT), (value, status, _native.last_error())
        if function != "exp_decisions_release":
            message = MESSAGES.pop(call, None) or _native.last_error()
            assert parameter in message and str(value) in message, message   # SIZE_MAX as such, not -1
    # the client still works afterwards
    assert decide(walk, 0) == OK
