"""Differential test of DECISION notifications: the library's listeners (experiment.Client.add_listener)
against optimizely-sdk 5.7.0's (add_notification_listener(DECISION)), field for field with types.

For generated datafiles (datafile_generator.py; group experiments, holdouts, forced variations,
everyone-else rules, typecast failures...) and users drawn to hit their conditions, both sides make the
same calls and each notification of ours must equal the reference's:

* decide of every flag (type "flag": flag_key, enabled, variables, variation_key, rule_key, reasons,
  decision_event_dispatched, experiment_id, variation_id) with INCLUDE_REASONS, EXCLUDE_VARIABLES (its
  variables are {}), DISABLE_DECISION_EVENT, and none;
* decide_all, with and without ENABLED_FLAGS_ONLY (a notification for every flag, enabled or not);
* activate and get_variation of every experiment (type "ab-test", or "feature-test" for an experiment a
  flag lists: experiment_key and variation_key only);
* plus a datafile whose double variable is "-0" (-0.0 in the notification, as Python's float("-0")).

The user's attributes are compared when JSON can carry them all (str, bool, int, finite float, None).

Run (from the repository root, after `make lib`):
    EXPERIMENT_LIBRARY=$PWD/.build/release/libexperiment.so PYTHONPATH=bindings/python \\
        python3 -m pytest bindings/python/tests/test_notification_differential.py -q
"""

from __future__ import annotations

import json
import math
import os
import sys
from typing import Any, Dict, List, Optional, Tuple

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from datafile_generator import generate_datafile, generate_users  # noqa: E402
from test_differential import RecordingDispatcher, make_ours, make_reference, typed_diff  # noqa: E402

from optimizely.helpers import enums  # noqa: E402

import experiment  # noqa: E402

SEEDS = list(range(8))
USERS = 12
OPTION_SETS: List[List[str]] = [["INCLUDE_REASONS"], ["EXCLUDE_VARIABLES"], ["DISABLE_DECISION_EVENT"], [],
                                ["INCLUDE_REASONS", "EXCLUDE_VARIABLES"]]


def _json_safe(attributes: Dict[str, Any]) -> bool:
    for value in attributes.values():
        if value is None or isinstance(value, (str, bool, int)):
            continue
        if isinstance(value, float) and math.isfinite(value):
            continue
        return False
    return True


class Pair:
    """The reference and our client on one datafile, each with a DECISION listener."""

    def __init__(self, datafile_text: str) -> None:
        self.reference = make_reference(datafile_text, RecordingDispatcher())
        self.ours = make_ours(datafile_text, RecordingDispatcher())
        self.heard_reference: List[Dict[str, Any]] = []
        self.heard_ours: List[Dict[str, Any]] = []

        def on_reference(kind: str, user_id: str, attributes: Dict[str, Any], info: Dict[str, Any]) -> None:
            self.heard_reference.append({"type": kind, "user_id": user_id, "attributes": dict(attributes),
                                         "decision_info": json.loads(json.dumps(info))})

        self.reference.notification_center.add_notification_listener(enums.NotificationTypes.DECISION, on_reference)
        self.ours.add_listener("decision", lambda payload: self.heard_ours.append(payload))
        self.compared = 0

    def close(self) -> None:
        self.ours.close()
        self.reference.close()

    def check(self, call: str, attributes: Dict[str, Any]) -> None:
        """The notifications both sides gave since the last check must be equal."""
        reference, ours = self.heard_reference, self.heard_ours
        self.heard_reference, self.heard_ours = [], []
        assert len(ours) == len(reference), f"{call}: {len(reference)} notifications != ours {len(ours)}"
        for expected, got in zip(reference, ours):
            if not _json_safe(attributes):
                expected = dict(expected, attributes=None)
                got = dict(got, attributes=None)
            diff = typed_diff(expected, got)
            assert diff is None, f"{call}: {diff}\nreference {expected}\nours      {got}"
            self.compared += 1


def _experiment_keys(df: dict) -> List[str]:
    keys = [e["key"] for e in df["experiments"]]
    keys += [e["key"] for g in df["groups"] for e in g["experiments"]]
    return keys


