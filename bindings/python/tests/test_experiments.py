"""get_variation, activate, trigger_experiment, forced variations and forced decisions."""

from __future__ import annotations

import pytest

import experiment
from conftest import U2_ATTRS, U3_ATTRS, raises


# ------------------------------------------------------------------------------------------------
# get_variation / activate
# ------------------------------------------------------------------------------------------------

def test_get_variation(client, dispatcher):
    assert client.get_variation("checkout_test", "u2", U2_ATTRS) == "control"
    assert client.get_variation("checkout_test", "user-4") == "treatment"
    assert client.get_variation("legacy_ab", "u2", U2_ATTRS) == "green"
    assert client.get_variation("legacy_ab", "u2", {"beta": True}) == "green"   # legacy audience 40003
    assert client.get_variation("search_test", "u3", U3_ATTRS) == "classic"
    assert dispatcher.events == []  # get_variation never sends events


def test_get_variation_none_cases(client):
    assert client.get_variation("checkout_test", "u1") is None        # outside traffic
    assert client.get_variation("legacy_ab", "u2") is None            # not targeted
    assert client.get_variation("paused_test", "u2", U2_ATTRS) is None  # not running
    assert client.get_variation("search_test", "u1") is None          # audience


def test_get_variation_errors(client, idle_client):
    """As the reference: None (and a log message) for an unknown experiment or no datafile yet."""
    assert client.get_variation("no_such_experiment", "u1") is None
    assert client.get_variation("60001", "u1") is None  # an id, not a key
    assert client.get_variation(None, "u1") is None
    assert idle_client.get_variation("checkout_test", "u1") is None
    raises(experiment.InvalidArgumentError, -1, r"user", client.get_variation, "checkout_test", None)
    assert client.get_variation("checkout_test", "u2", U2_ATTRS) == "control"


def test_activate_sends_impression(client, dispatcher):
    assert client.activate("checkout_test", "u2", U2_ATTRS) == "control"
    assert len(dispatcher.events) == 1
    params = dispatcher.events[0].params
    decision = params["visitors"][0]["snapshots"][0]["decisions"][0]
    assert (decision["campaign_id"], decision["experiment_id"], decision["variation_id"]) == \
        ("90001", "60001", "61001")
    assert params["visitors"][0]["visitor_id"] == "u2"


def test_activate_without_variation_sends_nothing(client, dispatcher):
    assert client.activate("checkout_test", "u1") is None
    assert client.activate("paused_test", "u1") is None
    assert dispatcher.events == []


def test_activate_errors(client, idle_client, dispatcher):
    assert client.activate("nope", "u1") is None
    raises(experiment.InvalidArgumentError, -1, r"user", client.activate, "checkout_test", None)
    assert idle_client.activate("checkout_test", "u1") is None
    assert dispatcher.events == []
    assert client.activate("checkout_test", "u2", U2_ATTRS) == "control"


# ------------------------------------------------------------------------------------------------
# trigger_experiment
# ------------------------------------------------------------------------------------------------

def test_trigger_experiment(client, dispatcher):
    assert client.trigger_experiment("u2", "60004", U2_ATTRS) == "64002"
    assert client.trigger_experiment("u2", "60001", U2_ATTRS) == "61001"
    assert len(dispatcher.impressions()) == 2
    decision = dispatcher.impressions()[0]["visitors"][0]["snapshots"][0]["decisions"][0]
    assert (decision["experiment_id"], decision["variation_id"]) == ("60004", "64002")


def test_trigger_experiment_is_repeatable(client):
    results = {client.trigger_experiment("u2", "60004", U2_ATTRS) for _ in range(10)}
    assert results == {"64002"}


def test_trigger_experiment_uses_stored_properties(client):
    client.set_user_property("u2", "country", "NL")
    client.set_user_property("u2", "age", 30)
    assert client.trigger_experiment("u2", "60004") == "64002"


def test_trigger_experiment_not_targeted(client, dispatcher):
    err = raises(experiment.NotTargetedError, -11, r"u2|60004|legacy_ab|audience|target",
                 client.trigger_experiment, "u2", "60004")
    assert err.status == "EXP_ERR_NOT_TARGETED"
    assert dispatcher.events == []


def test_trigger_experiment_not_allocated(client, dispatcher):
    raises(experiment.NotAllocatedError, -12, r"60003|paused_test|running|paused",
           client.trigger_experiment, "u2", "60003", U2_ATTRS)
    raises(experiment.NotAllocatedError, -12, r"u1|60001|checkout_test|traffic|allocat",
           client.trigger_experiment, "u1", "60001")
    assert dispatcher.events == []


def test_trigger_experiment_unknown(client, idle_client):
    raises(experiment.UnknownExperimentError, -8, r"99999", client.trigger_experiment, "u2", "99999")
    raises(experiment.UnknownExperimentError, -8, r"checkout_test", client.trigger_experiment, "u2",
           "checkout_test")  # a key, not an id
    raises(experiment.InvalidArgumentError, -1, r"experiment", client.trigger_experiment, "u2", None)
    raises(experiment.NotReadyError, -6, r".", idle_client.trigger_experiment, "u2", "60004")
    assert client.trigger_experiment("u2", "60004", U2_ATTRS) == "64002"


def test_trigger_experiment_error_classes():
    assert issubclass(experiment.NotTargetedError, experiment.Error)
    assert issubclass(experiment.NotAllocatedError, experiment.Error)


