"""The C ABI directly through ctypes: NULL safety of every function, out-parameter rules, status strings,
exp_last_error, the JSON conveniences and the buffer protocol of exp_decide_all."""

from __future__ import annotations

import ctypes
import json
import threading
from ctypes import byref, c_char_p, c_int, c_size_t, c_uint, c_void_p

import pytest

from experiment import _native
from experiment._native import ExpAttribute, ExpDecision, ExpValue, lib
from conftest import nested_json

OK = 0
INVALID_ARGUMENT = -1
INVALID_JSON = -2
INVALID_OPTION = -3
NOT_READY = -6
UNKNOWN_FLAG = -7
INVALID_UTF8 = -13
TOO_LARGE = -14
TOO_DEEP = -15
CLOSED = -17
BUFFER_TOO_SMALL = -18
NULL_FN = _native.EXP_EVENT_DISPATCH_FN()  # a NULL exp_event_dispatch_fn


def last_error() -> str:
    return _native.last_error()


@pytest.fixture()
def raw(datafile_text):
    handle = c_void_p()
    assert lib.exp_client_create(None, byref(handle)) == OK
    data = datafile_text.encode()
    assert lib.exp_client_start(handle, data, len(data)) == OK, last_error()
    yield handle
    lib.exp_client_free(handle)


@pytest.fixture()
def raw_idle():
    handle = c_void_p()
    assert lib.exp_client_create(b"", byref(handle)) == OK
    yield handle
    lib.exp_client_free(handle)


def out_str():
    return c_char_p()


def take(out) -> str:
    value = out.value
    lib.exp_free(out)
    return value.decode() if value is not None else None


# ------------------------------------------------------------------------------------------------
# NULL client for every client function
# ------------------------------------------------------------------------------------------------

NULL_CLIENT_CALLS = {
    "exp_client_start": lambda: lib.exp_client_start(None, b"{}", 2),
    "exp_client_is_ready": lambda: lib.exp_client_is_ready(None, byref(c_int())),
    "exp_client_config_json": lambda: lib.exp_client_config_json(None, byref(out_str())),
    "exp_client_datafile_json": lambda: lib.exp_client_datafile_json(None, byref(out_str()), None),
    "exp_client_close": lambda: lib.exp_client_close(None),
    "exp_decide": lambda: lib.exp_decide(None, b"u", b"f", None, 0, 0, byref(ExpDecision())),
    "exp_flag_count": lambda: lib.exp_flag_count(None, byref(c_size_t())),
    "exp_decide_all": lambda: lib.exp_decide_all(None, b"u", None, 0, 0, (ExpDecision * 2)(), 2,
                                                 byref(c_size_t())),
    "exp_decide_json": lambda: lib.exp_decide_json(None, b"u", b"f", None, 0, byref(out_str())),
    "exp_decide_for_keys_json": lambda: lib.exp_decide_for_keys_json(None, b"u", None, None, 0, byref(out_str())),
    "exp_get_variation": lambda: lib.exp_get_variation(None, b"e", b"u", None, 0, byref(out_str())),
    "exp_activate": lambda: lib.exp_activate(None, b"e", b"u", None, 0, byref(out_str())),
    "exp_trigger_experiment": lambda: lib.exp_trigger_experiment(None, b"u", b"1", None, 0, byref(out_str())),
    "exp_set_forced_variation": lambda: lib.exp_set_forced_variation(None, b"e", b"u", b"v"),
    "exp_get_forced_variation": lambda: lib.exp_get_forced_variation(None, b"e", b"u", byref(out_str())),
    "exp_set_forced_decision": lambda: lib.exp_set_forced_decision(None, b"u", b"f", None, b"v"),
    "exp_remove_forced_decisions": lambda: lib.exp_remove_forced_decisions(None, b"u"),
    "exp_set_user_property": lambda: lib.exp_set_user_property(None, b"u", b"k", byref(ExpValue(0))),
    "exp_set_user_property_json": lambda: lib.exp_set_user_property_json(None, b"u", b"k", b"1"),
    "exp_remove_user_property": lambda: lib.exp_remove_user_property(None, b"u", b"k"),
    "exp_clear_user_properties": lambda: lib.exp_clear_user_properties(None, b"u"),
    "exp_get_user_properties_json": lambda: lib.exp_get_user_properties_json(None, b"u", byref(out_str())),
    "exp_track": lambda: lib.exp_track(None, b"e", b"u", None, 0, None),
    "exp_client_set_event_dispatcher": lambda: lib.exp_client_set_event_dispatcher(None, NULL_FN, None),
}