@pytest.mark.parametrize("seed", SEEDS)
def test_decision_notifications_equal_the_reference(seed: int) -> None:
    df = generate_datafile(seed)
    text = json.dumps(df)
    pair = Pair(text)
    kinds = set()
    try:
        flags = [f["key"] for f in df["featureFlags"]]
        experiments = _experiment_keys(df)
        for index, (user_id, attributes) in enumerate(generate_users(seed, df, USERS)):
            context = pair.reference.create_user_context(user_id, attributes)
            for position, flag in enumerate(flags):
                options = OPTION_SETS[(index + position) % len(OPTION_SETS)]
                context.decide(flag, options)
                pair.ours.decide(user_id, flag, attributes, options)
                pair.check(f"seed {seed} user {user_id!r} decide {flag} {options}", attributes)
            for options in ([], ["ENABLED_FLAGS_ONLY", "INCLUDE_REASONS"]) if index % 3 == 0 else ():
                context.decide_all(options)
                pair.ours.decide_all(user_id, attributes, options)
                pair.check(f"seed {seed} user {user_id!r} decide_all {options}", attributes)
            for key in experiments:
                pair.reference.get_variation(key, user_id, attributes)
                pair.ours.get_variation(key, user_id, attributes)
                pair.check(f"seed {seed} user {user_id!r} get_variation {key}", attributes)
            for key in experiments[index % max(1, len(experiments)):][:2]:
                pair.reference.activate(key, user_id, attributes)
                pair.ours.activate(key, user_id, attributes)
                pair.check(f"seed {seed} user {user_id!r} activate {key}", attributes)
        assert pair.compared > 0
    finally:
        pair.close()


def test_every_kind_of_decision_notification_is_compared() -> None:
    """The seeds above give flag, ab-test and feature-test notifications, with and without experiment
    and variation ids, and excluded variables: the comparison cannot pass vacuously."""
    seen = set()
    for seed in SEEDS[:4]:
        df = generate_datafile(seed)
        pair = Pair(json.dumps(df))
        try:
            for user_id, attributes in generate_users(seed, df, 4):
                context = pair.reference.create_user_context(user_id, attributes)
                for flag in [f["key"] for f in df["featureFlags"]]:
                    context.decide(flag, ["EXCLUDE_VARIABLES"])
                    context.decide(flag)
                for key in _experiment_keys(df):
                    pair.reference.get_variation(key, user_id, attributes)
            for heard in pair.heard_reference:
                info = heard["decision_info"]
                seen.add(heard["type"])
                if heard["type"] == "flag":
                    seen.add("flag with experiment_id" if info["experiment_id"] else "flag without experiment_id")
                    seen.add("flag with variables" if info["variables"] else "flag without variables")
        finally:
            pair.close()
    assert {"flag", "ab-test", "feature-test", "flag with experiment_id", "flag without experiment_id",
            "flag with variables", "flag without variables"} <= seen, seen


NEGATIVE_ZERO = {
    "version": "4", "projectId": "1", "accountId": "2", "revision": "3", "attributes": [], "events": [],
    "audiences": [], "groups": [], "anonymizeIP": -1,
    "experiments": [{"id": "10", "key": "exp", "status": "Running", "layerId": "9", "audienceIds": [],
                     "forcedVariations": {}, "trafficAllocation": [{"entityId": "20", "endOfRange": 10000}],
                     "variations": [{"id": "20", "key": "on", "featureEnabled": True,
                                     "variables": [{"id": "1", "value": "-0.0"}]}]}],
    "featureFlags": [{"id": "30", "key": "flag", "experimentIds": ["10"], "rolloutId": "",
                      "variables": [{"id": "1", "key": "d", "type": "double", "defaultValue": "-0"},
                                    {"id": "2", "key": "e", "type": "double", "defaultValue": "-0"}]}],
    "rollouts": [],
}


