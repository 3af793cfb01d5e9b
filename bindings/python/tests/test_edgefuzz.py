"""The edge-axis differential fuzzer (edgefuzz.py) on a fixed slice, and one regression test per difference it
found, each on a small datafile of this project's own, compared with optimizely-sdk 5.7.0.

The differences (all fixed in ExperimentCore):
* an integer id past 64 bits (a delivery rule's id: its bucketing key) was formatted as json-c clamped it
  (9223372036854775807) where the reference formats Python's exact int;
* a delivery rule's traffic range whose `entityId` is a number (or boolean) led nowhere even when a variation
  has an equal id (`7`, `7.0`, `True == 1`): the reference's map by variation id finds it;
* a delivery rule whose id another rollout defines again later: the reference decides with the later
  definition (audience, traffic, variations) but names the decision after the rollout's own rule (key,
  campaign), where ours took everything from the later definition;
* a condition value with an unpaired surrogate escape (`"x\\ud800y"`) read as U+FFFD matched a user value
  holding U+FFFD, which the reference's value never equals.
* canonically equivalent ids (`"\\u00e9"`, `"e\\u0301"`) were one id to Swift's String in the flag's variable
  ids, variable values by variation id and the flag's variations by id (the impression's variation key).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Dict, List, Tuple

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import edgefuzz  # noqa: E402
from test_differential import RecordingDispatcher, normalize_event  # noqa: E402

SLICE = range(0, 150)


def _require_library() -> None:
    if edgefuzz.make_ours is None:  # pragma: no cover
        pytest.skip("no library")


def test_edgefuzz_slice_has_no_differences() -> None:
    tally = edgefuzz.run(SLICE)
    assert tally.comparisons > 5000
    details = [f"{sig}: {tally.examples[sig]}" for sig in tally.differences]
    assert not tally.differences, "\n".join(details)[:4000]


def test_edgefuzz_generator_reaches_its_axes() -> None:
    """The fuzzer's datafiles do carry the raw spellings (else the slice proves nothing)."""
    texts = [edgefuzz.Builder(seed).build()[1] for seed in SLICE]
    joined = "\n".join(texts)
    for token in ("1E2", "100000000000000000000000", "NaN", "\\ud800", "e\\u0301", "-0"):
        assert token in joined, token
    assert any('"entityId": 7' in t or '"entityId": 1e22' in t or '"entityId": true' in t for t in texts)


# ---------------------------------------------------------------------------------------------------
# Regression datafiles
# ---------------------------------------------------------------------------------------------------

def _datafile(rule_id: Any = "r1", var_id: Any = "v3", entity_id: Any = "v3", leaf: Any = None,
              second_rollout: bool = False) -> dict:
    audiences = []
    exp_audiences: List[str] = []
    if leaf is not None:
        audiences = [{"id": "a1", "name": "A", "conditions": json.dumps(["or", leaf])}]
        exp_audiences = ["a1"]
    rollouts = [{"id": "ro1", "experiments": [
        {"id": rule_id, "key": "everyone", "status": "Running", "layerId": "l2", "audienceIds": [],
         "forcedVariations": {}, "variations": [{"id": var_id, "key": "dv", "featureEnabled": True, "variables": []}],
         "trafficAllocation": [{"entityId": entity_id, "endOfRange": 5000}]}]}]
    flags = [{"id": "f1", "key": "flag", "rolloutId": "ro1", "experimentIds": ["e1"], "variables": []}]
    if second_rollout:
        rollouts.append({"id": "ro2", "experiments": [
            {"id": rule_id, "key": "other_everyone", "status": "Running", "layerId": "l3", "audienceIds": [],
             "forcedVariations": {},
             "variations": [{"id": "v9", "key": "other_dv", "featureEnabled": False, "variables": []}],
             "trafficAllocation": [{"entityId": "v9", "endOfRange": 10000}]}]})
        flags.append({"id": "f2", "key": "flag2", "rolloutId": "ro2", "experimentIds": [], "variables": []})
    return {
        "version": "4", "projectId": "p", "accountId": "acc", "revision": "1", "anonymizeIP": True,
        "botFiltering": False, "sendFlagDecisions": True,
        "attributes": [{"id": "at1", "key": "a"}], "events": [], "audiences": audiences, "typedAudiences": [],
        "groups": [],
        "experiments": [{"id": "e1", "key": "exp", "status": "Running", "layerId": "l1", "audienceIds": exp_audiences,
                         "forcedVariations": {},
                         "variations": [{"id": "v1", "key": "on", "featureEnabled": True, "variables": []}],
                         "trafficAllocation": [{"entityId": "v1", "endOfRange": 2000}]}],
        "rollouts": rollouts, "featureFlags": flags}


