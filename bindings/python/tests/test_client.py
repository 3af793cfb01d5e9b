"""Client lifecycle: creation and options, start / replace datafile, ready, config, close, context manager."""

from __future__ import annotations

import gc
import json

import pytest

import experiment
from experiment import DecideOption
from conftest import SDK_NOT_READY, TRAILING, U2_ATTRS, assert_error_decision, check_error, raises


def test_create_with_datafile_is_ready(datafile_text):
    c = experiment.Client(datafile=datafile_text)
    try:
        assert c.ready is True
        assert c.wait_ready(0) is True
        assert c.decide("u2", "checkout_flow", U2_ATTRS).variation_key == "control"
    finally:
        c.close()


def test_create_with_bytes_datafile(datafile_text):
    with experiment.Client("demo", datafile_text.encode("utf-8")) as c:
        assert c.ready


def test_create_without_datafile_is_not_ready_until_started(datafile_text):
    with experiment.Client(sdk_key="demo") as c:
        assert c.ready is False
        assert c.wait_ready(0.05) is False
        assert_error_decision(c.decide("u1", "checkout_flow"), "checkout_flow", SDK_NOT_READY)
        raises(experiment.NotReadyError, -6, r"ready|datafile|start", lambda: c.config)
        c.start(datafile_text)
        assert c.ready is True
        assert c.decide("u2", "checkout_flow", U2_ATTRS).variation_key == "control"


def test_config(client):
    config = client.config
    assert config["revision"] == "42"
    assert config["project_id"] == "20001"
    assert config["account_id"] == "10001"
    assert config["environment_key"] == "production"
    assert config["flags"] == ["checkout_flow", "search_ranking"]
    assert sorted(config["experiments"]) == ["checkout_test", "legacy_ab", "paused_test", "search_test"]
    assert sorted(config["events"]) == ["purchase", "signup"]


def test_all_options_accepted(datafile_text):
    with experiment.Client(sdk_key="k", datafile=datafile_text,
                           default_decide_options=["INCLUDE_REASONS", DecideOption.EXCLUDE_VARIABLES],
                           user_store_capacity=5) as c:
        d = c.decide("u2", "checkout_flow", U2_ATTRS)
        assert d.reasons, "default INCLUDE_REASONS not applied"
        assert d.variables == {}, "default EXCLUDE_VARIABLES not applied"


def test_default_decide_options_as_combined_flag(datafile_text):
    with experiment.Client(datafile=datafile_text,
                           default_decide_options=DecideOption.INCLUDE_REASONS | DecideOption.EXCLUDE_VARIABLES) as c:
        d = c.decide("u2", "checkout_flow", U2_ATTRS)
        assert d.reasons and d.variables == {}


def test_unknown_option_keyword_is_rejected_by_name():
    # Options pass through to the library under their C names; a typo is refused, never ignored.
    with pytest.raises(experiment.InvalidOptionError, match="polling_intervall"):
        experiment.Client(polling_intervall=5)
    with pytest.raises(TypeError):
        experiment.Client("k", "{}", "extra positional")


@pytest.mark.parametrize("kwargs, pattern", [
    ({"sdk_key": 123}, r"sdk_key"),
    ({"default_decide_options": ["NOT_AN_OPTION"]}, r"NOT_AN_OPTION"),
    ({"default_decide_options": [7]}, r"default_decide_options|option"),
    ({"user_store_capacity": "many"}, r"user_store_capacity"),
    ({"user_store_capacity": -1}, r"user_store_capacity"),
    ({"user_store_capacity": 1.5}, r"user_store_capacity"),
])
def test_invalid_option_values_are_rejected_by_the_library(kwargs, pattern):
    raises(experiment.InvalidOptionError, -3, pattern, experiment.Client, **kwargs)


def test_unserializable_option_value():
    err = raises(experiment.InvalidOptionError, -3, r"user_store_capacity|serializ",
                 experiment.Client, user_store_capacity=object())
    assert isinstance(err, ValueError)


def test_event_dispatcher_without_dispatch_event_is_type_error():
    with pytest.raises(TypeError, match="dispatch_event"):
        experiment.Client(event_dispatcher=object())


def test_bad_datafile_in_constructor_raises_and_leaks_nothing():
    raises(experiment.InvalidJSONError, -2, r".", experiment.Client, datafile="{not json")
    raises(experiment.UnsupportedTypeError, -1, r"datafile.*int", experiment.Client, datafile=12)


def test_start_replaces_datafile(client, datafile_dict):
    assert client.config["revision"] == "42"
    datafile_dict["revision"] = "43"
    # make checkout_test send everyone to treatment
    checkout = datafile_dict["experiments"][0]
    checkout["trafficAllocation"] = [{"entityId": "61002", "endOfRange": 10000}]
    client.start(json.dumps(datafile_dict))
    assert client.config["revision"] == "43"
    assert client.decide("u2", "checkout_flow", U2_ATTRS).variation_key == "treatment"


