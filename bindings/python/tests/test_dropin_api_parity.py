"""Regression tests of the differences apifuzz.py found between experiment.optimizely (the drop-in) and
optimizely-sdk 5.7.0: each runs a short call sequence on both, through apifuzz.compare_calls, which compares
return values, notification arguments, dispatched events and saved profiles (type-exact), and expects none
to differ. Each names the fix it guards; the inputs are the minimal ones the fuzzer's examples shrank to.

    EXPERIMENT_LIBRARY=$PWD/.build/release/libexperiment.so PYTHONPATH=$PWD/bindings/python \\
        python3 -m pytest -q bindings/python/tests/test_dropin_api_parity.py
"""

from __future__ import annotations

import copy
import json
import os
import sys
from typing import Any, Dict, List

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import apifuzz  # noqa: E402

DEMO = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(HERE))), "examples", "datafiles", "demo.json")
NL = {"country": "NL", "age": 30, "cart_value": 80, "plan": "premium"}
R = "INCLUDE_REASONS"
EFO = "ENABLED_FLAGS_ONLY"


@pytest.fixture(scope="module")
def demo() -> Dict[str, Any]:
    with open(DEMO) as f:
        return json.load(f)


def same(datafile: Any, calls: List[List[Any]], user_id: str = "user-1", attributes: Any = None,
         **kwargs: Any) -> apifuzz.Tally:
    tally = apifuzz.compare_calls(datafile, user_id, dict(NL if attributes is None else attributes), calls, **kwargs)
    assert not tally.crashes, tally.crash_examples
    assert tally.total_comparisons > 0
    assert not tally.differences, apifuzz.format_report(tally, width=1500)
    return tally


# -- forced decisions on user contexts ------------------------------------------------------------------

def test_set_forced_decision_answers_true_and_keeps_what_the_reference_keeps(demo: Dict[str, Any]) -> None:
    """The reference stores any forced decision and answers True: a variation key that is None or names no
    variation (later: "Invalid variation is mapped to ..."), a flag key that is no str; get / remove answer
    from that map."""
    same(demo, [["set_forced_decision", ["checkout_redesign", None], None],
                ["get_forced_decision", ["checkout_redesign", None]],
                ["decide", "checkout_redesign", [R]],
                ["set_forced_decision", ["checkout_redesign", "checkout_redesign_ab"], "no_such_variation"],
                ["decide", "checkout_redesign", [R]],
                ["set_forced_decision", [5, None], "on"], ["get_forced_decision", [5, None]],
                ["remove_forced_decision", [5, None]], ["remove_forced_decision", [5, None]],
                ["set_forced_decision", ["free_shipping", None], 7], ["decide", "free_shipping", [R]]])


def test_context_of_an_instance_without_datafile_keeps_forced_decisions_and_segments() -> None:
    same("{not json", [["set_forced_decision", ["flag", None], "on"], ["get_forced_decision", ["flag", None]],
                       ["set_qualified_segments", ["seg_a", ""]], ["decide", "flag", [R]],
                       ["remove_all_forced_decisions"], ["get_forced_decision", ["flag", None]]])


def test_forced_decision_for_a_flag_with_an_empty_key_is_invalid(demo: Dict[str, Any]) -> None:
    """optimizely-sdk's get_flag_variation answers None for a flag key "": the forced decision is invalid."""
    df = copy.deepcopy(demo)
    df["featureFlags"][1]["key"] = ""
    same(df, [["set_forced_decision", ["", None], "on"], ["decide", "", [R]],
              ["set_forced_decision", ["", "free_shipping_nl_de"], "on"], ["decide", "", [R]]])


# -- decide_for_keys ------------------------------------------------------------------------------------

def test_decide_for_keys_unknown_and_repeated_keys(demo: Dict[str, Any]) -> None:
    """Unknown keys: a decision without reasons, kept with ENABLED_FLAGS_ONLY, listed first; a repeated key
    carries both evaluations' reasons, in its decision and in both DECISION notifications."""
    same(demo, [["decide_for_keys", ["no_such_flag", "dark_mode", "", "free_shipping"], [R, EFO]],
                ["decide_for_keys", ["free_shipping", "checkout_redesign", "free_shipping"], [R]],
                ["decide_for_keys", ["free_shipping", "free_shipping"], [R, EFO, "DISABLE_DECISION_EVENT"]]])