def _compare(text: str, users: List[Tuple[str, Dict[str, Any]]]) -> int:
    """Decides every flag for every user on both sides (reasons, then an impression): the number of
    comparisons; fails on the first difference."""
    rd, od = RecordingDispatcher(), RecordingDispatcher()
    ref = edgefuzz.make_reference(text, rd)
    assert edgefuzz.reference_accepts(ref)
    ours = edgefuzz.make_ours(text, od)
    compared = 0
    try:
        for user_id, attrs in users:
            r_all = ref.create_user_context(user_id, dict(attrs)).decide_all(["INCLUDE_REASONS"])
            o_all = ours.create_user_context(user_id, dict(attrs)).decide_all(["INCLUDE_REASONS"])
            ours.flush()
            assert sorted(r_all) == sorted(o_all)
            for key in r_all:
                assert edgefuzz._decision(o_all[key]) == edgefuzz._decision(r_all[key]), (user_id, key)
                compared += 1
            assert [normalize_event(e)[0] for e in od.events] == [normalize_event(e)[0] for e in rd.events], user_id
            rd.events.clear()
            od.events.clear()
    finally:
        ours.close()
    return compared


USERS = [(f"user{i}", {"a": "x\ufffdy" if i % 2 else "\ufffd"}) for i in range(40)]


@pytest.mark.parametrize("token", ["10000000000000000000000000", "-9223372036854775809", "18446744073709551616"])
def test_integer_rule_id_past_64_bits_is_its_exact_bucketing_key(token: str) -> None:
    text = json.dumps(_datafile(rule_id="RULE_ID")).replace('"RULE_ID"', token)
    assert _compare(text, USERS) == len(USERS)


@pytest.mark.parametrize("var_id,entity_id", [("7", "7"), ("7", "7.0"), ("1e22", "1e22"), ("1", "true"),
                                              ("7.5", "7.5"), ("100000000000000000000000", "100000000000000000000000")])
def test_numeric_entity_id_names_the_variation_with_an_equal_id(var_id: str, entity_id: str) -> None:
    text = (json.dumps(_datafile(var_id="VAR_ID", entity_id="ENTITY_ID"))
            .replace('"VAR_ID"', var_id).replace('"ENTITY_ID"', entity_id))
    assert _compare(text, USERS) == len(USERS)


@pytest.mark.parametrize("rule_id", ['"7"', "null", "7"])
def test_rule_id_defined_again_by_another_rollout(rule_id: str) -> None:
    text = json.dumps(_datafile(rule_id="RULE_ID", second_rollout=True)).replace('"RULE_ID"', rule_id)
    assert _compare(text, USERS) == 2 * len(USERS)


@pytest.mark.parametrize("match,value", [("exact", "x\\ud800y"), ("exact", "\\ud800"), ("substring", "\\udfff"),
                                         ("substring", "x\\ud800"), ("semver_eq", "1.0.0-\\ud800"),
                                         ("semver_gt", "1.0.0-\\ud800"), ("semver_lt", "1.0.0-\\ud800"),
                                         ("exact", "\\ud83d\\ude00"), ("exact", "\\ufffd")])
def test_condition_value_with_unpaired_surrogate_escape(match: str, value: str) -> None:
    leaf = {"name": "a", "type": "custom_attribute", "match": match, "value": "VALUE"}
    text = json.dumps(_datafile(leaf=leaf)).replace("VALUE", value.replace("\\", "\\\\"))
    users = USERS + [(f"v{i}", {"a": v}) for i, v in enumerate(
        ["1.0.0-\ufffd", "1.0.0-\ue000", "1.0.0-a", "\U0001F600", "x", "1.0.0-\U0001F600"])]
    assert _compare(text, users) == len(users)


# ---------------------------------------------------------------------------------------------------
# Text that is canonically equivalent but not the same code points ("\u00e9" and "e\u0301"): Python's str
# tells them apart, Swift's String == and hashing do not. Found by edgefuzz (rule ids of two rollouts).
# ---------------------------------------------------------------------------------------------------

NFC, NFD = "\u00e9", "e\u0301"


def test_canonically_equivalent_rule_ids_are_two_rules() -> None:
    df = _datafile(rule_id="r" + NFC, second_rollout=True)
    df["rollouts"][1]["experiments"][0]["id"] = "r" + NFD
    assert _compare(json.dumps(df), USERS) == 2 * len(USERS)


