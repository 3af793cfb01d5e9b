"""decide / decide_all / decide_for_keys: happy paths, variables, reasons, options."""

from __future__ import annotations

import json
import math

import pytest

import experiment
from experiment import DecideOption, Decision
from conftest import U2_ATTRS, U3_ATTRS, raises

CHECKOUT_CONTROL_VARS = {"show_banner": False, "max_items": 10, "discount": 0.0, "headline": "Welcome",
                         "layout": {"columns": 2, "theme": "light", "widgets": ["cart"]}}
CHECKOUT_TREATMENT_VARS = {"show_banner": True, "max_items": 25, "discount": 0.15, "headline": "Big sale",
                           "layout": {"columns": 3, "theme": "dark", "widgets": ["cart", "promo"]}}
SEARCH_DEFAULT_VARS = {"algorithm": "bm25", "boost": 1.0, "page_size": 20}


def test_decide_experiment_rule(client):
    d = client.decide("u2", "checkout_flow", U2_ATTRS)
    assert isinstance(d, Decision)
    assert d == Decision("checkout_flow", True, "control", "checkout_test", CHECKOUT_CONTROL_VARS, [])


def test_decide_treatment_with_variables_of_every_type(client):
    d = client.decide("u3", "checkout_flow", U3_ATTRS)
    assert (d.enabled, d.variation_key, d.rule_key) == (True, "treatment", "checkout_test")
    assert d.variables == CHECKOUT_TREATMENT_VARS
    assert type(d.variables["show_banner"]) is bool
    assert type(d.variables["max_items"]) is int
    assert type(d.variables["discount"]) is float
    assert type(d.variables["headline"]) is str
    assert type(d.variables["layout"]) is dict


def test_decide_everyone_else_rule(client):
    d = client.decide("u1", "checkout_flow")
    assert (d.enabled, d.variation_key, d.rule_key) == (False, "off", "81002")
    assert d.variables == CHECKOUT_CONTROL_VARS  # defaults when the variation is disabled


def test_decide_targeted_delivery_rule(client):
    d = client.decide("u2", "search_ranking", U2_ATTRS)
    assert (d.enabled, d.variation_key, d.rule_key) == (True, "beta_on", "search_beta_rule")
    assert d.variables == {"algorithm": "beta-ranker", "boost": 1.75, "page_size": 20}


def test_decide_audience_targeted_experiment(client):
    d = client.decide("u3", "search_ranking", U3_ATTRS)
    assert (d.enabled, d.variation_key, d.rule_key) == (False, "classic", "search_test")
    assert d.variables == SEARCH_DEFAULT_VARS


def test_decide_rollout_rule_partial_traffic(client):
    # everyone-else rule of search_ranking serves 50%: some users get no variation at all
    outcomes = {client.decide("user-%d" % i, "search_ranking").variation_key for i in range(200)}
    assert outcomes == {"on", None}
    none = next(client.decide("user-%d" % i, "search_ranking") for i in range(200)
                if client.decide("user-%d" % i, "search_ranking").variation_key is None)
    assert none.enabled is False and none.rule_key is None
    assert none.variables == SEARCH_DEFAULT_VARS


def test_whitelisted_user(client):
    d = client.decide("forced_user", "checkout_flow")
    assert (d.variation_key, d.rule_key) == ("treatment", "checkout_test")


def test_empty_user_id_is_a_user(client):
    # the reference SDK accepts "" as a user id
    d = client.decide("", "checkout_flow")
    assert (d.enabled, d.variation_key, d.rule_key) == (False, "off", "81002")


def test_decide_is_deterministic(client):
    first = [client.decide("user-%d" % i, "checkout_flow") for i in range(100)]
    again = [client.decide("user-%d" % i, "checkout_flow") for i in range(100)]
    assert first == again


def test_unicode_ids_and_values(client):
    d1 = client.decide("användare-😀", "checkout_flow", {"country": "NL", "age": 20})
    d2 = client.decide("användare-😀".encode(), b"checkout_flow", {"country": "NL", "age": 20})
    assert d1 == d2


def test_bytes_user_ids_and_keys_are_text_but_bytes_attributes_are_not(client):
    """UTF-8 bytes work as a user id or flag key (the binding's extension); in attributes they follow the
    reference: a bytes value is no string (b"NL" != "NL"), a bytes key names no attribute."""
    assert client.decide(b"u2", b"checkout_flow", U2_ATTRS) == client.decide("u2", "checkout_flow", U2_ATTRS)
    as_bytes = client.decide("u2", "checkout_flow", {b"country": b"NL", b"age": 30})
    assert as_bytes == client.decide("u2", "checkout_flow", {})
    assert client.decide("u2", "checkout_flow", {"country": b"NL", "age": 30}) == \
        client.decide("u2", "checkout_flow", {"country": {"not": "a string"}, "age": 30})