def test_decide_for_keys_saves_the_profile_once(demo: Dict[str, Any]) -> None:
    same(demo, [["decide_for_keys", ["checkout_redesign", "free_shipping", "dark_mode", "search_ranking"], [R]]],
         profiles={"user-1": {"user_id": "user-1", "experiment_bucket_map": {}}})


def test_decide_without_a_list_of_options_drops_enabled_flags_only_from_the_defaults(demo: Dict[str, Any]) -> None:
    """The reference's decide merges into its default options themselves when the options are no list, and
    removes ENABLED_FLAGS_ONLY from them: later decide_all / decide_for_keys return disabled flags too."""
    same(demo, [["decide_all", [R]], ["decide", "dark_mode", None], ["decide_all", [R]],
                ["decide_for_keys", ["dark_mode", "free_shipping"], []]],
         default_options=[EFO, R])


# -- experiments: delivery rules, forced variations with NUL --------------------------------------------

def test_get_variation_and_activate_of_a_delivery_rule(demo: Dict[str, Any]) -> None:
    same(demo, [["get_variation", "free_shipping_nl_de"], ["activate", "free_shipping_nl_de"],
                ["set_forced_variation", "default-rollout-5002-6002", "on"],
                ["get_variation", "default-rollout-5002-6002"], ["activate", "default-rollout-5002-6002"]])


def test_forced_variation_of_a_user_id_with_nul(demo: Dict[str, Any]) -> None:
    same(demo, [["set_forced_variation", "checkout_redesign_ab", "one_page_checkout"],
                ["get_forced_variation", "checkout_redesign_ab"], ["get_variation", "checkout_redesign_ab"],
                ["set_forced_variation", "checkout_redesign_ab", None],
                ["get_forced_variation", "checkout_redesign_ab"]], user_id="u\0ser")


# -- attributes with NUL in user contexts ---------------------------------------------------------------

def test_user_context_with_nul_in_attribute_values(demo: Dict[str, Any]) -> None:
    attributes = dict(NL, note="a\0b", email="x\0@demo-shop.example")
    same(demo, [["set_forced_decision", ["dark_mode", None], "on"], ["decide", "free_shipping", [R]],
                ["set_attribute", "country", "N\0L"], ["decide", "free_shipping", [R]],
                ["decide_for_keys", ["free_shipping", "checkout_redesign"], [R]], ["decide_all", [R]]],
         attributes=attributes)


# -- user profile service -------------------------------------------------------------------------------

def test_profile_lookup_that_raises_or_is_malformed_starts_from_an_empty_profile(demo: Dict[str, Any]) -> None:
    calls = [["decide", "checkout_redesign", [R]], ["activate", "checkout_redesign_ab"],
             ["is_feature_enabled", "checkout_redesign"], ["decide", "checkout_redesign", [R]]]
    same(demo, calls, raising=("user-1",))
    for broken in ({"user_id": "user-1"}, {"experiment_bucket_map": {}}, {}):
        same(demo, calls, profiles={"user-1": broken})


def test_saved_profile_keeps_the_looked_up_entries(demo: Dict[str, Any]) -> None:
    """Entries the library cannot use (no variation_id, an unknown id) and the profile's own user_id are
    saved back as they were, with the new assignment written in."""
    profile = {"user_id": "someone-else", "experiment_bucket_map": {"9999": {}, "3002": {"variation_id": "x"},
                                                                      "7": {"variation_id": "999999"}}}
    same(demo, [["get_variation", "checkout_redesign_ab"], ["decide", "checkout_redesign", [R]]],
         profiles={"user-1": profile})


def test_one_profile_save_per_call_of_the_reference(demo: Dict[str, Any]) -> None:
    """is_feature_enabled, get_enabled_features, the variable getters and activate decide twice in the
    library (once for the answer, once for the impression), and save the profile once, as the reference."""
    for raising in ((), ("user-1", "user-2", "user-3", "user-4")):  # (a failed lookup: each decision starts anew)
        same(demo, [["activate", "checkout_redesign_ab"]], profiles={}, raising=raising)
        same(demo, [["is_feature_enabled", "checkout_redesign"]], user_id="user-2", profiles={}, raising=raising)
        same(demo, [["get_enabled_features"]], user_id="user-3", profiles={}, raising=raising)
        same(demo, [["get_feature_variable", None, "checkout_redesign", "steps"]], user_id="user-4", profiles={},
             raising=raising)