@pytest.mark.parametrize("name", NULL_CLIENT_CALLS)
def test_null_client(name):
    assert NULL_CLIENT_CALLS[name]() == INVALID_ARGUMENT
    assert last_error(), "no message after %s(NULL)" % name


def test_null_safe_void_functions():
    lib.exp_free(None)
    lib.exp_client_free(None)
    lib.exp_decision_release(None)
    lib.exp_decisions_release(None, 0)
    lib.exp_decisions_release(None, 5)
    zero = ExpDecision()
    lib.exp_decision_release(byref(zero))
    lib.exp_decision_release(byref(zero))


# ------------------------------------------------------------------------------------------------
# NULL arguments on a live client
# ------------------------------------------------------------------------------------------------

def _null_arg_calls(h):
    d = ExpDecision()
    return {
        "create out NULL": lambda: lib.exp_client_create(None, None),
        "start datafile NULL": lambda: lib.exp_client_start(h, None, 10),
        "is_ready out NULL": lambda: lib.exp_client_is_ready(h, None),
        "config out NULL": lambda: lib.exp_client_config_json(h, None),
        "datafile_json out NULL": lambda: lib.exp_client_datafile_json(h, None, byref(c_size_t())),
        "validate NULL": lambda: lib.exp_validate_datafile(None, 10),
        "decide user NULL": lambda: lib.exp_decide(h, None, b"checkout_flow", None, 0, 0, byref(d)),
        "decide flag NULL": lambda: lib.exp_decide(h, b"u", None, None, 0, 0, byref(d)),
        "decide out NULL": lambda: lib.exp_decide(h, b"u", b"checkout_flow", None, 0, 0, None),
        "decide attrs NULL with count": lambda: lib.exp_decide(h, b"u", b"checkout_flow", None, 3, 0, byref(d)),
        "flag_count out NULL": lambda: lib.exp_flag_count(h, None),
        "decide_all out NULL": lambda: lib.exp_decide_all(h, b"u", None, 0, 0, None, 2, byref(c_size_t())),
        "decide_all count NULL": lambda: lib.exp_decide_all(h, b"u", None, 0, 0, (ExpDecision * 2)(), 2, None),
        "decide_all user NULL": lambda: lib.exp_decide_all(h, None, None, 0, 0, (ExpDecision * 2)(), 2,
                                                           byref(c_size_t())),
        "decide_json out NULL": lambda: lib.exp_decide_json(h, b"u", b"checkout_flow", None, 0, None),
        "decide_json flag NULL": lambda: lib.exp_decide_json(h, b"u", None, None, 0, byref(out_str())),
        "decide_for_keys out NULL": lambda: lib.exp_decide_for_keys_json(h, b"u", None, None, 0, None),
        "options_parse NULL": lambda: lib.exp_decide_options_parse(None, byref(c_uint())),
        "options_parse out NULL": lambda: lib.exp_decide_options_parse(b"[]", None),
        "get_variation out NULL": lambda: lib.exp_get_variation(h, b"checkout_test", b"u", None, 0, None),
        "activate key NULL": lambda: lib.exp_activate(h, None, b"u", None, 0, byref(out_str())),
        "trigger out NULL": lambda: lib.exp_trigger_experiment(h, b"u", b"60001", None, 0, None),
        "forced variation user NULL": lambda: lib.exp_set_forced_variation(h, b"checkout_test", None, b"control"),
        "get forced out NULL": lambda: lib.exp_get_forced_variation(h, b"checkout_test", b"u", None),
        "forced decision flag NULL": lambda: lib.exp_set_forced_decision(h, b"u", None, None, b"control"),
        "property value NULL": lambda: lib.exp_set_user_property(h, b"u", b"k", None),
        "property json NULL": lambda: lib.exp_set_user_property_json(h, b"u", b"k", None),
        "properties out NULL": lambda: lib.exp_get_user_properties_json(h, b"u", None),
        "track event NULL": lambda: lib.exp_track(h, None, b"u", None, 0, None),
        "track attrs NULL with count": lambda: lib.exp_track(h, b"purchase", b"u", None, 2, None),
    }


