"""Bad input at every entry point: None, invalid UTF-8, unencodable str, NUL characters, huge inputs,
attribute values of every type. Programmer errors (a user id that is not text, attributes that are not a
mapping, text that is not UTF-8) raise with their class, code and a meaningful message; the evaluation calls
(decide, decide_all, decide_for_keys, get_variation, activate, track) answer data conditions as the
reference SDK does (an error decision, {}, None, nothing sent) without raising. The client keeps working."""

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

# The evaluation calls: they never raise for data (issue 15).
EVALUATIONS = {"decide", "decide_all", "decide_for_keys", "get_variation", "activate", "track"}
KEY_EVALUATIONS = {"decide flag_key", "get_variation experiment_key", "activate experiment_key", "track event_key"}

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


def taken(name, client, attributes):
    """Runs ATTRIBUTE_CALLS[name]; trigger_experiment's NotTargeted / NotAllocated are answers, not errors."""
    try:
        ATTRIBUTE_CALLS[name](client, attributes)
    except (experiment.NotTargetedError, experiment.NotAllocatedError):
        assert name == "trigger_experiment"


def answers(client, name, call, *args):
    """An evaluation call given data it cannot use answers as the reference: no exception; decide an error
    decision (disabled, no variation), the others {} / None."""
    result = call(client, *args)
    if name.startswith("decide") and not name.startswith("decide_"):
        assert result.enabled is False and result.variation_key is None and len(result.reasons) == 1
    elif name in ("decide_all", "decide_for_keys"):
        assert result == {}
    else:
        assert result is None
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


# Forced variations take any user id too (exp_set/get_forced_variation_n), as optimizely-sdk's do.
NUL_USER_IDS = EVALUATIONS | {"set_forced_variation", "get_forced_variation"}


@pytest.mark.parametrize("name", sorted(set(USER_CALLS) - NUL_USER_IDS))
def test_user_id_with_nul(client, name):
    expect(client, experiment.InvalidArgumentError, -1, r"user_id.*NUL", USER_CALLS[name], "user\x00-1")


@pytest.mark.parametrize("name", sorted(NUL_USER_IDS))
def test_user_id_with_nul_is_a_user_id(client, name):
    USER_CALLS[name](client, "user\x00-1")
    still_works(client)


@pytest.mark.parametrize("name", sorted(set(USER_CALLS) - EVALUATIONS))
def test_user_id_too_long(client, name):
    expect(client, experiment.TooLargeError, -14, r"user|large|long|exceed|limit|1024",
           USER_CALLS[name], "u" * 1025)


@pytest.mark.parametrize("name", sorted(EVALUATIONS))
def test_user_id_too_long_in_an_evaluation(client, name, caplog):
    with caplog.at_level("ERROR", logger="experiment"):
        answers(client, name, USER_CALLS[name], "u" * 1025)
    assert any("1024" in record.getMessage() for record in caplog.records)


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


@pytest.mark.parametrize("name", sorted(set(KEY_CALLS) - NULLABLE_KEYS - KEY_EVALUATIONS))
def test_key_none(client, name):
    expect(client, experiment.InvalidArgumentError, -1, r".", KEY_CALLS[name], None)


@pytest.mark.parametrize("name", sorted(KEY_EVALUATIONS))
def test_key_none_in_an_evaluation(client, name):
    answers(client, name, KEY_CALLS[name], None)


@pytest.mark.parametrize("name", KEY_CALLS)
def test_key_invalid_utf8(client, name):
    expect(client, experiment.InvalidUTF8Error, -13, r"utf-?8", KEY_CALLS[name], b"key-\xc3\x28")


# EXP_MAX_KEY_BYTES names user ids and flag/experiment/event/attribute keys (not variation or rule keys)
LIMITED_KEYS = sorted(k for k in KEY_CALLS if not k.endswith(("variation_key", "rule_key")))


@pytest.mark.parametrize("name", sorted(set(LIMITED_KEYS) - KEY_EVALUATIONS))
def test_key_too_long(client, name):
    expect(client, experiment.TooLargeError, -14, r"large|long|exceed|limit|1024", KEY_CALLS[name], "k" * 5000)


@pytest.mark.parametrize("name", sorted(KEY_EVALUATIONS))
def test_key_too_long_names_nothing(client, name):
    answers(client, name, KEY_CALLS[name], "k" * 5000)


@pytest.mark.parametrize("name", KEY_CALLS)
def test_key_surrogate(client, name):
    expect(client, experiment.InvalidUTF8Error, -13, r"utf-?8", KEY_CALLS[name], "\udfff")