def test_profile_of_a_user_id_with_nul(demo: Dict[str, Any]) -> None:
    user = "u\0ser"
    exp = demo["experiments"][0]
    profile = {"user_id": user, "experiment_bucket_map": {exp["id"]: {"variation_id": exp["variations"][1]["id"]}}}
    same(demo, [["get_variation", "checkout_redesign_ab"], ["decide", "checkout_redesign", [R]]], user_id=user,
         profiles={user: profile})


# -- notifications ----------------------------------------------------------------------------------------

def test_variable_notifications_carry_featureEnabled_as_the_datafile_has_it(demo: Dict[str, Any]) -> None:
    df = copy.deepcopy(demo)
    for rollout in df["rollouts"]:
        for rule in rollout["experiments"]:
            for variation in rule["variations"]:
                variation["featureEnabled"] = 1 if variation.get("featureEnabled") else 0.0
    same(df, [["get_feature_variable", None, "free_shipping", "threshold_cents"],
              ["get_all_feature_variables", "free_shipping"], ["get_all_feature_variables", "dark_mode"]])


def test_activate_notification_names_the_last_variation_with_the_id(demo: Dict[str, Any]) -> None:
    df = copy.deepcopy(demo)
    exp = df["experiments"][0]
    for variation in list(exp["variations"]):
        exp["variations"].append(dict(variation, key=variation["key"] + "_dup", featureEnabled=False))
    same(df, [["activate", "checkout_redesign_ab"], ["decide", "checkout_redesign", [R]]])


def test_decision_notification_of_a_rule_key_with_nul(demo: Dict[str, Any]) -> None:
    df = copy.deepcopy(demo)
    df["rollouts"][1]["experiments"][0]["key"] = "free\0shipping"
    same(df, [["decide", "free_shipping", [R]], ["decide_all", [R]]])


# -- OptimizelyConfig -----------------------------------------------------------------------------------

def test_optimizely_config_audiences_text_leaves_null_ids_out_and_keeps_variable_types(demo: Dict[str, Any]) -> None:
    df = copy.deepcopy(demo)
    df["experiments"][0]["audienceConditions"] = ["or", None, "2002", "2006"]
    df["featureFlags"][0]["variables"][0]["type"] = []
    same(df, [["decide", "checkout_redesign", [R]]], config=True)


def test_forced_decision_with_variation_none_matches_a_variation_whose_key_is_null(demo: Dict[str, Any]) -> None:
    df = copy.deepcopy(demo)
    df["rollouts"][1]["experiments"][0]["variations"][0]["key"] = None
    same(df, [["set_forced_decision", ["free_shipping", "free_shipping_nl_de"], None],
              ["decide", "free_shipping", [R]], ["set_forced_decision", ["checkout_redesign", None], None],
              ["decide", "checkout_redesign", [R]]])


def test_get_variation_knows_the_keys_of_the_reference_experiment_map(demo: Dict[str, Any]) -> None:
    """A rule repeated with its id and another key, before the original: the reference's map by id keeps the
    later definition, so the copy's key names no experiment (no notification, None)."""
    df = copy.deepcopy(demo)
    rules = df["rollouts"][1]["experiments"]
    rules.insert(0, dict(rules[0], key="free_shipping_nl_de_dup", status="Paused"))
    same(df, [["get_variation", "free_shipping_nl_de_dup"], ["activate", "free_shipping_nl_de_dup"],
              ["get_variation", "free_shipping_nl_de"]])


def test_activate_notification_of_a_flag_level_forced_decision_beside_a_rule_whose_id_is_empty(
        demo: Dict[str, Any]) -> None:
    """A flag-level forced decision's impression names no experiment (id ""): ACTIVATE gets the reference's
    empty experiment, not a rule whose id happens to be "" too; a rule with id "" that decides is named."""
    df = copy.deepcopy(demo)
    df["rollouts"][1]["experiments"][0]["id"] = ""
    same(df, [["set_forced_decision", ["free_shipping", None], "on"], ["decide", "free_shipping", [R]],
              ["remove_all_forced_decisions"], ["decide", "free_shipping", [R]]])
    same(df, [["decide", "free_shipping", [R]]], attributes={"country": "US"})