def test_null_arguments(raw):
    for name, call in _null_arg_calls(raw).items():
        assert call() == INVALID_ARGUMENT, name
        assert last_error(), "no message for %s" % name
    # the client still works
    d = ExpDecision()
    assert lib.exp_decide(raw, b"u2", b"checkout_flow", None, 0, 0, byref(d)) == OK
    lib.exp_decision_release(byref(d))


def test_bad_attribute_structs(raw):
    d = ExpDecision()
    bad_type = (ExpAttribute * 1)(ExpAttribute(b"country", ExpValue(7, 0, 0, 0.0, None)))
    assert lib.exp_decide(raw, b"u", b"checkout_flow", bad_type, 1, 0, byref(d)) == INVALID_ARGUMENT
    assert "type" in last_error().lower()
    null_key = (ExpAttribute * 1)(ExpAttribute(None, ExpValue(4, 0, 0, 0.0, b"NL")))
    assert lib.exp_decide(raw, b"u", b"checkout_flow", null_key, 1, 0, byref(d)) == INVALID_ARGUMENT
    null_string = (ExpAttribute * 1)(ExpAttribute(b"country", ExpValue(4, 0, 0, 0.0, None)))
    assert lib.exp_decide(raw, b"u", b"checkout_flow", null_string, 1, 0, byref(d)) == INVALID_ARGUMENT
    negative_type = (ExpAttribute * 1)(ExpAttribute(b"country", ExpValue(-1, 0, 0, 0.0, None)))
    assert lib.exp_decide(raw, b"u", b"checkout_flow", negative_type, 1, 0, byref(d)) == INVALID_ARGUMENT
    assert lib.exp_set_user_property(raw, b"u", b"k", byref(ExpValue(9))) == INVALID_ARGUMENT
    assert lib.exp_decide(raw, b"u", b"checkout_flow", None, 0, 0, byref(d)) == OK
    lib.exp_decision_release(byref(d))


def test_unknown_decide_option_bits(raw):
    d = ExpDecision()
    # header: "a bad enum" is an argument error
    assert lib.exp_decide(raw, b"u2", b"checkout_flow", None, 0, 1 << 20, byref(d)) == INVALID_ARGUMENT
    assert "0x100000" in last_error() or "1048576" in last_error()
    assert lib.exp_decide(raw, b"u2", b"checkout_flow", None, 0, 31, byref(d)) == OK
    lib.exp_decision_release(byref(d))


# ------------------------------------------------------------------------------------------------
# errors, strings, memory
# ------------------------------------------------------------------------------------------------

def test_last_error_is_cleared_by_success(raw):
    d = ExpDecision()
    assert lib.exp_decide(raw, b"u", b"missing", None, 0, 0, byref(d)) == UNKNOWN_FLAG
    assert "missing" in last_error()
    assert lib.exp_decide(raw, b"u", b"checkout_flow", None, 0, 0, byref(d)) == OK
    assert last_error() == ""
    lib.exp_decision_release(byref(d))


def test_last_error_is_thread_local(raw):
    d = ExpDecision()
    assert lib.exp_decide(raw, b"u", b"main_thread_flag", None, 0, 0, byref(d)) == UNKNOWN_FLAG
    seen = {}

    def other():
        seen["initial"] = last_error()
        dd = ExpDecision()
        lib.exp_decide(raw, b"u", b"other_thread_flag", None, 0, 0, byref(dd))
        seen["after"] = last_error()

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert "main_thread_flag" not in seen["initial"]
    assert "other_thread_flag" in seen["after"]
    assert "main_thread_flag" in last_error()


