"""Bad input at every entry point: None, invalid UTF-8, unencodable str, NUL characters, huge inputs,
unsupported attribute types. Each error has its class, code and a meaningful message, and the client
keeps working afterwards."""

from __future__ import annotations

import pytest

import experiment
from conftest import U2_ATTRS, check_error

# name -> call(client, user_id)
USER_CALLS = {
    "decide": lambda c, u: c.decide(u, "checkout_flow"),
    "decide_all": lambda c, u: c.decide_all(u),
    "decide_for_keys": lambda c, u: c.decide_for_keys(u, ["checkout_flow"]),
    "get_variation": lambda c, u: c.get_variation("checkout_test", u),
    "activate": lambda c, u: c.activate("checkout_test", u),
    "trigger_experiment": lambda c, u: c.trigger_experiment(u, "60001"),
    "track": lambda c, u: c.track("purchase", u),
    "set_user_property": lambda c, u: c.set_user_property(u, "plan", "premium"),
    "remove_user_property": lambda c, u: c.remove_user_property(u, "plan"),
    "clear_user_properties": lambda c, u: c.clear_user_properties(u),
    "get_user_properties": lambda c, u: c.get_user_properties(u),
    "set_forced_variation": lambda c, u: c.set_forced_variation("checkout_test", u, "control"),
    "get_forced_variation": lambda c, u: c.get_forced_variation("checkout_test", u),
    "set_forced_decision": lambda c, u: c.set_forced_decision(u, "checkout_flow", "control"),
    "remove_forced_decisions": lambda c, u: c.remove_forced_decisions(u),
}

# name -> call(client, key) for the key argument of each call
KEY_CALLS = {
    "decide flag_key": lambda c, k: c.decide("u1", k),
    "get_variation experiment_key": lambda c, k: c.get_variation(k, "u1"),
    "activate experiment_key": lambda c, k: c.activate(k, "u1"),
    "trigger_experiment experiment_id": lambda c, k: c.trigger_experiment("u1", k),
    "track event_key": lambda c, k: c.track(k, "u1"),
    "set_user_property key": lambda c, k: c.set_user_property("u1", k, 1),
    "remove_user_property key": lambda c, k: c.remove_user_property("u1", k),
    "set_forced_variation experiment_key": lambda c, k: c.set_forced_variation(k, "u1", "control"),
    "set_forced_variation variation_key": lambda c, k: c.set_forced_variation("checkout_test", "u1", k),
    "get_forced_variation experiment_key": lambda c, k: c.get_forced_variation(k, "u1"),
    "set_forced_decision flag_key": lambda c, k: c.set_forced_decision("u1", k, "control"),
    "set_forced_decision variation_key": lambda c, k: c.set_forced_decision("u1", "checkout_flow", k),
    "set_forced_decision rule_key": lambda c, k: c.set_forced_decision("u1", "checkout_flow", "control", k),
}

# name -> call(client, attributes)
ATTRIBUTE_CALLS = {
    "decide": lambda c, a: c.decide("u1", "checkout_flow", a),
    "decide_all": lambda c, a: c.decide_all("u1", a),
    "decide_for_keys": lambda c, a: c.decide_for_keys("u1", ["checkout_flow"], a),
    "get_variation": lambda c, a: c.get_variation("checkout_test", "u1", a),
    "activate": lambda c, a: c.activate("checkout_test", "u1", a),
    "trigger_experiment": lambda c, a: c.trigger_experiment("u2", "60004", a),
    "track": lambda c, a: c.track("purchase", "u1", a),
}

NULLABLE_KEYS = {"set_forced_variation variation_key", "set_forced_decision variation_key",
                 "set_forced_decision rule_key"}


def still_works(client):
    assert client.decide("u2", "checkout_flow", U2_ATTRS).variation_key == "control"
    assert client.get_variation("checkout_test", "u2", U2_ATTRS) == "control"


def expect(client, cls, code, pattern, call, *args):
    with pytest.raises(cls) as info:
        call(client, *args)
    check_error(info.value, cls, code, pattern)
    still_works(client)


@pytest.mark.parametrize("name", USER_CALLS)
def test_user_id_none(client, name):
    expect(client, experiment.InvalidArgumentError, -1, r"user", USER_CALLS[name], None)