def test_rejected_datafile_keeps_previous_config(client, datafile_dict):
    before = client.decide("u2", "checkout_flow", U2_ATTRS)
    bad = dict(datafile_dict, version="5", revision="99")
    raises(experiment.UnsupportedVersionError, -5, r"version", client.start, json.dumps(bad))
    raises(experiment.InvalidJSONError, -2, r".", client.start, "{")
    raises(experiment.InvalidJSONError, -2, TRAILING,
           client.start, json.dumps(datafile_dict) + "garbage")
    assert client.ready
    assert client.config["revision"] == "42"
    assert client.decide("u2", "checkout_flow", U2_ATTRS) == before


def test_close_is_idempotent_and_everything_raises_closed_afterwards(client, datafile_text):
    client.close()
    client.close()
    assert client.closed
    calls = [
        lambda: client.decide("u1", "checkout_flow"),
        lambda: client.decide_all("u1"),
        lambda: client.decide_for_keys("u1", ["checkout_flow"]),
        lambda: client.get_variation("checkout_test", "u1"),
        lambda: client.activate("checkout_test", "u1"),
        lambda: client.trigger_experiment("u1", "60001"),
        lambda: client.track("purchase", "u1"),
        lambda: client.set_user_property("u1", "plan", "premium"),
        lambda: client.remove_user_property("u1", "plan"),
        lambda: client.clear_user_properties("u1"),
        lambda: client.get_user_properties("u1"),
        lambda: client.set_forced_variation("checkout_test", "u1", "control"),
        lambda: client.get_forced_variation("checkout_test", "u1"),
        lambda: client.set_forced_decision("u1", "checkout_flow", "control"),
        lambda: client.remove_forced_decisions("u1"),
        lambda: client.start(datafile_text),
        lambda: client.ready,
        lambda: client.config,
        lambda: client.set_event_dispatcher(None),
        lambda: client.__enter__(),
    ]
    for call in calls:
        with pytest.raises(experiment.ClosedError) as info:
            call()
        check_error(info.value, experiment.ClosedError, -17, r"closed")


def test_context_manager_closes(datafile_text):
    with experiment.Client(datafile=datafile_text) as c:
        assert c.decide("u2", "checkout_flow", U2_ATTRS).enabled
    assert c.closed
    with pytest.raises(experiment.ClosedError):
        c.decide("u2", "checkout_flow", U2_ATTRS)


def test_context_manager_closes_on_exception(datafile_text):
    with pytest.raises(RuntimeError):
        with experiment.Client(datafile=datafile_text) as c:
            raise RuntimeError("boom")
    assert c.closed


def test_many_clients_created_and_dropped_without_close(datafile_text):
    # handles not closed explicitly are freed when the Client is garbage collected
    for _ in range(50):
        c = experiment.Client(datafile=datafile_text)
        c.decide("u1", "checkout_flow")
        del c
    gc.collect()


def test_several_clients_are_independent(datafile_text, datafile_dict):
    datafile_dict["revision"] = "7"
    with experiment.Client(sdk_key="a", datafile=datafile_text) as a, \
            experiment.Client(sdk_key="b", datafile=json.dumps(datafile_dict)) as b:
        a.set_user_property("u", "plan", "premium")
        assert b.get_user_properties("u") == {}
        assert a.config["revision"] == "42" and b.config["revision"] == "7"
        a.close()
        assert b.decide("u2", "checkout_flow", U2_ATTRS).variation_key == "control"


def test_validate_datafile(datafile_text):
    assert experiment.validate_datafile(datafile_text) is None
    assert experiment.validate_datafile(datafile_text.encode()) is None
    raises(experiment.InvalidJSONError, -2, r".", experiment.validate_datafile, "{")
    raises(experiment.InvalidArgumentError, -1, r".", experiment.validate_datafile, None)


def test_repr(client):
    assert "experiment.Client" in repr(client)
    client.close()
    assert "closed" in repr(client)


def test_close_frees_the_native_handle_immediately(datafile_text):
    import weakref
    c = experiment.Client(datafile=datafile_text)
    handle_ref = weakref.ref(c._h)  # the _Handle frees itself (exp_client_free) when its last reference goes
    c.decide("u1", "checkout_flow")
    c.close()
    assert handle_ref() is None


def test_handle_outlives_close_while_in_use(datafile_text):
    """close() from another thread while a call is in flight: the in-flight call holds the handle, so
    exp_client_free waits for it (simulated by holding a reference the way a call does)."""
    import weakref
    c = experiment.Client(datafile=datafile_text)
    in_flight = c._h
    handle_ref = weakref.ref(in_flight)
    c.close()
    assert handle_ref() is not None and in_flight.value  # not freed yet
    from experiment._native import ExpDecision, lib
    from ctypes import byref
    d = ExpDecision()
    assert lib.exp_decide(in_flight, b"u1", b"checkout_flow", None, 0, 0, byref(d)) == -17  # closed, not freed
    del in_flight
    assert handle_ref() is None
