"""Decision strings holding NUL bytes come back whole, as the reference SDK (optimizely-sdk) returns them:
reasons quoting a user id with NUL, and datafile keys with "\\u0000" (flag, rule and variation keys).

The library hands them out through exp_decision_text_n (the struct's char * fields end at the first NUL).
Run here with the C accelerator when it is built, and once more in a child with EXPERIMENT_NO_SPEEDUPS=1
(the ctypes path).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any, Dict, Tuple

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from test_differential import RecordingDispatcher, make_ours, make_reference  # noqa: E402

import experiment  # noqa: E402
from experiment import client as client_module  # noqa: E402

NUL_USERS = ("a\0b", "\0", "user\0")
REASONS = ["INCLUDE_REASONS"]


def _datafile() -> str:
    """Two flags: "plain" (an everyone rollout with key "rule\\0one", variation "o\\0n") and "fl\\0ag" (an
    A/B experiment "exp\\0one" on its own, variations "va\\0r" / "control")."""
    everyone = {"id": "1", "name": "everyone", "conditions": json.dumps(["or", {"match": "exists", "name": "x",
                                                                                "type": "custom_attribute"}])}
    rollout = {"id": "r1", "experiments": [{
        "id": "5001", "key": "rule\0one", "status": "Running", "layerId": "r1", "audienceIds": [],
        "audienceConditions": [], "forcedVariations": {},
        "variations": [{"id": "9001", "key": "o\0n", "featureEnabled": True, "variables": []}],
        "trafficAllocation": [{"entityId": "9001", "endOfRange": 10000}]}]}
    empty_rollout = {"id": "r2", "experiments": []}
    experiment_rule = {
        "id": "6001", "key": "exp\0one", "status": "Running", "layerId": "l6", "audienceIds": [],
        "audienceConditions": [], "forcedVariations": {},
        "variations": [{"id": "9101", "key": "va\0r", "featureEnabled": True, "variables": []},
                       {"id": "9102", "key": "control", "featureEnabled": False, "variables": []}],
        "trafficAllocation": [{"entityId": "9101", "endOfRange": 5000}, {"entityId": "9102", "endOfRange": 10000}]}
    return json.dumps({
        "version": "4", "projectId": "1", "accountId": "1", "revision": "1", "anonymizeIP": False,
        "botFiltering": False, "sendFlagDecisions": True, "attributes": [{"id": "900", "key": "x"}],
        "audiences": [everyone], "typedAudiences": [], "experiments": [experiment_rule], "groups": [],
        "featureFlags": [
            {"id": "20001", "key": "plain", "rolloutId": "r1", "experimentIds": [], "variables": []},
            {"id": "20002", "key": "fl\0ag", "rolloutId": "r2", "experimentIds": ["6001"], "variables": []}],
        "rollouts": [rollout, empty_rollout],
        "events": [{"id": "700", "key": "purchase", "experimentIds": []}],
    })


@pytest.fixture(scope="module")
def pair() -> Any:
    datafile = _datafile()
    ref = make_reference(datafile, RecordingDispatcher())
    ours = make_ours(datafile, RecordingDispatcher())
    yield ref, ours
    ours.close()
    ref.close()


def _whole(decision: Any) -> Tuple[Any, ...]:
    return (decision.flag_key, decision.enabled, decision.variation_key, decision.rule_key, list(decision.reasons))


def _by_flag(decisions: Dict[str, Any]) -> Dict[str, Tuple[Any, ...]]:
    return {key: _whole(d) for key, d in decisions.items()}


@pytest.mark.parametrize("user", NUL_USERS, ids=repr)
def test_reasons_quoting_a_user_id_with_nul_are_the_references(pair: Any, user: str) -> None:
    ref, ours = pair
    for flag in ("plain", "fl\0ag"):
        expected = ref.create_user_context(user, {}).decide(flag, REASONS)
        assert any(user in reason for reason in expected.reasons), expected.reasons  # the test can fail
        assert _whole(ours.decide(user, flag, None, REASONS)) == _whole(expected)
        assert _whole(ours.create_user_context(user).decide(flag, REASONS)) == _whole(expected)


@pytest.mark.parametrize("options", [[], REASONS], ids=["plain", "reasons"])
def test_datafile_keys_with_nul_come_back_whole_from_decide_all(pair: Any, options: Any) -> None:
    ref, ours = pair
    for user in ("u1", "u2", "u3", "a\0b"):
        expected = _by_flag(ref.create_user_context(user, {}).decide_all(options))
        assert "fl\0ag" in expected
        assert _by_flag(ours.decide_all(user, None, options)) == expected
        assert _by_flag(ours.create_user_context(user).decide_all(options)) == expected
        keys = ["fl\0ag", "plain", "no\0such"]
        expected = _by_flag(ref.create_user_context(user, {}).decide_for_keys(keys, options))
        assert _by_flag(ours.decide_for_keys(user, keys, None, options)) == expected
        assert _by_flag(ours.create_user_context(user).decide_for_keys(keys, options)) == expected


def test_variation_and_rule_keys_with_nul_come_back_whole(pair: Any) -> None:
    ref, ours = pair
    seen = set()
    for number in range(40):
        user = "user-%d" % number
        for flag in ("plain", "fl\0ag"):
            expected = ref.create_user_context(user, {}).decide(flag)
            got = ours.decide(user, flag)
            assert _whole(got) == _whole(expected)
            seen.add((got.variation_key, got.rule_key))
    assert ("va\0r", "exp\0one") in seen and ("o\0n", "rule\0one") in seen


def test_get_variation_and_activate_give_keys_with_nul_whole(pair: Any) -> None:
    """get_variation / activate hand the key out through exp_get_variation_len / exp_activate_len (difffuzz:
    "reference 'a\\u0000b' / ours 'a'")."""
    ref, ours = pair
    seen = set()
    for number in range(40):
        user = "user-%d" % number
        for function in ("get_variation", "activate"):
            expected = getattr(ref, function)("exp\0one", user)
            assert getattr(ours, function)("exp\0one", user) == expected
            seen.add(expected)
    assert "va\0r" in seen and "control" in seen


def test_forced_decision_keys_with_nul_come_back_whole(pair: Any) -> None:
    from optimizely.optimizely_user_context import OptimizelyUserContext as Context
    ref, ours = pair
    context = Context.OptimizelyDecisionContext("fl\0ag", "exp\0one")
    expected = ref.create_user_context("u1", {})
    expected.set_forced_decision(context, Context.OptimizelyForcedDecision("va\0r"))
    got = ours.create_user_context("u1")
    got.set_forced_decision(context, Context.OptimizelyForcedDecision("va\0r"))
    assert got.get_forced_decision(context).variation_key == expected.get_forced_decision(context).variation_key
    assert got.get_forced_decision(context).variation_key == "va\0r"
    assert _whole(got.decide("fl\0ag")) == _whole(expected.decide("fl\0ag"))


def test_the_ctypes_path_gives_the_same_strings() -> None:
    """This file once more in a child without the accelerator (when this process has it)."""
    if os.environ.get("EXPERIMENT_NO_SPEEDUPS"):
        assert client_module._speedups is None
        return
    env = dict(os.environ, EXPERIMENT_NO_SPEEDUPS="1")
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__,
                             "-k", "not ctypes_path"], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert " passed" in result.stdout
