"""One regression test per kind of difference valuefuzz.py found: variable values as the reference typecasts
them, variable and flag duplicates, and OptimizelyConfig, each compared with optimizely-sdk 5.7.0 through the
real library (the drop-in experiment.optimizely over the .so): return values, notifications, events and
get_optimizely_config()'s contents (apifuzz.compare_calls).

    EXPERIMENT_LIBRARY=$PWD/.build/release/libexperiment.so PYTHONPATH=$PWD/bindings/python \\
        python3 -m pytest -q bindings/python/tests/test_value_parity.py
"""

from __future__ import annotations

import copy
import json
import os
import sys
from typing import Any, Dict, List, Optional

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import apifuzz  # noqa: E402
import difffuzz  # noqa: E402

GETTERS = [None, "boolean", "double", "integer", "string", "json"]


def short(value: Any) -> str:
    """A test id for a long value: its start and its length."""
    text = repr(value)
    return text if len(text) <= 24 else "%s..(%d)" % (text[:16], len(text))


def datafile(variables: List[Dict[str, Any]], usages: Optional[List[Dict[str, Any]]] = None,
             enabled: Any = True, flags: Optional[List[Dict[str, Any]]] = None) -> Dict[str, Any]:
    """One flag "flag" (id "f1") with `variables`, an experiment "exp" giving every user the variation "on"
    (featureEnabled `enabled`, values `usages`) and a rollout "r1" whose rule gives everyone "ee"."""
    rule = {"id": "e1", "key": "rule", "status": "Running", "layerId": "r1", "audienceIds": [],
            "forcedVariations": {},
            "variations": [{"id": "ee", "key": "ee", "featureEnabled": True, "variables": []}],
            "trafficAllocation": [{"entityId": "ee", "endOfRange": 10000}]}
    experiment = {"id": "x1", "key": "exp", "status": "Running", "layerId": "l1", "audienceIds": [],
                  "forcedVariations": {},
                  "variations": [{"id": "on", "key": "on", "featureEnabled": enabled, "variables": usages or []}],
                  "trafficAllocation": [{"entityId": "on", "endOfRange": 10000}]}
    return {
        "version": "4", "projectId": "p", "accountId": "a", "revision": "1", "groups": [], "events": [],
        "audiences": [], "attributes": [], "experiments": [experiment],
        "featureFlags": flags if flags is not None else [
            {"id": "f1", "key": "flag", "rolloutId": "r1", "experimentIds": ["x1"], "variables": variables}],
        "rollouts": [{"id": "r1", "experiments": [rule]}],
    }


def variable(type_: Any, default: Any, id_: str = "v1", key: str = "x", **extra: Any) -> Dict[str, Any]:
    return dict({"id": id_, "key": key, "type": type_, "defaultValue": default}, **extra)


def calls_for(keys: List[str]) -> List[List[Any]]:
    calls: List[List[Any]] = [["get_feature_variable", g, "flag", k] for k in keys for g in GETTERS]
    return calls + [["get_all_feature_variables", "flag"], ["decide", "flag", ["INCLUDE_REASONS"]],
                    ["decide_all", []], ["is_feature_enabled", "flag"]]


def assert_same(text_or_df: Any, calls: List[List[Any]]) -> None:
    tally = apifuzz.compare_calls(text_or_df, "user", {}, calls, config=True)
    assert not tally.differences, apifuzz.format_report(tally)
    assert not tally.crashes, dict(tally.crashes)
    assert tally.comparisons["get_optimizely_config contents"] == 1, tally.comparisons


def both_ways(type_: str, text: Any) -> List[Dict[str, Any]]:
    """The value as a variable's default and as the variation's value."""
    return [datafile([variable(type_, text)]),
            datafile([variable(type_, "1")], [{"id": "v1", "value": text}])]


@pytest.fixture(autouse=True)
def _library() -> None:
    if apifuzz.dropin is None:
        pytest.fail("cannot import experiment.optimizely: %r" % (apifuzz.IMPORT_ERROR,))


# ----- doubles Python's float() reads as nan and the infinities ---------------------------------------------

