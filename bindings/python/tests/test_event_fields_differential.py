"""Differential test of event payload fields that come from odd datafile values, against optimizely-sdk
5.7.0 (every payload both sides dispatch compared with types, as test_differential compares them):

* an attribute whose id is "" (left out: the reference's `if attribute_id:`), also with a reserved "$opt_"
  key and when the last of two attributes with one key has the empty id;
* "anonymizeIP" of any JSON type (sent as it is) and "botFiltering" of any type (sent only when boolean);
* activate of a variation whose key is "" (the reference activates nobody: None, no impression);
* an experiment, holdout or variation whose id is "" (the impression names no variation).

Run (from the repository root, after `make lib`):
    EXPERIMENT_LIBRARY=$PWD/.build/release/libexperiment.so PYTHONPATH=bindings/python \\
        python3 -m pytest bindings/python/tests/test_event_fields_differential.py -q
"""

from __future__ import annotations

import copy
import json
import os
import sys
from typing import Any, Callable, Dict, List

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_differential import RecordingDispatcher, make_ours, make_reference, normalize_event, typed_diff  # noqa: E402

import experiment  # noqa: E402


def _experiment(id_: str, key: str, variation_ids: List[str], variation_keys: List[str], layer: str = "") -> Dict[str, Any]:
    return {"id": id_, "key": key, "status": "Running", "layerId": layer, "audienceIds": [], "forcedVariations": {},
            "variations": [{"id": v, "key": k, "featureEnabled": True, "variables": []}
                           for v, k in zip(variation_ids, variation_keys)],
            "trafficAllocation": [{"entityId": variation_ids[0], "endOfRange": 10000}]}


BASE: Dict[str, Any] = {
    "version": "4", "projectId": "1", "accountId": "2", "revision": "3", "sendFlagDecisions": True,
    "attributes": [{"id": "101", "key": "plan"}, {"id": "", "key": "age"}, {"id": "", "key": "$opt_hidden"},
                   {"id": "102", "key": "tier"}, {"id": "", "key": "tier"}],
    "events": [{"id": "201", "key": "buy", "experimentIds": []}],
    "audiences": [], "groups": [],
    "experiments": [_experiment("301", "ab", ["311"], ["treatment"], "9"),
                    _experiment("302", "ab_empty_key", ["312"], [""], "9"),
                    _experiment("", "ab_empty_id", ["313"], ["on"], "9"),
                    _experiment("304", "flag_test", ["314"], ["variant"], "9")],
    "featureFlags": [{"id": "401", "key": "flag", "experimentIds": ["304"], "rolloutId": "501", "variables": []},
                     {"id": "402", "key": "flag_rollout", "experimentIds": [], "rolloutId": "502", "variables": []}],
    "rollouts": [{"id": "501", "experiments": []},
                 {"id": "502", "experiments": [_experiment("601", "everyone", [""], ["empty_id_variation"], "502")]}],
}

ATTRIBUTES = {"plan": "pro", "age": 30, "$opt_hidden": "x", "$opt_shown": "y", "tier": "gold"}


def _calls(datafile: Dict[str, Any]) -> List[Callable[[Any, bool], Any]]:
    """Every call of the comparison: (client, is_reference) -> result."""
    def decide(flag: str) -> Callable[[Any, bool], Any]:
        def call(client: Any, reference: bool) -> Any:
            if reference:
                d = client.create_user_context("u", ATTRIBUTES).decide(flag)
            else:
                d = client.decide("u", flag, ATTRIBUTES)
            return [d.flag_key, d.enabled, d.variation_key, d.rule_key]
        return call

    calls = [decide(f["key"]) for f in datafile["featureFlags"]]
    for e in datafile["experiments"]:
        calls.append(lambda client, reference, key=e["key"]: client.activate(key, "u", ATTRIBUTES))
    calls.append(lambda client, reference: client.track("buy", "u", ATTRIBUTES))
    return calls