def test_status_str_never_null():
    for code in list(range(-20, 1)) + [-99, 1, 42, -1000]:
        s = lib.exp_status_str(code)
        assert s is not None and s.startswith(b"EXP_")


def test_out_parameters_untouched_on_failure(raw):
    out = c_char_p(b"sentinel")
    assert lib.exp_get_variation(raw, b"nope", b"u", None, 0, byref(out)) == -8
    assert out.value == b"sentinel"
    count = c_size_t(12345)
    assert lib.exp_flag_count(None, byref(count)) == INVALID_ARGUMENT
    assert count.value == 12345


def test_decision_release_zeroes_and_is_idempotent(raw):
    d = ExpDecision()
    assert lib.exp_decide(raw, b"u2", b"checkout_flow", None, 0, 8, byref(d)) == OK
    assert d.flag_key == b"checkout_flow" and d.reason_count > 0
    lib.exp_decision_release(byref(d))
    assert d.flag_key is None and d.variables_json is None and d.reason_count == 0
    assert not d.reasons
    lib.exp_decision_release(byref(d))


def test_decision_strings_outlive_datafile_replacement(raw, datafile_dict):
    d = ExpDecision()
    assert lib.exp_decide(raw, b"u2", b"checkout_flow", None, 0, 0, byref(d)) == OK
    datafile_dict["featureFlags"] = []
    datafile_dict["revision"] = "100"
    for _ in range(3):
        data = json.dumps(datafile_dict).encode()
        assert lib.exp_client_start(raw, data, len(data)) == OK, last_error()
    assert d.flag_key == b"checkout_flow"
    assert json.loads(d.variables_json)["headline"] == "Welcome"
    lib.exp_decision_release(byref(d))


# ------------------------------------------------------------------------------------------------
# create options
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("options, status, fragment", [
    (b"{}", OK, ""),
    (b"", OK, ""),
    (b'{"sdk_key": "x", "default_decide_options": [], "user_store_capacity": 1}', OK, ""),
    (b'{"sdk_kee": "x"}', INVALID_OPTION, "sdk_kee"),
    (b'{"polling_interval_s": "soon"}', INVALID_OPTION, "polling_interval_s"),
    (b'{"sdk_key": 5}', INVALID_OPTION, "sdk_key"),
    (b'{"default_decide_options": "INCLUDE_REASONS"}', INVALID_OPTION, "default_decide_options"),
    (b'{"default_decide_options": ["WHATEVER"]}', INVALID_OPTION, "WHATEVER"),
    (b'{"user_store_capacity": -5}', INVALID_OPTION, "user_store_capacity"),
    (b"[]", (INVALID_OPTION, INVALID_JSON), ""),
    (b"{", INVALID_JSON, ""),
    (b'{"sdk_key": "x"} trailing', INVALID_JSON, ""),
    (b"\xff", INVALID_UTF8, ""),
    (nested_json(10000).encode(), TOO_DEEP, ""),
    (b'{"sdk_key": "' + b"x" * (1024 * 1024) + b'"}', TOO_LARGE, ""),
])
def test_create_options(options, status, fragment):
    handle = c_void_p()
    got = lib.exp_client_create(options, byref(handle))
    message = last_error()
    try:
        assert got in (status if isinstance(status, tuple) else (status,)), (got, message)
        if status == OK:
            assert handle.value
        else:
            assert handle.value is None
            assert message and fragment in message
    finally:
        lib.exp_client_free(handle)


# ------------------------------------------------------------------------------------------------
# JSON conveniences
# ------------------------------------------------------------------------------------------------

def test_decide_json(raw):
    out = out_str()
    assert lib.exp_decide_json(raw, b"u2", b"checkout_flow", b'{"country": "NL", "age": 30}', 0, byref(out)) == OK
    d = json.loads(take(out))
    assert d["flag_key"] == "checkout_flow" and d["variation_key"] == "control"
    assert d["rule_key"] == "checkout_test" and d["enabled"] is True
    assert d["variables"]["layout"] == {"columns": 2, "theme": "light", "widgets": ["cart"]}
    assert d["reasons"] == []