def test_a_flag_whose_rollout_id_is_an_object(demo: Dict[str, Any]) -> None:
    """A rolloutId that is no string (a mutated datafile: {}) names no rollout; the drop-in once raised
    TypeError (unhashable) deciding it with ACTIVATE listeners."""
    df = copy.deepcopy(demo)
    df["featureFlags"][1]["rolloutId"] = {}
    same(df, [["decide_for_keys", ["free_shipping", "checkout_redesign"], [R]], ["activate", "checkout_redesign_ab"],
              ["decide", "free_shipping", [R]]])


def small_datafile() -> Dict[str, Any]:
    """A small datafile of our own: a flag "f" with an A/B experiment "exp" (variations "on" / "off") and a
    rollout whose everyone-else rule serves "on"; no holdouts (tests add them)."""
    def variation(vid: str, key: str, enabled: bool) -> Dict[str, Any]:
        return {"id": vid, "key": key, "featureEnabled": enabled, "variables": []}
    return {
        "version": "4", "revision": "7", "accountId": "900", "projectId": "901", "anonymizeIP": False,
        "botFiltering": False, "sendFlagDecisions": True, "attributes": [], "audiences": [], "events": [],
        "groups": [],
        "experiments": [{"id": "3001", "key": "exp", "layerId": "3000", "status": "Running", "audienceIds": [],
                         "forcedVariations": {},
                         "variations": [variation("3011", "on", True), variation("3012", "off", False)],
                         "trafficAllocation": [{"entityId": "3011", "endOfRange": 5000},
                                               {"entityId": "3012", "endOfRange": 10000}]}],
        "rollouts": [{"id": "4000", "experiments": [
            {"id": "4001", "key": "everyone", "layerId": "4000", "status": "Running", "audienceIds": [],
             "forcedVariations": {}, "variations": [variation("4011", "on", True)],
             "trafficAllocation": [{"entityId": "4011", "endOfRange": 10000}]}]}],
        "featureFlags": [{"id": "5001", "key": "f", "experimentIds": ["3001"], "rolloutId": "4000",
                          "variables": []}],
    }


def test_activate_notification_of_a_holdout_whose_variation_ids_are_not_numbers() -> None:
    """A holdout (global, or local on the experiment) whose ids are not decimal numbers: the impression's
    variation_id is null (the reference's event id normalization), yet the reference's ACTIVATE names the
    Holdout entity (included_rules, exclude_targeted_deliveries) and the decided variation dict; the drop-in
    passed the empty experiment and no variation."""
    df = small_datafile()
    df["holdouts"] = [{"id": "holdout_g", "key": "global_holdout", "status": "Running", "audienceIds": [],
                       "variations": [{"id": "hold_var_a", "key": "held", "variables": []},
                                      {"id": "hold_var_b", "key": "held_too", "variables": []}],
                       "trafficAllocation": [{"entityId": "hold_var_a", "endOfRange": 5000},
                                             {"entityId": "hold_var_b", "endOfRange": 10000}]}]
    calls = [["decide", "f", [R]], ["decide_for_keys", ["f"], []], ["decide_all", None]]
    for user_id in ("user-1", "user-2", "user-3"):
        same(df, calls, user_id=user_id, attributes={})
    local = copy.deepcopy(df)
    local["localHoldouts"] = [dict(local.pop("holdouts")[0], includedRules=["3001"], excludeTargetedDeliveries=True)]
    for user_id in ("user-1", "user-2", "user-3"):
        same(local, calls, user_id=user_id, attributes={})