def test_attribute_types(client):
    # bool before int: beta=True must match the "beta exact true" condition, 1 must not
    d = client.decide("u5", "checkout_flow", {"country": "BE", "beta": True})
    assert d.rule_key in ("checkout_test", "checkout_nl_rule")
    # u1 falls outside the experiment traffic, so the rollout decides: audience NL/BE + (adult or beta)
    assert client.decide("u1", "checkout_flow", {"country": "BE", "beta": True}).variation_key == "on_nl"
    assert client.decide("u1", "checkout_flow", {"country": "BE", "beta": 1}).variation_key == "off"
    assert client.decide("u1", "checkout_flow", {"country": "BE", "age": 18}).variation_key == "on_nl"
    assert client.decide("u1", "checkout_flow", {"country": "BE", "age": 18.0}).variation_key == "on_nl"
    assert client.decide("u1", "checkout_flow", {"country": "BE", "age": 17.5}).variation_key == "off"
    assert client.decide("u1", "checkout_flow", {"country": "BE", "age": "18"}).variation_key == "off"
    assert client.decide("u1", "checkout_flow", {"country": "BE", "age": None}).variation_key == "off"
    assert client.decide("u1", "checkout_flow", {"country": "BE", "age": True}).variation_key == "off"


def test_non_finite_doubles_are_accepted(client):
    for value in (math.nan, math.inf, -math.inf):
        d = client.decide("u1", "search_ranking", {"plan": "premium", "score": value})
        assert isinstance(d, Decision)


def test_int64_bounds(client):
    client.decide("u1", "checkout_flow", {"age": 2 ** 63 - 1})
    client.decide("u1", "checkout_flow", {"age": -2 ** 63})


def test_many_attributes(client):
    attrs = {"attr_%d" % i: i for i in range(1000)}
    attrs.update(U2_ATTRS)
    assert client.decide("u2", "checkout_flow", attrs).variation_key == "control"


def test_attributes_are_not_kept_between_calls(client):
    client.decide("u1", "checkout_flow", {"country": "NL", "age": 40})
    assert client.decide("u1", "checkout_flow").variation_key == "off"


def test_include_reasons(client):
    d = client.decide("u2", "checkout_flow", U2_ATTRS, options=["INCLUDE_REASONS"])
    assert d.reasons and all(isinstance(r, str) and r for r in d.reasons)
    assert any("checkout_test" in r for r in d.reasons), d.reasons
    assert client.decide("u2", "checkout_flow", U2_ATTRS).reasons == []


def test_exclude_variables(client):
    d = client.decide("u3", "checkout_flow", U3_ATTRS, options=[DecideOption.EXCLUDE_VARIABLES])
    assert d.variables == {} and d.variation_key == "treatment"


@pytest.mark.parametrize("options", [
    ["INCLUDE_REASONS", "EXCLUDE_VARIABLES"],
    ("INCLUDE_REASONS", DecideOption.EXCLUDE_VARIABLES),
    DecideOption.INCLUDE_REASONS | DecideOption.EXCLUDE_VARIABLES,
    [DecideOption.INCLUDE_REASONS | DecideOption.EXCLUDE_VARIABLES],
])
def test_option_spellings(client, options):
    d = client.decide("u2", "checkout_flow", U2_ATTRS, options=options)
    assert d.reasons and d.variables == {}


def test_unknown_option_name(client):
    err = raises(experiment.InvalidOptionError, -3, r"INCLUDE_REASON\b", client.decide, "u2", "checkout_flow",
                 U2_ATTRS, ["INCLUDE_REASON"])
    assert isinstance(err, ValueError)
    raises(experiment.InvalidOptionError, -3, r"include_reasons", client.decide_all, "u2", None,
           ["include_reasons"])
    raises(experiment.InvalidOptionError, -3, r"NOPE", client.decide_for_keys, "u2", ["checkout_flow"], None,
           ["NOPE"])
    raises(experiment.InvalidOptionError, -3, r"option", client.decide, "u2", "checkout_flow", None, [3.5])
    assert client.decide("u2", "checkout_flow", U2_ATTRS).variation_key == "control"