@pytest.mark.parametrize("attrs, status", [
    (b"[1]", INVALID_ARGUMENT),
    (b'{"a": [1]}', INVALID_ARGUMENT),
    (b'{"a": {"b": 1}}', INVALID_ARGUMENT),
    (b"{", INVALID_JSON),
    (b'{"a": 1} x', INVALID_JSON),
    (b'{"a": "\xff"}', INVALID_UTF8),
    (('{"a": %s}' % nested_json(5000)).encode(), TOO_DEEP),
])
def test_decide_json_bad_attributes(raw, attrs, status):
    out = out_str()
    got = lib.exp_decide_json(raw, b"u2", b"checkout_flow", attrs, 0, byref(out))
    assert got == status, last_error()
    assert out.value is None
    assert last_error()


def test_decide_for_keys_json_all_flags(raw):
    out = out_str()
    assert lib.exp_decide_for_keys_json(raw, b"u2", None, b'{"country": "NL", "age": 30}', 0, byref(out)) == OK
    result = json.loads(take(out))
    assert list(result) == ["checkout_flow", "search_ranking"]
    assert result["search_ranking"]["rule_key"] == "search_beta_rule"


@pytest.mark.parametrize("keys, status", [
    (b'"checkout_flow"', INVALID_ARGUMENT),
    (b"[1, 2]", INVALID_ARGUMENT),
    (b"[", INVALID_JSON),
    (nested_json(1000).encode(), TOO_DEEP),
])
def test_decide_for_keys_json_bad_keys(raw, keys, status):
    out = out_str()
    got = lib.exp_decide_for_keys_json(raw, b"u2", keys, None, 0, byref(out))
    assert got == status, last_error()
    assert last_error()


@pytest.mark.parametrize("names, status, bits", [
    (b"[]", OK, 0),
    (b'["INCLUDE_REASONS"]', OK, 8),
    (b'["DISABLE_DECISION_EVENT", "ENABLED_FLAGS_ONLY", "IGNORE_USER_PROFILE_SERVICE", "INCLUDE_REASONS", '
     b'"EXCLUDE_VARIABLES"]', OK, 31),
    (b'["include_reasons"]', INVALID_OPTION, None),
    (b'["NOPE"]', INVALID_OPTION, None),
    (b"[1]", INVALID_OPTION, None),
    (b"[", INVALID_JSON, None),
    (b'"INCLUDE_REASONS"', INVALID_OPTION, None),
])
def test_decide_options_parse(names, status, bits):
    out = c_uint(777)
    got = lib.exp_decide_options_parse(names, byref(out))
    assert got == status, last_error()
    if bits is not None:
        assert out.value == bits
    else:
        assert out.value == 777
        assert last_error()
    if names == b'["NOPE"]':
        assert "NOPE" in last_error()


@pytest.mark.parametrize("value_json, expected", [
    (b'"premium"', "premium"), (b"42", 42), (b"2.5", 2.5), (b"true", True), (b"null", None),
])
def test_set_user_property_json(raw, value_json, expected):
    assert lib.exp_set_user_property_json(raw, b"u", b"k", value_json) == OK, last_error()
    out = out_str()
    assert lib.exp_get_user_properties_json(raw, b"u", byref(out)) == OK
    assert json.loads(take(out)) == {"k": expected}


@pytest.mark.parametrize("value_json, status", [
    (b"[1]", INVALID_ARGUMENT), (b'{"a": 1}', INVALID_ARGUMENT), (b"nope", INVALID_JSON), (b"", INVALID_JSON),
    (b'"x" y', INVALID_JSON), (b'"\xff"', INVALID_UTF8), (b'"' + b"x" * 70000 + b'"', TOO_LARGE),
])
def test_set_user_property_json_rejects(raw, value_json, status):
    assert lib.exp_set_user_property_json(raw, b"u", b"k", value_json) == status, last_error()
    assert last_error()
    out = out_str()
    assert lib.exp_get_user_properties_json(raw, b"u", byref(out)) == OK
    assert json.loads(take(out)) == {}