def test_activate_notification_of_a_holdout_whose_id_is_empty() -> None:
    """A holdout whose id is "" (global, or local on the experiment): the impression names no variation (no
    experiment id, and the flag's variations hold no holdout's), yet the reference's ACTIVATE passes the
    holdout and its variation; the drop-in passed the empty experiment and no variation (found by apifuzz)."""
    df = small_datafile()
    df["holdouts"] = [{"id": "", "key": "global_holdout", "status": "Running", "audienceIds": [],
                       "variations": [{"id": "3000000006", "key": "off", "featureEnabled": False, "variables": []}],
                       "trafficAllocation": [{"entityId": "3000000006", "endOfRange": 10000}]}]
    calls = [["decide", "f", [R]], ["decide_for_keys", ["f"], []], ["decide_all", None]]
    same(df, calls, user_id="user-1", attributes={})
    local = copy.deepcopy(df)
    local["localHoldouts"] = [dict(local.pop("holdouts")[0], includedRules=["3001"])]
    for user_id in ("user-1", "user-2", "user-3"):
        same(local, calls, user_id=user_id, attributes={})


def test_activate_notification_of_a_flag_forced_decision_onto_a_variation_whose_id_is_empty() -> None:
    """A flag-level forced decision onto a variation whose id is "" (a delivery rule's): the impression names
    no variation, yet the reference's ACTIVATE passes the forced variation (found by apifuzz)."""
    df = small_datafile()
    df["rollouts"][0]["experiments"][0]["variations"][0].update(id="", key="everyone_on")
    df["rollouts"][0]["experiments"][0]["trafficAllocation"][0]["entityId"] = ""
    calls = [["set_forced_decision", ["f", None], "everyone_on"], ["decide", "f", [R]], ["decide_for_keys", ["f"], []],
             ["decide_all", None]]
    same(df, calls, user_id="user-1", attributes={})
    # A flag whose key is "": the reference's lookup of a flag variation answers None for it, so the forced
    # decision is not used and the decision buckets nobody (no traffic): its impression names no variation.
    df["featureFlags"][0]["key"] = ""
    for rule in df["experiments"] + df["rollouts"][0]["experiments"]:
        for allocation in rule["trafficAllocation"]:
            allocation["endOfRange"] = 0
    same(df, [["set_forced_decision", ["", None], "everyone_on"], ["decide", "", [R]], ["decide_all", None]],
         user_id="user-1", attributes={})


def test_decide_for_keys_naming_a_flag_whose_key_is_null_does_not_raise() -> None:
    """A flag whose datafile key is null and None among decide_for_keys' keys: the reference decides that flag;
    the library cannot name it (its keys are text), so the drop-in answers the unknown flag's decision for it
    instead of raising (it raised UnsupportedTypeError; found by apifuzz, seed 930056) and decides the rest."""
    from experiment import optimizely as dropin
    df = small_datafile()
    df["featureFlags"].append(dict(df["featureFlags"][0], id="5002", key=None, experimentIds=[]))
    client = dropin.Optimizely(json.dumps(df))
    try:
        decisions = client.create_user_context("user-1", {}).decide_for_keys(["f", None])
        assert decisions[None].variation_key is None and decisions[None].flag_key is None
        assert decisions["f"].variation_key in ("on", "off")
    finally:
        client.close()


def test_activate_notification_of_an_experiment_whose_id_is_empty() -> None:
    """activate of a group experiment whose id is "": the impression names no experiment and no variation
    (experiment_id "", variation_id null), yet the reference's ACTIVATE passes the experiment it activated (by
    key, with groupId / groupPolicy) and its variation by key; the drop-in passed the empty experiment. (Users
    whitelisted by forcedVariations: the group's traffic names no experiment.)"""
    df = small_datafile()
    exp = df["experiments"].pop(0)
    df["groups"] = [{"id": "6000", "policy": "random", "trafficAllocation": [{"entityId": "", "endOfRange": 10000}],
                     "experiments": [dict(exp, id="", forcedVariations={"user-1": "on", "user-2": "off"})]}]
    df["featureFlags"][0]["experimentIds"] = [""]
    calls = [["activate", "exp"], ["get_variation", "exp"], ["activate", "exp"]]
    for user_id in ("user-1", "user-2", "user-3"):
        same(df, calls, user_id=user_id, attributes={})


def test_activate_notification_of_a_whitelisted_variation_whose_id_is_empty() -> None:
    """A user whitelisted (forcedVariations) into a variation whose id is "": the impression names no variation
    (variation_id null, variation_key ""), yet the reference's ACTIVATE passes the decided experiment and that
    variation; the drop-in passed the empty experiment and no variation."""
    df = small_datafile()
    exp = df["experiments"][0]
    exp["variations"][0]["id"] = ""
    exp["forcedVariations"] = {"user-1": "on"}
    same(df, [["decide", "f", [R]], ["decide_for_keys", ["f"], []], ["decide_all", None],
              ["is_feature_enabled", "f"], ["get_enabled_features"]], user_id="user-1", attributes={})