def test_negative_zero_double_variable_and_raw_anonymize_ip() -> None:
    dispatcher_reference, dispatcher_ours = RecordingDispatcher(), RecordingDispatcher()
    text = json.dumps(NEGATIVE_ZERO)
    reference = make_reference(text, dispatcher_reference)
    ours = make_ours(text, dispatcher_ours)
    pair_heard: List[Tuple[str, Dict[str, Any]]] = []
    ours.add_listener("decision", lambda payload: pair_heard.append(payload["decision_info"]))
    try:
        expected = reference.create_user_context("u").decide("flag").variables
        got = ours.decide("u", "flag").variables
        assert typed_diff(expected, got) is None, (expected, got)
        assert math.copysign(1.0, got["d"]) == -1.0 and math.copysign(1.0, got["e"]) == -1.0
        assert math.copysign(1.0, pair_heard[0]["variables"]["d"]) == -1.0
        # The impression carries anonymizeIP as the datafile has it (-1), as the reference's does.
        assert dispatcher_reference.events[0].params["anonymize_ip"] == -1
        sent = dispatcher_ours.events[0]
        params = sent["params"] if isinstance(sent, dict) else sent.params
        assert type(params["anonymize_ip"]) is int and params["anonymize_ip"] == -1
    finally:
        ours.close()
        reference.close()


@pytest.mark.parametrize("seed", SEEDS[:4])
def test_forced_decision_notifications_equal_the_reference(seed: int) -> None:
    """Flag-level forced decisions (no rule: experiment_id None) and rule-level ones, through user contexts."""
    from optimizely.optimizely_user_context import OptimizelyUserContext as Reference

    df = generate_datafile(seed)
    pair = Pair(json.dumps(df))
    try:
        rules: List[Tuple[str, Optional[str], str]] = []
        experiments_by_id = {e["id"]: e for e in df["experiments"]}
        experiments_by_id.update({e["id"]: e for g in df["groups"] for e in g["experiments"]})
        rollouts = {r["id"]: r for r in df["rollouts"]}
        for flag in df["featureFlags"]:
            candidates = [experiments_by_id[i] for i in flag["experimentIds"] if i in experiments_by_id]
            candidates += rollouts.get(flag["rolloutId"], {}).get("experiments", [])
            for rule in candidates[:2]:
                for variation in rule["variations"][:1]:
                    rules.append((flag["key"], None, variation["key"]))
                    rules.append((flag["key"], rule["key"], variation["key"]))
            rules.append((flag["key"], None, "no_such_variation"))
        assert rules
        for index, (flag_key, rule_key, variation_key) in enumerate(rules):
            user_id = "forced_%d" % index
            reference = pair.reference.create_user_context(user_id, {})
            reference.set_forced_decision(Reference.OptimizelyDecisionContext(flag_key, rule_key),
                                          Reference.OptimizelyForcedDecision(variation_key))
            ours = pair.ours.create_user_context(user_id, {})
            ours.set_forced_decision(experiment.OptimizelyDecisionContext(flag_key, rule_key),
                                     experiment.OptimizelyForcedDecision(variation_key))
            for options in (["INCLUDE_REASONS"], ["EXCLUDE_VARIABLES"]):
                reference.decide(flag_key, options)
                ours.decide(flag_key, options)
                pair.check(f"seed {seed} forced {flag_key}/{rule_key} -> {variation_key} {options}", {})
        assert pair.compared >= len(rules)
    finally:
        pair.close()


@pytest.mark.parametrize("rule_id", [601, 6.5, True, "601"])
def test_flag_notification_carries_a_rule_id_that_is_no_string_as_it_is(rule_id: Any) -> None:
    """A rollout rule's id outside the schema (apifuzz seed 5617): the flag notification's experiment_id is the
    datafile's value as it is, as the reference's is (ours was its text)."""
    rule = {"id": rule_id, "key": "everyone", "status": "Running", "layerId": "502", "audienceIds": [],
            "forcedVariations": {}, "variations": [{"id": "611", "key": "on", "featureEnabled": True, "variables": []}],
            "trafficAllocation": [{"entityId": "611", "endOfRange": 10000}]}
    df = {"version": "4", "projectId": "1", "accountId": "2", "revision": "3", "attributes": [], "events": [],
          "audiences": [], "groups": [], "experiments": [],
          "featureFlags": [{"id": "401", "key": "flag", "experimentIds": [], "rolloutId": "502", "variables": []}],
          "rollouts": [{"id": "502", "experiments": [rule]}]}
    pair = Pair(json.dumps(df))
    try:
        for options in ([], ["INCLUDE_REASONS"]):
            pair.reference.create_user_context("u", {}).decide("flag", options)
            pair.ours.decide("u", "flag", {}, options)
            pair.check(f"decide {options}", {})
        assert pair.compared == 2
    finally:
        pair.close()