@pytest.mark.parametrize("name", USER_CALLS)
def test_user_id_invalid_utf8_bytes(client, name):
    expect(client, experiment.InvalidUTF8Error, -13, r"utf-?8", USER_CALLS[name], b"user-\xff\xfe")


@pytest.mark.parametrize("name", USER_CALLS)
def test_user_id_truncated_utf8_sequence(client, name):
    expect(client, experiment.InvalidUTF8Error, -13, r"utf-?8", USER_CALLS[name], "naïve".encode()[:3])


@pytest.mark.parametrize("name", USER_CALLS)
def test_user_id_surrogate_in_str(client, name):
    err = pytest.raises(experiment.InvalidUTF8Error, USER_CALLS[name], client, "user-\ud800").value
    check_error(err, experiment.InvalidUTF8Error, -13, r"user_id.*utf-?8")
    assert isinstance(err, ValueError)
    still_works(client)


@pytest.mark.parametrize("name", USER_CALLS)
def test_user_id_with_nul(client, name):
    expect(client, experiment.InvalidArgumentError, -1, r"user_id.*NUL", USER_CALLS[name], "user\x00-1")


@pytest.mark.parametrize("name", USER_CALLS)
def test_user_id_too_long(client, name):
    expect(client, experiment.TooLargeError, -14, r"user|large|long|exceed|limit|1024",
           USER_CALLS[name], "u" * 1025)


@pytest.mark.parametrize("name", USER_CALLS)
def test_user_id_wrong_type(client, name):
    err = pytest.raises(experiment.UnsupportedTypeError, USER_CALLS[name], client, 42).value
    check_error(err, experiment.UnsupportedTypeError, -1, r"user_id.*int")
    assert isinstance(err, TypeError)


@pytest.mark.parametrize("name", USER_CALLS)
def test_user_id_at_limit_is_fine(client, name):
    try:
        USER_CALLS[name](client, "u" * 1024)
    except (experiment.NotAllocatedError, experiment.NotTargetedError):
        pass  # trigger_experiment's legitimate outcomes


@pytest.mark.parametrize("name", sorted(set(KEY_CALLS) - NULLABLE_KEYS))
def test_key_none(client, name):
    expect(client, experiment.InvalidArgumentError, -1, r".", KEY_CALLS[name], None)


@pytest.mark.parametrize("name", KEY_CALLS)
def test_key_invalid_utf8(client, name):
    expect(client, experiment.InvalidUTF8Error, -13, r"utf-?8", KEY_CALLS[name], b"key-\xc3\x28")


# EXP_MAX_KEY_BYTES names user ids and flag/experiment/event/attribute keys (not variation or rule keys)
LIMITED_KEYS = sorted(k for k in KEY_CALLS if not k.endswith(("variation_key", "rule_key")))


@pytest.mark.parametrize("name", LIMITED_KEYS)
def test_key_too_long(client, name):
    expect(client, experiment.TooLargeError, -14, r"large|long|exceed|limit|1024", KEY_CALLS[name], "k" * 5000)


@pytest.mark.parametrize("name", KEY_CALLS)
def test_key_surrogate(client, name):
    expect(client, experiment.InvalidUTF8Error, -13, r"utf-?8", KEY_CALLS[name], "\udfff")


@pytest.mark.parametrize("call, cls, code, pattern", [
    (lambda c: c.decide("u1", "nope_flag"), experiment.UnknownFlagError, -7, r"nope_flag"),
    (lambda c: c.decide("u1", ""), experiment.UnknownFlagError, -7, r"flag"),
    (lambda c: c.decide("u1", "Checkout_Flow"), experiment.UnknownFlagError, -7, r"Checkout_Flow"),
    (lambda c: c.get_variation("nope_exp", "u1"), experiment.UnknownExperimentError, -8, r"nope_exp"),
    (lambda c: c.activate("", "u1"), experiment.UnknownExperimentError, -8, r"experiment"),
    (lambda c: c.trigger_experiment("u1", "0"), experiment.UnknownExperimentError, -8, r"\b0\b|experiment"),
    (lambda c: c.track("nope_event", "u1"), experiment.UnknownEventError, -9, r"nope_event"),
    (lambda c: c.set_forced_variation("checkout_test", "u1", "nope_var"), experiment.UnknownVariationError, -10,
     r"nope_var"),
])
def test_unknown_names(client, call, cls, code, pattern):
    with pytest.raises(cls) as info:
        call(client)
    check_error(info.value, cls, code, pattern)
    assert isinstance(info.value, KeyError)
    still_works(client)