def test_stored_variation_id_empty_is_no_stored_decision() -> None:
    """A profile whose entry names the variation id "" beside an experiment with a variation whose id is "":
    the reference tests the stored id's truth, so "" is no stored decision and the user is bucketed (here
    into a traffic range whose variation is gone: no variation); the drop-in served the variation with id ""."""
    df = small_datafile()
    df["experiments"][0]["variations"][1]["id"] = ""
    calls = [["get_variation", "exp"], ["activate", "exp"], ["decide", "f", [R]], ["is_feature_enabled", "f"]]
    for user_id in ("user-1", "user-2", "user-3", "user-4", "user-5", "user-6"):
        same(df, calls, user_id=user_id, attributes={},
             profiles={user_id: {"user_id": user_id, "experiment_bucket_map": {"3001": {"variation_id": ""}}}})


def test_activate_notification_of_a_variation_whose_key_is_a_number() -> None:
    """activate of a delivery rule whose variation's key is a number (the reference's schema checks no rule's
    variation keys): the ACTIVATE names that variation (the drop-in's get_variation answers the key as text,
    which names no key by equality)."""
    df = small_datafile()
    df["rollouts"][0]["experiments"][0]["variations"][0]["key"] = -2.5
    tally = same(df, [["activate", "everyone"]], attributes={})
    assert any(kind.startswith("activate notifications") for kind in tally.comparisons), tally.comparisons


# -- argument shapes (apifuzz.draw_shapes): what the reference's loose checks let through ----------------

def shaped(call: List[Any], **shape: str) -> List[Any]:
    return call + [{"~": shape}]


FEATURE_CALLS = [["is_feature_enabled", "checkout_redesign"], ["get_enabled_features"],
                 ["get_feature_variable", None, "free_shipping", "threshold"],
                 ["get_all_feature_variables", "search_ranking"], ["get_variation", "checkout_redesign_ab"],
                 ["activate", "checkout_redesign_ab"], ["track", "purchase", {"revenue": 100}], ["new_context"]]


@pytest.mark.parametrize("shape", apifuzz.ATTRIBUTE_SHAPES)
def test_attributes_refused_only_when_truthy_and_not_exactly_a_dict(demo: Dict[str, Any], shape: str) -> None:
    """optimizely-sdk refuses a call's attributes only when they are truthy and not exactly a dict: a dict
    subclass (OrderedDict) or a list of pairs gives None / False / [] and no event; [] / 0 / "" / () pass and
    decide as no attributes (notifications get the value as it was); create_user_context refuses anything but
    None or a dict. The drop-in took any dict, and raised or refused a falsy non-dict."""
    for user_id in ("user-1", "user-7", "user-12"):
        same(demo, [shaped(list(call), attributes=shape) for call in FEATURE_CALLS], user_id=user_id)


# (a Decimal among the tags makes the reference's own payload raise: no answer to compare)
@pytest.mark.parametrize("shape", [t for t in apifuzz.TAG_SHAPES if not t.startswith("decimal")])
def test_event_tags_of_every_shape(demo: Dict[str, Any], shape: str) -> None:
    """Event tags as optimizely-sdk takes them: a truthy non-dict or dict subclass is refused (no event); a
    falsy non-dict ([], 0, 0.0, "", False, ()) is sent as it is as the payload's tags (the library refused
    non-objects); NaN and infinities reach the payload (the binding refused them); revenue of an int
    subclass counts."""
    tally = same(demo, [shaped(["track", "purchase", {"revenue": 100, "category": "shoes"}], tags=shape),
                        shaped(["track_event", "add_to_cart", {"value": 2}], tags=shape)])
    assert tally.comparisons.get("track result")