@pytest.mark.parametrize("flag_variable,usage", [("v" + NFC, "v" + NFD), ("v" + NFD, "v" + NFC), ("v" + NFC, "v" + NFC)])
def test_variable_values_are_found_by_the_very_variable_id(flag_variable: str, usage: str) -> None:
    # The reference keeps each variation's values in a dict by variable id and looks them up by the flag's
    # variable ids: a canonically equivalent id is another variable, so the default is served.
    df = _datafile()
    df["featureFlags"][0]["variables"] = [{"id": flag_variable, "key": "color", "type": "string", "defaultValue": "red"}]
    df["experiments"][0]["variations"][0]["variables"] = [{"id": usage, "value": "blue"}]
    df["experiments"][0]["trafficAllocation"] = [{"entityId": "v1", "endOfRange": 10000}]
    assert _compare(json.dumps(df), USERS) == len(USERS)


def test_canonically_equivalent_variation_ids_of_a_flag_are_two_variations() -> None:
    df = _datafile()
    df["featureFlags"][0]["variables"] = [{"id": "x", "key": "color", "type": "string", "defaultValue": "red"}]
    df["experiments"][0]["variations"] = [
        {"id": "v" + NFC, "key": "on", "featureEnabled": True, "variables": [{"id": "x", "value": "blue"}]},
        {"id": "v" + NFD, "key": "off", "featureEnabled": False, "variables": [{"id": "x", "value": "green"}]}]
    df["experiments"][0]["trafficAllocation"] = [{"entityId": "v" + NFC, "endOfRange": 5000},
                                                 {"entityId": "v" + NFD, "endOfRange": 10000}]
    assert _compare(json.dumps(df), USERS) == len(USERS)


def _unicode_datafile() -> dict:
    df = _datafile(leaf={"name": "at" + NFC, "type": "custom_attribute", "match": "exists"})
    df["attributes"] = [{"id": "at1", "key": "at" + NFC}]
    df["featureFlags"][0]["key"] = "fl" + NFC
    df["experiments"][0]["key"] = "ex" + NFC
    df["experiments"][0]["variations"][0]["key"] = "on" + NFC
    return df


@pytest.mark.parametrize("flag,rule,variation", [
    ("fl" + NFC, None, "on" + NFD), ("fl" + NFC, "ex" + NFD, "on" + NFC), ("fl" + NFD, None, "on" + NFC),
    ("fl" + NFC, "ex" + NFC, "on" + NFD), ("fl" + NFC, "ex" + NFC, "on" + NFC)])
def test_forced_decisions_match_keys_by_code_points(flag: str, rule: Any, variation: str) -> None:
    import apifuzz
    calls = [["set_forced_decision", [flag, rule], variation], ["get_forced_decision", ["fl" + NFC, rule]],
             ["decide", "fl" + NFC, ["INCLUDE_REASONS"]], ["decide_all", ["INCLUDE_REASONS"]]]
    tally = apifuzz.compare_calls(_unicode_datafile(), "user-1", {"at" + NFC: 1}, calls)
    assert tally.total_comparisons > 0
    assert not tally.differences, tally.examples


@pytest.mark.parametrize("experiment,variation", [("ex" + NFC, "on" + NFD), ("ex" + NFD, "on" + NFC),
                                                  ("ex" + NFC, "on" + NFC)])
def test_forced_variations_match_keys_by_code_points(experiment: str, variation: str) -> None:
    import apifuzz
    calls = [["set_forced_variation", experiment, variation], ["get_forced_variation", "ex" + NFC],
             ["get_forced_variation", "ex" + NFD], ["get_variation", "ex" + NFC], ["activate", "ex" + NFC]]
    for user_id in ("u" + NFC, "u" + NFD):
        tally = apifuzz.compare_calls(_unicode_datafile(), user_id, {"at" + NFC: 1}, calls)
        assert tally.total_comparisons > 0
        assert not tally.differences, tally.examples


# Versions with other scripts' decimal digits beside other non-ASCII text: Python's isdigit()/int() read
# the digits of a part made only of digits; any other part compares by code points as written (ours read
# such a version as invalid, or compared a suffix after turning its digits into ASCII).
@pytest.mark.parametrize("match", ["semver_eq", "semver_gt", "semver_lt", "semver_ge", "semver_le"])
@pytest.mark.parametrize("target", ["\u0661-019\u00a0", "1.0.0-\u0661", "\u0661.\u0662.\u0663", "1.\u0662.3-\u00e9",
                                    "1.2.3-a\u0661"])