def test_variables_are_independent_copies(client):
    d1 = client.decide("u3", "checkout_flow", U3_ATTRS)
    d1.variables["headline"] = "mutated"
    d1.variables["layout"]["widgets"].append("mutated")
    d2 = client.decide("u3", "checkout_flow", U3_ATTRS)
    assert d2.variables == CHECKOUT_TREATMENT_VARS


def test_decision_is_frozen(client):
    d = client.decide("u2", "checkout_flow", U2_ATTRS)
    with pytest.raises(Exception):
        d.enabled = False  # type: ignore[misc]
    assert d.to_dict()["variation_key"] == "control"


# ------------------------------------------------------------------------------------------------
# decide_all
# ------------------------------------------------------------------------------------------------

def test_decide_all(client):
    all_ = client.decide_all("u2", U2_ATTRS)
    assert list(all_) == ["checkout_flow", "search_ranking"]
    for key, d in all_.items():
        assert d == client.decide("u2", key, U2_ATTRS)


def test_decide_all_enabled_flags_only(client):
    all_ = client.decide_all("u3", U3_ATTRS, options=["ENABLED_FLAGS_ONLY"])
    assert list(all_) == ["checkout_flow"]
    assert client.decide_all("u1", None, [DecideOption.ENABLED_FLAGS_ONLY]).keys() <= {"search_ranking"}


def test_decide_all_with_options(client):
    all_ = client.decide_all("u2", U2_ATTRS, options=["INCLUDE_REASONS", "EXCLUDE_VARIABLES"])
    assert all(d.variables == {} and d.reasons for d in all_.values())


def test_decide_all_many_users_matches_decide(client):
    for i in range(50):
        uid = "user-%d" % i
        attrs = {"country": "NL", "age": i}
        assert client.decide_all(uid, attrs) == {k: client.decide(uid, k, attrs)
                                                for k in ("checkout_flow", "search_ranking")}


def test_decide_all_after_datafile_replacement(client, datafile_dict):
    datafile_dict["featureFlags"] = datafile_dict["featureFlags"][:1]
    client.start(json.dumps(datafile_dict))
    assert list(client.decide_all("u2", U2_ATTRS)) == ["checkout_flow"]


# ------------------------------------------------------------------------------------------------
# decide_for_keys
# ------------------------------------------------------------------------------------------------

def test_decide_for_keys(client):
    result = client.decide_for_keys("u2", ["search_ranking", "checkout_flow"], U2_ATTRS)
    assert set(result) == {"search_ranking", "checkout_flow"}
    for key, d in result.items():
        assert d == client.decide("u2", key, U2_ATTRS)


def test_decide_for_keys_unknown_key_gives_disabled_decision(client):
    result = client.decide_for_keys("u2", ["checkout_flow", "no_such_flag"], U2_ATTRS)
    d = result["no_such_flag"]
    assert (d.flag_key, d.enabled, d.variation_key) == ("no_such_flag", False, None)
    assert result["checkout_flow"].variation_key == "control"


def test_decide_for_keys_options_and_empty(client):
    assert client.decide_for_keys("u2", [], U2_ATTRS) == {}
    result = client.decide_for_keys("u2", ("checkout_flow",), U2_ATTRS, options=["INCLUDE_REASONS"])
    assert result["checkout_flow"].reasons
    result = client.decide_for_keys("u3", ["checkout_flow", "search_ranking"], U3_ATTRS,
                                    options=["ENABLED_FLAGS_ONLY"])
    assert list(result) == ["checkout_flow"]


def test_decide_for_keys_bad_keys(client):
    raises(experiment.UnsupportedTypeError, -1, r"keys", client.decide_for_keys, "u2", "checkout_flow")
    raises(experiment.UnsupportedTypeError, -1, r"keys.*None", client.decide_for_keys, "u2", None)
    # As the reference: a key that names no flag (not a str, not UTF-8) gets a disabled decision, and a list
    # attribute is taken (exists; unknown for other conditions).
    mixed = client.decide_for_keys("u2", ["checkout_flow", 42], U2_ATTRS)
    assert mixed["checkout_flow"].variation_key == "control"
    assert (mixed[42].enabled, mixed[42].variation_key, mixed[42].reasons) == (False, None, [])
    assert client.decide_for_keys("u2", [b"\xff"])[b"\xff"].enabled is False
    assert client.decide_for_keys("u2", ["checkout_flow"], dict(U2_ATTRS, tags=["a"]))["checkout_flow"].variation_key \
        == "control"
    assert client.decide_for_keys("u2", ["checkout_flow"], U2_ATTRS)["checkout_flow"].variation_key == "control"