@pytest.mark.parametrize("shape", apifuzz.OPTION_SHAPES)
def test_decide_options_that_are_no_option_names(demo: Dict[str, Any], shape: str) -> None:
    """Decide options holding a list, dict, None or bytes: the reference compares each with its names and
    ignores what matches none (the drop-in raised TypeError on an unhashable one); a tuple of options is
    no list (the instance's default options are used)."""
    same(demo, [shaped(["decide", "checkout_redesign", [R]], options=shape),
                shaped(["decide_all", [R]], options=shape),
                shaped(["decide_for_keys", ["free_shipping", "dark_mode"], [EFO]], options=shape)],
         default_options=["EXCLUDE_VARIABLES"])


@pytest.mark.parametrize("shape", apifuzz.KEYS_SHAPES)
def test_decide_for_keys_iterates_what_it_is_given(demo: Dict[str, Any], shape: str) -> None:
    """decide_for_keys of a tuple, a generator, a dict or a str: the reference iterates it (a str flag key
    by character: each a key naming no flag); the drop-in answered {} for anything but a list."""
    same(demo, [shaped(["decide_for_keys", ["free_shipping", "checkout_redesign", "nope"], [R]], keys=shape)])


@pytest.mark.parametrize("shape", apifuzz.SEGMENT_SHAPES)
def test_qualified_segments_kept_as_the_container_given(shape: str) -> None:
    """set_qualified_segments of a set, a dict, a deque, a list holding numbers, None or a list: the reference
    keeps a copy of the container as given (get_qualified_segments answers it, is_qualified_for asks `in`) and
    decides "qualified" conditions with it; the drop-in raised for members that are no text and answered a
    list."""
    df = apifuzz.add_segment_audiences(small_datafile(), __import__("random").Random(3))
    for segments in (["seg_a"], ["seg_b", "seg_c"], []):
        same(df, [shaped(["set_qualified_segments", segments], segments=shape), ["decide", "f", [R]],
                  ["decide_all", [R]], ["new_context"], ["set_qualified_segments", segments],
                  shaped(["set_qualified_segments", segments], segments=shape), ["decide_for_keys", ["f"], [R]]],
             attributes={})


@pytest.mark.parametrize("shape", apifuzz.Case.PROFILE_SHAPES)
def test_profiles_of_every_shape_a_lookup_may_answer(shape: str) -> None:
    """A lookup answering a list or str that names both keys: the reference's tracker raises indexing it and
    takes that as a failed lookup (an empty profile, the new assignment saved); the drop-in's adapter raised
    outside its guard (no save, other reasons). The other shapes guard what already matched."""
    df = small_datafile()
    case = apifuzz.Case.__new__(apifuzz.Case)
    case.users, case.raising, case.profiles = [("user-1", {})], set(), {}
    case.universe = apifuzz.Universe(df)
    rng = __import__("random").Random(0)
    calls = [["get_variation", "exp"], ["decide", "f", [R]], ["activate", "exp"], ["is_feature_enabled", "f"],
             ["decide_all", [R]]]
    for _ in range(40):
        case.profiles = {}
        case.PROFILE_SHAPES = [shape]
        case.shape_profiles(__import__("random").Random(rng.random()))
        if case.profiles:
            break
    tally = apifuzz.compare_calls(df, "user-1", {}, calls, profiles=case.profiles)
    assert not tally.differences, apifuzz.format_report(tally, width=1500)


def test_user_id_of_a_str_subclass_is_passed_on_as_it_is() -> None:
    """A user id that is a str subclass: the reference's DECISION and ACTIVATE notifications pass on the
    object it was given; the drop-in passed the library's str where it named the user from the event
    (apifuzz seeds 6090, 6270, 6291: their cases replayed)."""
    calls = [shaped(["is_feature_enabled", "f"], user_id="str_subclass"),
             shaped(["activate", "exp"], user_id="str_subclass"),
             shaped(["new_context"], user_id="str_subclass"), ["decide", "f", [R]], ["decide_all", [R]]]
    same(small_datafile(), calls, attributes={})
    for seed in (6090, 6270, 6291):
        tally = apifuzz.run_seed(seed, apifuzz.DEFAULT_USERS)
        assert not tally.differences, apifuzz.format_report(tally, width=1500)