def test_versions_with_unicode_digits_and_other_text(match: str, target: str) -> None:
    leaf = {"name": "a", "type": "custom_attribute", "match": match, "value": target}
    text = json.dumps(_datafile(leaf=leaf))
    versions = ["\u0661-019\u00a0\u0661-019\u00a0", "1.0.0-a", "1.0.0-\u0662", "1.2.3", "\u0661.2.10", "1.2-\u00e9",
                "1.2.3-a\u0662", "1.2.3-a1", "\u0661-019", "1.0.0-\u00e9"]
    users = [(f"user{i}-{j}", {"a": v}) for i, v in enumerate(versions) for j in range(3)]
    assert _compare(text, users) == len(users)


@pytest.mark.parametrize("segments", [["s" + NFC, "s" + NFD], ["s" + NFD, "s" + NFC], ["s" + NFC], ["s" + NFD],
                                      ["s" + NFC, "s" + NFC]])
def test_qualified_segments_are_told_apart_by_code_points(segments: List[str]) -> None:
    import apifuzz
    df = _datafile(leaf={"name": "odp.audiences", "type": "third_party_dimension", "match": "qualified",
                         "value": "s" + NFD})
    calls = [["set_qualified_segments", segments], ["decide", "flag", ["INCLUDE_REASONS"]],
             ["decide_all", ["INCLUDE_REASONS"]]]
    tally = apifuzz.compare_calls(df, "user-1", {}, calls)
    assert tally.total_comparisons > 0
    assert not tally.differences, tally.examples


def test_a_profile_entry_counts_only_for_the_very_experiment_id() -> None:
    import apifuzz
    df = _datafile()
    df["experiments"][0]["id"] = "e" + NFC
    df["experiments"][0]["trafficAllocation"] = [{"entityId": "v1", "endOfRange": 0}]
    df["experiments"][0]["variations"].append({"id": "v2", "key": "off", "featureEnabled": False, "variables": []})
    df["featureFlags"][0]["experimentIds"] = ["e" + NFC]
    for stored in ("e" + NFD, "e" + NFC):
        profiles = {"user-1": {"user_id": "user-1", "experiment_bucket_map": {stored: {"variation_id": "v2"}}}}
        calls = [["decide", "flag", ["INCLUDE_REASONS"]], ["get_variation", "exp"], ["activate", "exp"]]
        tally = apifuzz.compare_calls(df, "user-1", {}, calls, profiles=profiles)
        assert tally.total_comparisons > 0
        assert not tally.differences, tally.examples


# Python's isdigit() accepts superscripts and circled digits ("²", "①"), so split_version does, while int()
# raises on them: the reference answers from the parts compared before one (here "2" > "1" decides) and
# raises only on reaching it (no answer). Ours took such a version for invalid (edgefuzz seed 7716).
@pytest.mark.parametrize("match", ["semver_eq", "semver_gt", "semver_lt", "semver_ge", "semver_le"])
@pytest.mark.parametrize("target", ["1.2", "3", "1"])
def test_versions_with_superscript_digits_decide_by_the_parts_before_them(match: str, target: str) -> None:
    leaf = {"name": "a", "type": "custom_attribute", "match": match, "value": target}
    text = json.dumps(_datafile(leaf=leaf))
    versions = ["2.99999999999999999999\u00b2", "0.\u00b2", "2.\u2460", "2.\u00b2", "4.\u00b9-x"]
    users = [(f"user{i}-{j}", {"a": v}) for i, v in enumerate(versions) for j in range(3)]
    assert _compare(text, users) > 0


def test_impression_names_the_flag_variation_of_the_very_id() -> None:
    """Two variations of a rule whose ids are canonically equivalent ("\u00e9", "e\u0301"): the impression's
    metadata.variation_key is the flag variation with the very id (Python's ==), not the first equivalent
    one (edgefuzz seed 6190)."""
    df = _datafile()
    rule = df["rollouts"][0]["experiments"][-1]
    rule["variations"] = [{"id": "v" + NFC, "key": "first", "featureEnabled": True, "variables": []},
                          {"id": "v" + NFD, "key": "second", "featureEnabled": False, "variables": []}]
    rule["trafficAllocation"] = [{"entityId": "v" + NFC, "endOfRange": 5000},
                                 {"entityId": "v" + NFD, "endOfRange": 10000}]
    users = [(f"user{i}", {}) for i in range(24)]
    assert _compare(json.dumps(df), users) == len(users)