# ------------------------------------------------------------------------------------------------
# decide_all buffer protocol, closing, not ready
# ------------------------------------------------------------------------------------------------

def test_decide_all_buffer_too_small(raw):
    count = c_size_t()
    assert lib.exp_flag_count(raw, byref(count)) == OK and count.value == 2
    buf = (ExpDecision * 2)()
    n = c_size_t(99)
    assert lib.exp_decide_all(raw, b"u2", None, 0, 0, buf, 1, byref(n)) == BUFFER_TOO_SMALL
    assert n.value == 2
    assert buf[0].flag_key is None  # nothing filled
    assert lib.exp_decide_all(raw, b"u2", None, 0, 0, buf, 0, byref(n)) == BUFFER_TOO_SMALL
    assert lib.exp_decide_all(raw, b"u2", None, 0, 0, buf, 2, byref(n)) == OK
    assert n.value == 2 and buf[0].flag_key == b"checkout_flow" and buf[1].flag_key == b"search_ranking"
    lib.exp_decisions_release(buf, n)
    assert buf[0].flag_key is None


def test_not_ready_client(raw_idle):
    d = ExpDecision()
    ready = c_int(7)
    assert lib.exp_client_is_ready(raw_idle, byref(ready)) == OK and ready.value == 0
    assert lib.exp_decide(raw_idle, b"u", b"checkout_flow", None, 0, 0, byref(d)) == NOT_READY
    assert lib.exp_flag_count(raw_idle, byref(c_size_t())) == NOT_READY
    assert lib.exp_client_config_json(raw_idle, byref(out_str())) == NOT_READY
    assert lib.exp_track(raw_idle, b"purchase", b"u", None, 0, None) == NOT_READY
    # properties and forced decisions do not need a datafile
    assert lib.exp_set_user_property_json(raw_idle, b"u", b"k", b"1") == OK
    assert lib.exp_set_forced_decision(raw_idle, b"u", b"f", None, b"v") == OK


def test_closed_client(raw):
    assert lib.exp_client_close(raw) == OK
    assert lib.exp_client_close(raw) == OK
    d = ExpDecision()
    ready = c_int()
    assert lib.exp_decide(raw, b"u", b"checkout_flow", None, 0, 0, byref(d)) == CLOSED
    assert "closed" in last_error().lower()
    assert lib.exp_client_start(raw, b"{}", 2) == CLOSED
    assert lib.exp_track(raw, b"purchase", b"u", None, 0, None) == CLOSED
    assert lib.exp_set_user_property_json(raw, b"u", b"k", b"1") == CLOSED
    assert lib.exp_client_set_event_dispatcher(raw, NULL_FN, None) == CLOSED
    status = lib.exp_client_is_ready(raw, byref(ready))
    assert status in (OK, CLOSED)


def test_event_dispatcher_user_data_and_return_value(raw):
    seen = []

    @_native.EXP_EVENT_DISPATCH_FN
    def callback(event_p, user_data):
        event = event_p.contents
        body = ctypes.string_at(event.body, event.body_length)
        assert body == ctypes.string_at(event.body)  # NUL-terminated at body_length
        seen.append((event.url, event.http_verb, json.loads(body), user_data))
        return 1  # a failed dispatch must not fail the decide

    assert lib.exp_client_set_event_dispatcher(raw, callback, 0xABC) == OK
    d = ExpDecision()
    assert lib.exp_decide(raw, b"u2", b"checkout_flow", None, 0, 0, byref(d)) == OK
    lib.exp_decision_release(byref(d))
    assert len(seen) == 1
    url, verb, params, user_data = seen[0]
    assert verb == b"POST" and url.startswith(b"http") and user_data == 0xABC
    assert params["visitors"][0]["visitor_id"] == "u2"
    assert lib.exp_client_set_event_dispatcher(raw, NULL_FN, None) == OK