def _both_sides(datafile: Any, **kwargs: Any) -> List[Any]:
    """The reference and the drop-in built alike over `datafile` (passed as it is, of any type)."""
    from optimizely import optimizely as ref_optimizely
    from optimizely.event.event_processor import ForwardingEventProcessor
    from optimizely.helpers.sdk_settings import OptimizelySdkSettings
    from test_differential import _SILENT
    from experiment import optimizely as dropin

    class Dispatcher:
        def dispatch_event(self, event: Any) -> None:
            pass

    reference = ref_optimizely.Optimizely(
        datafile=datafile, logger=_SILENT, event_processor=ForwardingEventProcessor(Dispatcher(), logger=_SILENT),
        settings=OptimizelySdkSettings(odp_disabled=True), **kwargs)
    return [reference, dropin.Optimizely(datafile=datafile, event_dispatcher=Dispatcher(), logger=_SILENT, **kwargs)]


def _answers(client: Any, flags: List[str]) -> Any:
    context = client.create_user_context("user-1", {"country": "NL"})
    config = client.get_optimizely_config()
    return [client.is_valid, [apifuzz.decision_form(context.decide(f, [R])) for f in flags],
            None if config is None else config.get_datafile()]


@pytest.mark.parametrize("encoding", ["utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32",
                                      "utf-32-le", "bytearray", "memoryview", "bom-str"])
def test_datafile_bytes_read_as_the_reference_reads_them(demo: Dict[str, Any], encoding: str) -> None:
    """A datafile given as bytes: the reference's json.loads decodes the encoding it detects (a UTF-8 BOM
    dropped), then needs the bytes to be UTF-8 (UTF-16 without a BOM is: accepted, its text kept with its
    NULs; with a BOM or UTF-32 it is refused); a bytearray is read, a memoryview refused, a str with a BOM
    refused. The drop-in refused a BOM and UTF-16 and took a memoryview."""
    text = json.dumps(demo)
    datafile: Any = {"bytearray": lambda: bytearray(text.encode()), "memoryview": lambda: memoryview(text.encode()),
                     "bom-str": lambda: "\ufeff" + text}.get(encoding, lambda: text.encode(encoding))()
    reference, ours = _both_sides(datafile)
    flags = [f["key"] for f in demo["featureFlags"]]
    expected = _answers(reference, flags)
    assert _answers(ours, flags) == expected
    ours.close()


def test_default_decide_options_holding_no_names(demo: Dict[str, Any]) -> None:
    """Default decide options holding a list or dict: the reference compares each with its names (none
    matches); the drop-in raised TypeError building the instance."""
    for options in ([["x"]], [{"a": 1}, R], [EFO, ["y"]], [None, b"INCLUDE_REASONS"]):
        reference, ours = _both_sides(json.dumps(demo), default_decide_options=options)
        flags = [f["key"] for f in demo["featureFlags"]]
        assert _answers(ours, flags) == _answers(reference, flags)
        assert sorted(ours.create_user_context("u").decide_all()) == \
            sorted(reference.create_user_context("u").decide_all())
        ours.close()


# (an id `false` is left out: the library keeps a boolean id as the number it equals, so the notification
# says 0 where the reference says False)
@pytest.mark.parametrize("variation_id", [None, 0, 5, 2.5])
def test_forced_decision_onto_a_variation_whose_id_is_no_string(variation_id: Any) -> None:
    """A delivery rule's variation whose id is null, 0 or another number (its schema checks no rule), forced
    for the user: the DECISION notification's variation_id is that value as it is (the library passed its
    internal text for it, "\\x01None"); an id Python reads as false finds no flag variation for the
    impression (metadata.variation_key "") where a truthy one does, and the ACTIVATE notification still
    passes the rule and that variation (apifuzz seed 8920)."""
    df = small_datafile()
    df["rollouts"][0]["experiments"][0]["variations"][0].update(id=variation_id, key="ee_on")
    df["experiments"][0]["trafficAllocation"] = []  # everyone reaches the delivery rule
    # (a flag-level forced decision onto such a variation is left out: its ACTIVATE notification's variation
    # argument, like apifuzz seed 5283's, is the known difference of activate_arguments)
    calls = [["decide", "f", [R]], ["set_forced_decision", ["f", "everyone"], "ee_on"], ["decide", "f", [R]],
             ["decide_all", []], ["decide_for_keys", ["f"], []], ["is_feature_enabled", "f"]]
    for user_id in ("user-1", "user-2", "user-3"):
        tally = same(df, calls, user_id=user_id, attributes={})
        assert tally.comparisons.get("decide notifications")