def _compare(datafile: Dict[str, Any]) -> int:
    text = json.dumps(datafile)
    sent_reference, sent_ours = RecordingDispatcher(), RecordingDispatcher()
    reference = make_reference(text, sent_reference)
    ours = make_ours(text, sent_ours)
    compared = 0
    try:
        for index, call in enumerate(_calls(datafile)):
            expected, got = call(reference, True), call(ours, False)
            assert typed_diff(expected, got) is None, f"call {index}: reference {expected!r}, ours {got!r}"
            if hasattr(ours, "flush"):
                ours.flush()
            assert len(sent_ours.events) == len(sent_reference.events), (
                f"call {index}: {len(sent_reference.events)} events != ours {len(sent_ours.events)}")
            for e, g in zip(sent_reference.events, sent_ours.events):
                expected_event, _ = normalize_event(e)
                got_event, problems = normalize_event(g)
                assert not problems, problems
                diff = typed_diff(expected_event, got_event)
                assert diff is None, f"call {index}: {diff}\nreference {expected_event}\nours      {got_event}"
                compared += 1
            sent_reference.events.clear()
            sent_ours.events.clear()
    finally:
        ours.close()
        reference.close()
    return compared


def test_empty_ids_and_keys_give_the_reference_payloads() -> None:
    assert _compare(BASE) >= 5


@pytest.mark.parametrize("value", [True, False, None, -1, 0, 1, 2.5, 1e2, "", "x", [], ["x"], {}, {"a": 1, "é": [1.5]},
                                   10**20, -10**20, [10**25], {"a": 10**30}])
def test_anonymize_ip_and_bot_filtering_of_any_type(value: Any) -> None:
    datafile = copy.deepcopy(BASE)
    datafile["anonymizeIP"] = value
    datafile["botFiltering"] = value
    assert _compare(datafile) >= 5


def test_empty_holdout_id() -> None:
    datafile = copy.deepcopy(BASE)
    # (Without the experiment whose id is "" too: the reference's maps by id would mix the two up.)
    datafile["experiments"] = [e for e in datafile["experiments"] if e["id"]]
    datafile["holdouts"] = [{"id": "", "key": "holdout", "status": "Running", "audienceIds": [],
                             "variations": [{"id": "701", "key": "ho_off", "featureEnabled": False, "variables": []}],
                             "trafficAllocation": [{"entityId": "701", "endOfRange": 10000}]}]
    assert _compare(datafile) >= 3


def test_activate_of_a_variation_whose_id_another_key_repeats() -> None:
    """The reference's activate answers the decided variation's key but its impression names the last
    variation written with that id (its map by id): "control_dup" here. Found by difffuzz over the
    reference's own test datafiles (a variation duplicated by id under another key)."""
    datafile = copy.deepcopy(BASE)
    ab = datafile["experiments"][0]
    ab["variations"].insert(1, {"id": ab["variations"][0]["id"], "key": "control_dup", "featureEnabled": True,
                                "variables": []})
    assert _compare(datafile) >= 5


@pytest.mark.parametrize("layer_id", [5.5, 7, None, True, "", "x", [1], {}])
@pytest.mark.parametrize("rule_id", ["601", 601, 6.5, True, None, ""])
def test_rule_ids_and_layer_ids_of_any_type(layer_id: Any, rule_id: Any) -> None:
    """Outside the schema (a rollout rule): the impression's experiment_id is the rule's id as it is, and its
    campaign id the layerId when that is text, else the rule id when that is, else "" (the reference's
    event_id_normalizer). Ours sent both as Python's str()."""
    datafile = copy.deepcopy(BASE)
    datafile["experiments"] = [e for e in datafile["experiments"] if e["id"]]
    rule = datafile["rollouts"][1]["experiments"][0]
    rule["layerId"], rule["id"] = layer_id, rule_id
    rule["variations"][0]["id"] = rule["trafficAllocation"][0]["entityId"] = "611"
    assert _compare(datafile) >= 5


@pytest.mark.parametrize("holdout_id", [7, 7.5, False])
def test_holdout_ids_of_any_type(holdout_id: Any) -> None:
    datafile = copy.deepcopy(BASE)
    datafile["experiments"] = [e for e in datafile["experiments"] if e["id"]]
    datafile["holdouts"] = [{"id": holdout_id, "key": "holdout", "status": "Running", "audienceIds": [],
                             "variations": [{"id": "701", "key": "ho_off", "featureEnabled": False, "variables": []}],
                             "trafficAllocation": [{"entityId": "701", "endOfRange": 10000}]}]
    assert _compare(datafile) >= 3