@pytest.mark.parametrize("text", ["nan", "-NaN", " inf ", "-Infinity", "1e400", "-1e999", "9" * 400], ids=short)
def test_double_nan_and_infinity_are_handed_out(text: str) -> None:
    for df in both_ways("double", text):
        assert_same(df, calls_for(["x"]))


# ----- integers: Python's int() limit of 4300 digits -------------------------------------------------------

@pytest.mark.parametrize("text", ["1" * 4300, "1" * 4301, "-" + "9" * 4301, "0" * 4301, "0" * 4299 + "12",
                                  " " + "7" * 4301 + " "], ids=short)
def test_integer_text_past_python_digit_limit_is_none(text: str) -> None:
    for df in both_ways("integer", text):
        assert_same(df, calls_for(["x"]))


@pytest.mark.parametrize("text", ["1" * 4301, "[" + "2" * 4301 + "]", '{"a": -' + "3" * 4301 + "}"], ids=short)
def test_json_text_with_an_integer_past_python_digit_limit_is_none(text: str) -> None:
    for df in both_ways("json", text):
        assert_same(df, calls_for(["x"]))


# ----- values that are no string: numbers cast as Python casts them --------------------------------------

@pytest.mark.parametrize("literal", [10 ** 19, -(10 ** 19) - 7, 10 ** 30, 10 ** 400, -(2 ** 64) - 1, 2 ** 64,
                                     2 ** 63, 2 ** 64 - 1, 1e19, -1e19, 1e300, 9.3e18, 1.7976931348623157e308], ids=short)
def test_number_literal_values_cast_exactly(literal: Any) -> None:
    for type_ in ("integer", "double", "string", "boolean", "json"):
        for df in both_ways(type_, literal):
            assert_same(df, calls_for(["x"]))


def test_datafile_with_an_integer_past_python_digit_limit_is_refused_as_by_the_reference() -> None:
    for digits in (4300, 4301):
        df = datafile([variable("integer", "@")])
        text = json.dumps(df).replace('"@"', "1" * digits)
        ref = difffuzz.make_reference(text, difffuzz.RecordingDispatcher())
        ref_accepts = difffuzz.reference_accepts(ref)
        try:
            difffuzz.make_ours(text, difffuzz.RecordingDispatcher())
            ours_accepts = True
        except Exception:  # noqa: BLE001 - refused
            ours_accepts = False
        assert ours_accepts == ref_accepts == (digits == 4300)
        # elsewhere in the datafile too, and a negative one; a long fraction is a float (accepted)
        for token, accepted in (("-" + "1" * digits, digits == 4300), ("1" * digits + ".5", True)):
            text = json.dumps(dict(df, extra="@")).replace('"@"', token)
            try:
                difffuzz.make_ours(text, difffuzz.RecordingDispatcher())
                ours_accepts = True
            except Exception:  # noqa: BLE001
                ours_accepts = False
            assert difffuzz.reference_accepts(difffuzz.make_reference(text, difffuzz.RecordingDispatcher())) \
                == ours_accepts == accepted


# ----- json values nested deeper than the library's 64 levels ---------------------------------------------

@pytest.mark.parametrize("depth", [64, 65, 100, 200])
def test_deep_json_values(depth: int) -> None:
    for df in both_ways("json", "[" * depth + "]" * depth):
        assert_same(df, calls_for(["x"]))


# ----- get_feature_variable: the last variable of a key, its type as the datafile has it ------------------

def test_repeated_variable_key_uses_the_last_definition() -> None:
    df = datafile([variable("integer", "1"), variable("string", "two", id_="v2")],
                  [{"id": "v1", "value": "5"}, {"id": "v2", "value": "six"}])
    assert_same(df, calls_for(["x"]))
    df = datafile([variable("boolean", "true"), variable("json", "{}", id_="v2")], [{"id": "v1", "value": "false"}])
    assert_same(df, calls_for(["x"]))


@pytest.mark.parametrize("type_", [None, 5, "", "Integer", ["string"]])
def test_untyped_getter_notifies_the_datafile_type(type_: Any) -> None:
    assert_same(datafile([variable(type_, "1")]), calls_for(["x"]))