@pytest.mark.parametrize("name", ATTRIBUTE_CALLS)
@pytest.mark.parametrize("value", [[1, 2], {"a": 1}, object(), {1}, (1,), 1j, len],
                         ids=["list", "dict", "object", "set", "tuple", "complex", "function"])
def test_attribute_of_unsupported_type(client, name, value):
    err = pytest.raises(experiment.UnsupportedTypeError, ATTRIBUTE_CALLS[name], client,
                        {"country": "NL", "weird_attr": value}).value
    check_error(err, experiment.UnsupportedTypeError, -1, r"'weird_attr'.*unsupported value type")
    assert isinstance(err, TypeError)
    still_works(client)


@pytest.mark.parametrize("name", ATTRIBUTE_CALLS)
def test_attribute_int_out_of_range(client, name):
    err = pytest.raises(experiment.InvalidArgumentError, ATTRIBUTE_CALLS[name], client, {"age": 2 ** 63}).value
    check_error(err, experiment.InvalidArgumentError, -1, r"'age'.*64")
    assert isinstance(err, ValueError)
    pytest.raises(ValueError, ATTRIBUTE_CALLS[name], client, {"age": -2 ** 63 - 1})
    still_works(client)


@pytest.mark.parametrize("name", ATTRIBUTE_CALLS)
def test_attribute_key_of_unsupported_type(client, name):
    err = pytest.raises(experiment.UnsupportedTypeError, ATTRIBUTE_CALLS[name], client, {7: "x"}).value
    check_error(err, experiment.UnsupportedTypeError, -1, r"7")


@pytest.mark.parametrize("name", ATTRIBUTE_CALLS)
def test_attributes_not_a_dict(client, name):
    err = pytest.raises(experiment.UnsupportedTypeError, ATTRIBUTE_CALLS[name], client, [("country", "NL")]).value
    check_error(err, experiment.UnsupportedTypeError, -1, r"attributes.*dict")


@pytest.mark.parametrize("name", ATTRIBUTE_CALLS)
def test_attribute_invalid_utf8(client, name):
    expect(client, experiment.InvalidUTF8Error, -13, r"utf-?8", ATTRIBUTE_CALLS[name], {"country": b"N\xffL"})
    expect(client, experiment.InvalidUTF8Error, -13, r"utf-?8", ATTRIBUTE_CALLS[name], {b"c\xffountry": "NL"})
    expect(client, experiment.InvalidUTF8Error, -13, r"utf-?8", ATTRIBUTE_CALLS[name], {"country": "\ud83d"})


@pytest.mark.parametrize("name", ATTRIBUTE_CALLS)
def test_attribute_string_too_long(client, name):
    expect(client, experiment.TooLargeError, -14, r"large|long|exceed|limit|65536",
           ATTRIBUTE_CALLS[name], {"country": "N" * 65537})


@pytest.mark.parametrize("name", ATTRIBUTE_CALLS)
def test_attribute_key_too_long(client, name):
    expect(client, experiment.TooLargeError, -14, r"large|long|exceed|limit|1024",
           ATTRIBUTE_CALLS[name], {"k" * 1025: "x"})


@pytest.mark.parametrize("name", ATTRIBUTE_CALLS)
def test_too_many_attributes(client, name):
    attrs = {"a%d" % i: i for i in range(1025)}
    expect(client, experiment.TooLargeError, -14, r"attribute|large|many|exceed|limit|1024",
           ATTRIBUTE_CALLS[name], attrs)


def test_attribute_string_too_large(client):
    attrs = {"a": "x" * 70000}  # over EXP_MAX_STRING_BYTES
    expect(client, experiment.TooLargeError, -14, r"longer than 65536 bytes",
           ATTRIBUTE_CALLS["decide_for_keys"], attrs)


def test_attribute_value_with_nul(client):
    expect(client, experiment.InvalidArgumentError, -1, r"NUL", ATTRIBUTE_CALLS["decide"], {"country": "N\x00L"})


def test_all_errors_derive_from_error():
    for name in dir(experiment):
        obj = getattr(experiment, name)
        if isinstance(obj, type) and name.endswith("Error") and obj is not experiment.Error:
            assert issubclass(obj, experiment.Error), name
            err = obj("message")
            assert err.code < 0 and err.message == "message"