# ------------------------------------------------------------------------------------------------
# forced variations
# ------------------------------------------------------------------------------------------------

def test_forced_variation(client):
    assert client.get_forced_variation("checkout_test", "u1") is None
    client.set_forced_variation("checkout_test", "u1", "treatment")
    assert client.get_forced_variation("checkout_test", "u1") == "treatment"
    assert client.get_variation("checkout_test", "u1") == "treatment"
    d = client.decide("u1", "checkout_flow")
    assert (d.variation_key, d.rule_key, d.enabled) == ("treatment", "checkout_test", True)
    assert client.trigger_experiment("u1", "60001") == "61002"
    # other users unaffected
    assert client.get_variation("checkout_test", "u2", U2_ATTRS) == "control"
    client.set_forced_variation("checkout_test", "u1", None)
    assert client.get_forced_variation("checkout_test", "u1") is None
    assert client.get_variation("checkout_test", "u1") is None


def test_forced_variation_beats_whitelist(client):
    client.set_forced_variation("checkout_test", "forced_user", "control")
    assert client.get_variation("checkout_test", "forced_user") == "control"


def test_forced_variation_does_not_beat_running_status(client):
    client.set_forced_variation("paused_test", "u1", "a")
    assert client.get_forced_variation("paused_test", "u1") == "a"
    assert client.get_variation("paused_test", "u1") is None


def test_forced_variation_errors(client, idle_client):
    raises(experiment.UnknownVariationError, -10, r"nope", client.set_forced_variation, "checkout_test", "u1", "nope")
    raises(experiment.UnknownVariationError, -10, r"on_nl", client.set_forced_variation, "checkout_test", "u1",
           "on_nl")  # a variation of another rule
    raises(experiment.UnknownExperimentError, -8, r"nope_exp", client.set_forced_variation, "nope_exp", "u1",
           "control")
    raises(experiment.InvalidArgumentError, -1, r"experiment", client.set_forced_variation, None, "u1", "control")
    raises(experiment.InvalidArgumentError, -1, r"user", client.get_forced_variation, "checkout_test", None)
    raises(experiment.NotReadyError, -6, r".", idle_client.set_forced_variation, "checkout_test", "u1", "control")
    assert client.get_forced_variation("checkout_test", "u1") is None
    assert client.get_variation("checkout_test", "u1") is None


# ------------------------------------------------------------------------------------------------
# forced decisions
# ------------------------------------------------------------------------------------------------

def test_forced_decision_for_flag(client):
    client.set_forced_decision("u1", "checkout_flow", "treatment")
    d = client.decide("u1", "checkout_flow")
    assert (d.enabled, d.variation_key, d.rule_key) == (True, "treatment", None)
    assert d.variables["headline"] == "Big sale"
    client.set_forced_decision("u1", "checkout_flow", None)
    assert client.decide("u1", "checkout_flow").variation_key == "off"


def test_forced_decision_for_rule(client):
    client.set_forced_decision("u1", "checkout_flow", "treatment", rule_key="checkout_test")
    d = client.decide("u1", "checkout_flow")
    assert (d.enabled, d.variation_key, d.rule_key) == (True, "treatment", "checkout_test")
    client.remove_forced_decisions("u1")
    client.set_forced_decision("u1", "checkout_flow", "on_nl", rule_key="checkout_nl_rule")
    d = client.decide("u1", "checkout_flow")
    assert (d.enabled, d.variation_key, d.rule_key) == (True, "on_nl", "checkout_nl_rule")
    assert d.variables["headline"] == "Hallo"


def test_forced_decision_with_unknown_variation_is_ignored(client):
    client.set_forced_decision("u1", "checkout_flow", "nope")
    d = client.decide("u1", "checkout_flow")
    assert (d.variation_key, d.rule_key) == ("off", "81002")


def test_forced_decision_is_per_user(client):
    client.set_forced_decision("u1", "checkout_flow", "treatment")
    assert client.decide("u2", "checkout_flow", U2_ATTRS).variation_key == "control"


def test_remove_forced_decisions(client):
    client.set_forced_decision("u1", "checkout_flow", "treatment")
    client.set_forced_decision("u1", "search_ranking", "neural")
    client.remove_forced_decisions("u1")
    assert client.decide("u1", "checkout_flow").variation_key == "off"
    assert client.decide("u1", "search_ranking").variation_key == "on"
    client.remove_forced_decisions("nobody")  # nothing to remove is fine


def test_forced_decision_errors(client):
    raises(experiment.InvalidArgumentError, -1, r"user", client.set_forced_decision, None, "checkout_flow", "x")
    raises(experiment.InvalidArgumentError, -1, r"flag", client.set_forced_decision, "u1", None, "x")
    raises(experiment.InvalidArgumentError, -1, r"user", client.remove_forced_decisions, None)
    raises(experiment.InvalidUTF8Error, -13, r"utf-?8", client.set_forced_decision, "u1", "checkout_flow", b"\xff")
    raises(experiment.InvalidUTF8Error, -13, r"utf-?8", client.set_forced_decision, "u1", "checkout_flow", "x",
           b"\xfe")
    assert client.decide("u1", "checkout_flow").variation_key == "off"


def test_forced_decision_works_before_start(idle_client, datafile_text):
    idle_client.set_forced_decision("u1", "checkout_flow", "treatment")
    idle_client.start(datafile_text)
    assert idle_client.decide("u1", "checkout_flow").variation_key == "treatment"