# ----- decide_all with two flags of one key --------------------------------------------------------------

def test_decide_all_decides_a_repeated_flag_key_twice() -> None:
    df = datafile([variable("integer", "1")])
    twin = copy.deepcopy(df["featureFlags"][0])
    twin["id"] = "f2"
    twin["experimentIds"] = []
    df["featureFlags"].append(twin)
    for options in ([], ["INCLUDE_REASONS"], ["ENABLED_FLAGS_ONLY", "INCLUDE_REASONS"], ["EXCLUDE_VARIABLES"]):
        assert_same(df, [["decide_all", options], ["decide_all", options]])
    df["featureFlags"].reverse()
    assert_same(df, [["decide_all", ["INCLUDE_REASONS"]], ["decide_all", None]])


# ----- OptimizelyConfig: the reference's maps by flag key and id ------------------------------------------

def test_config_delivery_rules_take_the_last_flag_of_their_flag_id() -> None:
    df = datafile([variable("integer", "1")])
    twin = copy.deepcopy(df["featureFlags"][0])
    twin["key"] = "flag_twin"
    twin["variables"] = [variable("double", "2.5", id_="v9", key="y")]
    df["featureFlags"].append(twin)
    assert_same(df, calls_for(["x"]))


def test_config_value_of_a_shadowed_variable_id_reaches_the_key() -> None:
    # the variation's value names the first "x" (v1); the map by key holds the second (v2)
    df = datafile([variable("integer", "1"), variable("integer", "3", id_="v2")], [{"id": "v1", "value": "7"}])
    assert_same(df, calls_for(["x"]))


def test_config_experiment_variables_come_from_the_last_flag_of_the_key() -> None:
    # "exp" belongs to the first "flag"; the second one (no experiments) is what the map by key holds, and
    # its variable of id v1 ("z") takes the variation's value
    df = datafile([variable("integer", "1")], [{"id": "v1", "value": "7"}])
    twin = copy.deepcopy(df["featureFlags"][0])
    twin["id"] = "f2"
    twin["variables"] = [variable("string", "s", id_="v1", key="z"), variable("string", "j", id_="v3", key="w",
                                                                              subType="json")]
    twin["experimentIds"] = []
    df["featureFlags"].append(twin)
    assert_same(df, calls_for(["x", "z", "w"]))


def test_config_json_subtype_stays_string_for_a_shadowed_flag() -> None:
    # flags: "e" (id "i"), "flag" (id "i", a string of subType json), "flag" (id "j"): "e"'s delivery rules
    # show the variables of the last flag of id "i", whose json type the reference never converted
    df = datafile([variable("string", "{}", subType="json")])
    first = copy.deepcopy(df["featureFlags"][0])
    shadowed = copy.deepcopy(first)
    first.update(key="e", id="i", experimentIds=[], variables=[])
    shadowed.update(id="i", experimentIds=[])
    df["featureFlags"] = [first, shadowed, df["featureFlags"][0]]
    assert_same(df, calls_for(["x"]))


def test_config_delivery_rules_of_the_first_rollout_of_an_id() -> None:
    df = datafile([variable("integer", "1")])
    other = copy.deepcopy(df["rollouts"][0])
    other["experiments"][0]["key"] = "other_rule"
    other["experiments"][0]["id"] = "e9"
    df["rollouts"].append(other)
    assert_same(df, calls_for(["x"]))


# ----- is_feature_enabled: featureEnabled must be True itself -------------------------------------------

@pytest.mark.parametrize("enabled", [1, 2, 0.5, "true", "false", [0], {"a": 1}, True, 0, None])
def test_is_feature_enabled_wants_featureenabled_true(enabled: Any) -> None:
    df = datafile([variable("integer", "1")], [{"id": "v1", "value": "2"}], enabled=enabled)
    calls = [["is_feature_enabled", "flag"], ["get_enabled_features"], ["get_feature_variable", None, "flag", "x"],
             ["decide", "flag", []]]
    assert_same(df, calls)
    df["sendFlagDecisions"] = True
    df["featureFlags"][0]["experimentIds"] = []
    df["rollouts"][0]["experiments"][0]["variations"][0]["featureEnabled"] = enabled
    assert_same(df, calls)