@pytest.mark.parametrize("name, call", [
    ("decide", lambda c: c.decide("u1", "nope_flag")),
    ("decide", lambda c: c.decide("u1", "")),
    ("decide", lambda c: c.decide("u1", "Checkout_Flow")),
    ("get_variation", lambda c: c.get_variation("nope_exp", "u1")),
    ("activate", lambda c: c.activate("", "u1")),
    ("track", lambda c: c.track("nope_event", "u1")),
])
def test_unknown_names_in_evaluations(client, name, call):
    answers(client, name, call)


@pytest.mark.parametrize("call, cls, code, pattern", [
    (lambda c: c.trigger_experiment("u1", "0"), experiment.UnknownExperimentError, -8, r"\b0\b|experiment"),
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
@pytest.mark.parametrize("value", [[1, 2], {"a": 1}, object(), {1}, (1,), 1j, len, 2 ** 63, -2 ** 63 - 1, 10 ** 40,
                                   float("nan"), b"N\xffL", "\ud83d"],
                         ids=["list", "dict", "object", "set", "tuple", "complex", "function", "2**63", "-2**63-1",
                              "10**40", "nan", "invalid-utf8-bytes", "lone-surrogate"])
def test_attribute_of_any_type_is_taken(client, name, value):
    """As the reference: a value of any type is an attribute (exists; every other condition unknown)."""
    taken(name, client, {"country": "NL", "weird_attr": value})
    still_works(client)


@pytest.mark.parametrize("name", ATTRIBUTE_CALLS)
@pytest.mark.parametrize("key", [7, None, (1, 2), b"c\xffountry", "\ud800"], ids=repr)
def test_attribute_key_that_is_not_text_is_left_out(client, name, key):
    taken(name, client, {"country": "NL", key: "x"})
    still_works(client)


@pytest.mark.parametrize("name", ATTRIBUTE_CALLS)
def test_attributes_not_a_dict(client, name):
    err = pytest.raises(experiment.UnsupportedTypeError, ATTRIBUTE_CALLS[name], client, [("country", "NL")]).value
    check_error(err, experiment.UnsupportedTypeError, -1, r"attributes.*dict")


@pytest.mark.parametrize("name", sorted(set(ATTRIBUTE_CALLS) - EVALUATIONS))
def test_attribute_string_too_long(client, name):
    expect(client, experiment.TooLargeError, -14, r"large|long|exceed|limit|65536",
           ATTRIBUTE_CALLS[name], {"country": "N" * 65537})


@pytest.mark.parametrize("name", sorted(set(ATTRIBUTE_CALLS) - EVALUATIONS))
def test_attribute_key_too_long(client, name):
    expect(client, experiment.TooLargeError, -14, r"large|long|exceed|limit|1024",
           ATTRIBUTE_CALLS[name], {"k" * 1025: "x"})


@pytest.mark.parametrize("name", sorted(set(ATTRIBUTE_CALLS) - EVALUATIONS))
def test_too_many_attributes(client, name):
    attrs = {"a%d" % i: i for i in range(1025)}
    expect(client, experiment.TooLargeError, -14, r"attribute|large|many|exceed|limit|1024",
           ATTRIBUTE_CALLS[name], attrs)


@pytest.mark.parametrize("name", sorted(EVALUATIONS))
@pytest.mark.parametrize("attributes", [{"country": "N" * 65537}, {"k" * 1025: "x"},
                                        {"a%d" % i: i for i in range(1025)}],
                         ids=["string", "key", "count"])
def test_attributes_past_the_limits_in_an_evaluation(client, name, attributes, caplog):
    """Past EXP_MAX_STRING_BYTES / EXP_MAX_KEY_BYTES / EXP_MAX_ATTRIBUTES the library decides nothing: the
    evaluation calls answer as for any data they cannot use, and log the library's message."""
    with caplog.at_level("ERROR", logger="experiment"):
        answers(client, name, ATTRIBUTE_CALLS[name], attributes)
    assert any(("65536" in r.getMessage() or "1024" in r.getMessage()) for r in caplog.records)


def test_attribute_value_with_nul(client):
    expect(client, experiment.InvalidArgumentError, -1, r"NUL", ATTRIBUTE_CALLS["trigger_experiment"],
           {"country": "N\x00L"})
    assert client.decide("u2", "checkout_flow", dict(U2_ATTRS, country="N\x00L")).enabled in (True, False)


def test_all_errors_derive_from_error():
    for name in dir(experiment):
        obj = getattr(experiment, name)
        if isinstance(obj, type) and name.endswith("Error") and obj is not experiment.Error:
            assert issubclass(obj, experiment.Error), name
            err = obj("message")
            assert err.code < 0 and err.message == "message"