def test_is_feature_enabled_of_an_fr_experiment_everyone_else_variation() -> None:
    # the everyone-else variation an "fr" experiment gets is made with featureEnabled=bool(2): True
    df = datafile([variable("integer", "1")])
    experiment = df["experiments"][0]
    experiment["type"] = "fr"
    experiment["trafficAllocation"] = [{"entityId": "on", "endOfRange": 0}]
    df["rollouts"][0]["experiments"][0]["variations"][0]["featureEnabled"] = 2
    assert_same(df, [["is_feature_enabled", "flag"], ["get_enabled_features"], ["decide", "flag", []]])


# ----- ids repeated across entities: which definition serves ----------------------------------------------

def _rule(id_: str, key: str, variation: str, audience: Optional[str] = None, end: int = 10000) -> Dict[str, Any]:
    return {"id": id_, "key": key, "status": "Running", "layerId": "layer_" + key,
            "audienceIds": [audience] if audience else [], "forcedVariations": {},
            "variations": [{"id": variation, "key": "var_" + variation, "featureEnabled": True,
                            "variables": [{"id": "v1", "value": variation}]}],
            "trafficAllocation": [{"entityId": variation, "endOfRange": end}]}


def _two_rollouts(rules_a: List[Dict[str, Any]], rules_b: List[Dict[str, Any]]) -> Dict[str, Any]:
    df = datafile([variable("string", "default")])
    df["experiments"] = []
    df["sendFlagDecisions"] = True
    df["audiences"] = [{"id": "a1", "name": "n is 1", "conditions": json.dumps(
        ["or", {"type": "custom_attribute", "name": "n", "value": 1, "match": "exact"}])}]
    df["attributes"] = [{"id": "n1", "key": "n"}]
    flag = df["featureFlags"][0]
    flag["experimentIds"] = []
    flag_b = dict(copy.deepcopy(flag), id="f2", key="flag_b", rolloutId="r2")
    df["featureFlags"].append(flag_b)
    df["rollouts"] = [{"id": "r1", "experiments": rules_a}, {"id": "r2", "experiments": rules_b}]
    return df


@pytest.mark.parametrize("user", [{}, {"n": 1}, {"n": 2}])
def test_a_delivery_rule_sharing_its_id_with_another_rollouts_rule(user: Dict[str, Any]) -> None:
    # the reference decides flag's first rule with the audiences, traffic and variations of the later
    # definition of id "x" (flag_b's rule), under its own key and layer
    df = _two_rollouts([_rule("x", "rule_a", "va", audience="a1"), _rule("ea", "ee_a", "vea")],
                       [_rule("x", "rule_b", "vb", end=10000), _rule("eb", "ee_b", "veb")])
    calls = [["decide", "flag", ["INCLUDE_REASONS"]], ["decide", "flag_b", ["INCLUDE_REASONS"]],
             ["decide_all", []], ["get_feature_variable", None, "flag", "x"], ["is_feature_enabled", "flag"]]
    for user_id in ("user", "u2", "u3", "u4"):
        tally = apifuzz.compare_calls(df, user_id, user, calls, config=True)
        assert not tally.differences, apifuzz.format_report(tally)
    # the shared id as the everyone-else rule of the first rollout, and the other way round
    df = _two_rollouts([_rule("y", "rule_a", "va", audience="a1"), _rule("x", "ee_a", "vea")],
                       [_rule("x", "rule_b", "vb", audience="a1", end=10000), _rule("eb", "ee_b", "veb")])
    for user_id in ("user", "u2", "u3", "u4"):
        tally = apifuzz.compare_calls(df, user_id, user, calls, config=True)
        assert not tally.differences, apifuzz.format_report(tally)


def test_source_of_a_flag_experiment_whose_id_a_delivery_rule_repeats() -> None:
    # the flag's experiment "x1" is, in the reference's experiments by id, the delivery rule of id "x1"
    df = datafile([variable("integer", "1")], [{"id": "v1", "value": "5"}])
    df["featureFlags"][0]["rolloutId"] = "r2"
    df["rollouts"].append({"id": "r2", "experiments": [_rule("x1", "rule_b", "vb")]})
    calls = [["get_feature_variable", None, "flag", "x"], ["is_feature_enabled", "flag"],
             ["get_all_feature_variables", "flag"], ["get_enabled_features"]]
    assert_same(df, calls)


def test_fr_experiment_of_a_shadowed_flag_gets_no_everyone_else_variation() -> None:
    # two flags of one key: only the last one (the reference's map by key) gives its "fr" experiment the
    # everyone-else variation; the first one's "fr" experiment keeps its gap
    df = datafile([variable("integer", "1")])
    df["experiments"][0]["type"] = "fr"
    df["experiments"][0]["trafficAllocation"] = [{"entityId": "on", "endOfRange": 0}]
    twin = dict(copy.deepcopy(df["featureFlags"][0]), id="f2", experimentIds=[])
    df["featureFlags"].append(twin)
    calls = [["activate", "exp"], ["get_variation", "exp"], ["decide", "flag", ["INCLUDE_REASONS"]],
             ["is_feature_enabled", "flag"]]
    assert_same(df, calls)
    df["featureFlags"].reverse()  # now the flag of the experiment is the last one: it gets it
    assert_same(df, calls)


def _holdout(id_: str, key: str, variation: str, end: int) -> Dict[str, Any]:
    return {"id": id_, "key": key, "status": "Running", "audienceIds": [], "audienceConditions": [],
            "variations": [{"id": variation, "key": "var_" + variation, "featureEnabled": False}],
            "trafficAllocation": [{"entityId": variation, "endOfRange": end}]}


def test_an_experiment_sharing_its_id_with_a_holdout_buckets_through_the_holdouts_variations() -> None:
    # the reference's variations by experiment id hold the holdout's for "x1": the experiment's bucketed "on"
    # is not there, so the user is bucketed into nothing (and decided by the rollout)
    df = datafile([variable("integer", "1")], [{"id": "v1", "value": "2"}])
    df["holdouts"] = [_holdout("x1", "holdout_x", "hv", 0)]
    assert_same(df, [["decide", "flag", ["INCLUDE_REASONS"]], ["activate", "exp"], ["get_variation", "exp"],
                     ["is_feature_enabled", "flag"], ["get_feature_variable", None, "flag", "x"]])


def test_two_holdouts_of_one_id() -> None:
    # the first holdout buckets everyone into "h1v", which the variations of id "h" (the second's) lack
    df = datafile([variable("integer", "1")], [{"id": "v1", "value": "2"}])
    df["holdouts"] = [_holdout("h", "holdout_a", "h1v", 10000), _holdout("h", "holdout_b", "h2v", 0)]
    assert_same(df, [["decide", "flag", ["INCLUDE_REASONS"]], ["decide_all", []], ["is_feature_enabled", "flag"],
                     ["get_all_feature_variables", "flag"]])
    df["localHoldouts"] = [dict(_holdout("h", "holdout_c", "h3v", 10000), includedRules=["e1", "x1"])]
    assert_same(df, [["decide", "flag", ["INCLUDE_REASONS"]], ["decide_all", []], ["is_feature_enabled", "flag"]])


@pytest.mark.parametrize("rule_is_last", [True, False])
def test_a_delivery_rule_sharing_its_id_with_a_group_experiment_passes_the_group(rule_is_last: bool) -> None:
    # the reference evaluates the rule with its experiments-by-id entry, the group experiment (audience,
    # traffic, variations), under the rule's own key; its bucketer checks the group's bucket first and names
    # the group experiment in the group's reasons. The group's traffic: "e1" (the rule's id), another
    # experiment, and an empty range, so users land in each.
    df = datafile([variable("integer", "1")], [{"id": "v1", "value": "2"}])
    group_experiment = {"id": "e1", "key": "grouped", "status": "Running", "layerId": "gl", "audienceIds": [],
                        "forcedVariations": {},
                        "variations": [{"id": "gv", "key": "grouped_on", "featureEnabled": True, "variables": []}],
                        "trafficAllocation": [{"entityId": "gv", "endOfRange": 10000}]}
    other = dict(group_experiment, id="g2", key="other",
                 variations=[{"id": "ov", "key": "other_on", "featureEnabled": True, "variables": []}],
                 trafficAllocation=[{"entityId": "ov", "endOfRange": 10000}])
    df["groups"] = [{"id": "grp", "policy": "random", "experiments": [group_experiment, other],
                     "trafficAllocation": [{"entityId": "e1", "endOfRange": 3000}, {"entityId": "g2", "endOfRange": 6000},
                                           {"entityId": "", "endOfRange": 8000}]}]
    df["experiments"][0]["trafficAllocation"] = [{"entityId": "on", "endOfRange": 0}]  # everyone reaches the rollout
    if not rule_is_last:
        everyone = {"id": "e9", "key": "everyone", "status": "Running", "layerId": "r1", "audienceIds": [],
                    "forcedVariations": {},
                    "variations": [{"id": "ee9", "key": "ee9", "featureEnabled": True, "variables": []}],
                    "trafficAllocation": [{"entityId": "ee9", "endOfRange": 10000}]}
        df["rollouts"][0]["experiments"].append(everyone)
    calls = [["decide", "flag", ["INCLUDE_REASONS"]], ["decide_all", ["INCLUDE_REASONS"]],
             ["is_feature_enabled", "flag"], ["get_feature_variable", None, "flag", "x"]]
    for user in ["user%d" % i for i in range(24)]:
        tally = apifuzz.compare_calls(df, user, {}, calls)
        assert tally.total_comparisons > 0
        assert not tally.differences, apifuzz.format_report(tally)


@pytest.mark.parametrize("keys", [[-1], [True, 1], [0, False], [None, "x"], [2.5, "2.5"], ["-1", -1], [1, 1.0, True]],
                         ids=repr)
def test_variables_named_by_datafile_keys_that_are_no_strings(keys: List[Any]) -> None:
    # optimizely-sdk's variables dict is keyed by the datafile's key values: -1 stays an int, and True, 1 and
    # 1.0 are one key to a dict (the first key, the last variable's value)
    df = datafile([variable("integer", str(i), id_="v%d" % i, key=k) for i, k in enumerate(keys)],
                  [{"id": "v0", "value": "7"}])
    assert_same(df, [["decide", "flag", ["INCLUDE_REASONS"]], ["decide_all", []],
                     ["get_all_feature_variables", "flag"], ["is_feature_enabled", "flag"]])


@pytest.mark.parametrize("shared", ["on", "ee", "elsewhere", ""])
def test_an_enabled_holdout_variation_sharing_its_id_with_a_rule_variation(shared: str) -> None:
    """A holdout's enabled variation whose id a rule's variation also has: the reference reads a holdout
    variation's values from its table by variation id like any other's, so it gets that variation's values
    (defaults where it gives none); with an id no variation has, every value is the typecast of None (null,
    false). The library always gave the latter (valuefuzz seed 3231)."""
    df = datafile([variable("integer", "1"), variable("string", "{\"a\": 1}", id_="v2", key="j", subType="json"),
                   variable("boolean", "true", id_="v3", key="b")], [{"id": "v1", "value": "2"}])
    holdout = _holdout("h", "holdout_h", shared, 10000)
    holdout["variations"][0]["featureEnabled"] = True
    holdout["variations"][0]["variables"] = [{"id": "v1", "value": "7"}]  # never read by the reference
    df["holdouts"] = [holdout]
    if shared == "elsewhere":  # a variation of another flag's rule, giving the json variable a value
        other = copy.deepcopy(df["rollouts"][0])
        other["id"], other["experiments"][0]["id"] = "r2", "e2"
        other["experiments"][0]["variations"][0].update(id="elsewhere", variables=[{"id": "v2", "value": "[3]"}])
        other["experiments"][0]["trafficAllocation"][0]["entityId"] = "elsewhere"
        df["rollouts"].append(other)
        df["featureFlags"].append({"id": "f2", "key": "other", "rolloutId": "r2", "experimentIds": [], "variables": []})
    assert_same(df, calls_for(["x", "j", "b"]))
