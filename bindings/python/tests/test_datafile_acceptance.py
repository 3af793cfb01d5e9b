"""Datafile acceptance equals the reference SDK's (optimizely-sdk 5.7.0), and so do the decisions on the
odd datafiles it accepts.

A fixed-seed run mutates valid generated datafiles (datafile_mutator.py: fields deleted or retyped,
ranges out of bounds or overlapping, duplicates, dangling references, bare-object conditions, unknown
condition types and match types, missing optional sections, odd statuses...) and requires, for each:

* accepted by both or refused by both (the reference refuses when its JSON schema, its version check,
  its ProjectConfig or its OptimizelyConfig -- both built when the client is -- fail);
* when accepted: for a set of users, every flag's decide (enabled, variation_key, rule_key, variables)
  and every experiment's get_variation equal.

The only tolerated difference is REFUSED_ON_PURPOSE: datafiles the reference accepts but whose decisions
raise inside the reference (so its public API raises instead of deciding), which we refuse with a clear
message; the test checks that the reference really raises on them. Targeted tests below pin the two
cases of issue 15 (a stale audience id, a range past 10000) and the warnings that report them.
"""

from __future__ import annotations

import json
import logging
import os
import random
import re
from typing import Any, Dict, List, Optional, Tuple

import pytest

import experiment
from datafile_generator import generate_datafile, generate_users
from datafile_mutator import mutate

from optimizely import optimizely as optimizely_mod
from optimizely.event.event_processor import ForwardingEventProcessor
from optimizely.helpers.sdk_settings import OptimizelySdkSettings

N_DATAFILES = int(os.environ.get("ACCEPT_DATAFILES", "160"))
N_USERS = int(os.environ.get("ACCEPT_USERS", "12"))
SEED_BASE = int(os.environ.get("ACCEPT_SEED_BASE", "0"))
# Small datafiles: many mutations per second, and a mutation is a large part of each.
KNOBS = dict(n_flags=(2, 4), n_audiences=(2, 4), n_typed_audiences=(1, 2), n_ab_experiments=(1, 2),
             n_groups=(0, 1), n_variables=(0, 3))

# What we refuse although the reference builds a client: (our message pattern, whether the reference's
# decisions must raise on the datafile, why).
REFUSED_ON_PURPOSE = [
    (r"expected a condition object or list, got", True,
     "the reference indexes its condition list with the audience's scalar conditions"),
    # Outside the schema, a rollout rule's or holdout's endOfRange is compared with the bucket as it is: a
    # string (or list, object) raises TypeError for every user whose bucket reaches that range.
    (r"(rollouts\[\d+\]\.experiments\[\d+\]|(local)?[hH]oldouts\[\d+\])\.trafficAllocation\[\d+\]\.endOfRange: "
     r"expected an integer, got an? (string|array|object)", False,
     "the reference raises TypeError when a user's bucket reaches the range"),
]

_SILENT = logging.getLogger("test_datafile_acceptance.reference")
_SILENT.addHandler(logging.NullHandler())
_SILENT.propagate = False
_SILENT.setLevel(logging.CRITICAL + 10)


class _NoEvents:
    def dispatch_event(self, event: Any) -> None:
        pass


def reference_client(text: str) -> Tuple[Optional[Any], str]:
    """The reference's client for `text`, or None and why it has none."""
    try:
        client = optimizely_mod.Optimizely(
            datafile=text, logger=_SILENT, event_processor=ForwardingEventProcessor(_NoEvents(), logger=_SILENT),
            settings=OptimizelySdkSettings(odp_disabled=True))
    except Exception as error:  # its OptimizelyConfig raises out of the constructor
        return None, f"constructor raises {type(error).__name__}: {error}"
    if not client.is_valid or client.config_manager.get_config() is None:
        return None, "no config"
    return client, ""


def our_client(text: str) -> Tuple[Optional[Any], str]:
    try:
        return experiment.Client(datafile=text, profile_store="none", event_dispatcher=_NoEvents()), ""
    except experiment.Error as error:
        return None, str(error)


def reference_answers(client: Any, users: List[Tuple[str, Dict[str, Any]]]) -> Tuple[Dict[Any, Any], Optional[str]]:
    """Every decide and get_variation of the reference for `users`; the exception if one raises."""
    config = client.config_manager.get_config()
    answers: Dict[Any, Any] = {}
    try:
        for user_id, attributes in users:
            user = client.create_user_context(user_id, attributes)
            for flag_key in config.feature_key_map:
                d = user.decide(flag_key)
                answers[("decide", flag_key, user_id)] = {
                    "enabled": d.enabled, "variation_key": d.variation_key, "rule_key": d.rule_key,
                    "variables": d.variables}
            for experiment_key in config.experiment_key_map:
                answers[("get_variation", experiment_key, user_id)] = client.get_variation(
                    experiment_key, user_id, attributes)
    except Exception as error:
        return answers, f"{type(error).__name__}: {error}"
    return answers, None


def our_answer(client: Any, op: str, key: str, user_id: str, attributes: Dict[str, Any]) -> Any:
    if op == "decide":
        d = client.decide(user_id, key, attributes)
        return {"enabled": d.enabled, "variation_key": d.variation_key, "rule_key": d.rule_key,
                "variables": d.variables}
    return client.get_variation(key, user_id, attributes)


def same(a: Any, b: Any) -> bool:
    """Equal with equal types all the way down (1, 1.0 and True differ; -0.0 and 0.0 do not, as in
    test_differential.py)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def mutated_datafile(seed: int) -> Tuple[str, str, List[Tuple[str, Dict[str, Any]]]]:
    datafile = generate_datafile(seed, **KNOBS)
    users = list(generate_users(seed, datafile, N_USERS))   # from the valid datafile: its conditions
    what = mutate(datafile, random.Random(f"accept-{seed}"))
    return json.dumps(datafile), what, users


def check_seed(seed: int) -> Optional[str]:
    """None when we behave as the reference on mutated datafile `seed`, else what differs."""
    text, what, users = mutated_datafile(seed)
    reference, reference_refusal = reference_client(text)
    ours, our_refusal = our_client(text)
    try:
        if reference is None:
            if ours is not None:
                return f"seed {seed} ({what}): the reference refuses ({reference_refusal}), we accept"
            return None
        answers, raised = reference_answers(reference, users)
        if ours is None:
            for pattern, must_raise, _why in REFUSED_ON_PURPOSE:
                if re.search(pattern, our_refusal) and (raised or not must_raise):
                    return None
            return (f"seed {seed} ({what}): the reference accepts"
                    + (f" (its decisions raise {raised})" if raised else "") + f", we refuse: {our_refusal}")
        if raised:
            return f"seed {seed} ({what}): both accept, but the reference's decisions raise {raised}"
        attributes_of = dict(users)
        for (op, key, user_id), expected in answers.items():
            got = our_answer(ours, op, key, user_id, attributes_of[user_id])
            if not same(got, expected):
                return (f"seed {seed} ({what}): {op}({key!r}, {user_id!r}): reference {expected!r}, ours {got!r}")
        return None
    finally:
        if ours is not None:
            ours.close()


def test_mutated_datafiles_are_accepted_and_decided_as_the_reference_does():
    differences = [d for d in (check_seed(seed) for seed in range(SEED_BASE, SEED_BASE + N_DATAFILES)) if d]
    assert not differences, f"{len(differences)} of {N_DATAFILES} mutated datafiles differ:\n" + "\n".join(
        differences[:15])


# ----- the cases issue 15 names, one by one ----------------------------------------------------------

def _base() -> dict:
    return generate_datafile(3, **KNOBS)


def _rules(df: dict) -> List[dict]:
    rules = list(df["experiments"])
    for group in df["groups"]:
        rules.extend(group["experiments"])
    for rollout in df.get("rollouts", []):
        rules.extend(rollout["experiments"])
    return rules


def _compare_all(df: dict, n_users: int = 60, users_from: Optional[dict] = None) -> Any:
    """Both accept `df` and decide it alike for users generated from `users_from` (else `df`); returns our
    client."""
    text = json.dumps(df)
    reference, why = reference_client(text)
    assert reference is not None, why
    ours, refusal = our_client(text)
    assert ours is not None, refusal
    users = list(generate_users(11, users_from or df, n_users))
    answers, raised = reference_answers(reference, users)
    assert raised is None
    attributes_of = dict(users)
    for (op, key, user_id), expected in answers.items():
        assert same(our_answer(ours, op, key, user_id, attributes_of[user_id]), expected), (op, key, user_id)
    return ours


def test_stale_audience_id_is_accepted_evaluates_to_unknown_and_is_reported():
    df = _base()
    for rule in _rules(df):
        rule["audienceIds"] = ["404404"]
        rule["audienceConditions"] = ["or", "404404"] if rule is not _rules(df)[0] else ["not", "404404"]
    client = _compare_all(df)
    with client:
        status = client.datafile_status()
        assert status["ready"]
        stale = [w for w in status["warnings"] if '"404404"' in w["message"]]
        assert stale and all(w["severity"] == "warning" for w in stale)
        assert stale[0]["place"].endswith("audienceConditions[1]")
        assert "evaluates to unknown" in stale[0]["message"]
    experiment.validate_datafile(json.dumps(df))   # warnings only: valid


def test_stale_audience_id_adds_no_reason_of_its_own():
    """The reference only logs 'Audience ID "x" is not in datafile.'; its reasons are those of an audience
    that evaluated to unknown: the combined result line."""
    df = _base()
    flag = next(f for f in df["featureFlags"] if f["rolloutId"])
    rollout = next(r for r in df["rollouts"] if r["id"] == flag["rolloutId"])
    for rule in rollout["experiments"]:
        rule["audienceIds"] = ["404404"]
        rule["audienceConditions"] = ["and", "404404"]
    flag["experimentIds"] = []
    df.pop("holdouts", None)     # (holdout reasons are the reasons work's)
    df.pop("localHoldouts", None)
    text = json.dumps(df)
    reference, _ = reference_client(text)
    expected = reference.create_user_context("u1", {}).decide(flag["key"], ["INCLUDE_REASONS"]).reasons
    with experiment.Client(datafile=text, profile_store="none") as ours:
        got = ours.decide("u1", flag["key"], {}, options=["INCLUDE_REASONS"]).reasons
    # (The "Evaluating audiences for rule ..." lines are the reasons work's; here: the results.)
    results = [r for r in expected if "collectively evaluated" in r]
    assert results and results == [r for r in got if "collectively evaluated" in r]
    assert not any("not in datafile" in r for r in expected + got)


@pytest.mark.parametrize("end", [10001, 12000, 2 ** 40, -1, -5000])
def test_range_outside_0_to_10000_is_accepted_and_decided_as_the_reference(end):
    df = _base()
    for rule in _rules(df):
        for allocation in rule["trafficAllocation"]:
            if allocation["endOfRange"] >= 5000:
                allocation["endOfRange"] = end
    client = _compare_all(df)
    with client:
        warnings = client.datafile_status()["warnings"]
        assert any(w["place"].endswith(".endOfRange") and str(end) in w["message"] for w in warnings)


def test_variable_usage_naming_no_variable_of_the_flag_is_ignored():
    df = _base()
    changed = False
    for rule in _rules(df):
        for variation in rule["variations"]:
            for usage in variation.get("variables", []):
                usage["id"] = "999999"
                changed = True
    assert changed
    _compare_all(df).close()


def test_unknown_variable_type_decides_as_a_string():
    df = _base()
    variables = [v for f in df["featureFlags"] for v in f["variables"]]
    assert variables
    for variable in variables:
        variable["type"] = "float"
        variable.pop("subType", None)
    _compare_all(df).close()


def test_a_refused_datafile_keeps_todays_message():
    df = _base()
    df["featureFlags"][0]["rolloutId"] = "99"
    text = json.dumps(df)
    assert reference_client(text)[0] is None
    with pytest.raises(experiment.InvalidDatafileError, match=r'featureFlags\[0\]\.rolloutId: unknown rollout "99"'):
        experiment.validate_datafile(text)


def test_scalar_audience_id_refused_where_the_reference_raises_accepted_elsewhere():
    df = _base()
    df["experiments"][0]["audienceConditions"] = ["or", 5]
    text = json.dumps(df)
    assert reference_client(text)[0] is None
    with pytest.raises(experiment.InvalidDatafileError, match=r"experiments\[0\]\.audienceConditions\[1\]"):
        experiment.validate_datafile(text)
    # A rollout no flag uses is not written out by the reference: there the id merely names no audience.
    df = _base()
    df["rollouts"].append({"id": "unused-rollout", "experiments": [dict(
        _rules(df)[0], id="7070707", key="unused_rule", audienceIds=[5], audienceConditions=["or", True])]})
    _compare_all(df).close()


@pytest.mark.parametrize("version", ["2", "3"])
def test_versions_2_and_3_are_accepted_as_the_reference_does(version):
    df = _base()
    df["version"] = version
    _compare_all(df, n_users=20).close()


@pytest.mark.parametrize("section", ["featureFlags", "rollouts", "typedAudiences", "holdouts", "localHoldouts"])
def test_optional_section_that_is_null_is_refused_as_the_reference_does(section):
    """Absent is fine; null makes the reference iterate None (TypeError while building its config)."""
    df = _base()
    df[section] = None
    if section == "rollouts":
        for flag in df["featureFlags"]:
            flag["rolloutId"] = ""
    text = json.dumps(df)
    assert reference_client(text)[0] is None
    with pytest.raises(experiment.InvalidDatafileError, match=section):
        experiment.validate_datafile(text)


def test_audience_ids_are_checked_as_the_schema_does_even_with_audience_conditions():
    df = _base()
    df["experiments"][0]["audienceIds"] = [{}]
    df["experiments"][0]["audienceConditions"] = []
    text = json.dumps(df)
    assert reference_client(text)[0] is None
    with pytest.raises(experiment.InvalidDatafileError, match=r"experiments\[0\]\.audienceIds\[0\]"):
        experiment.validate_datafile(text)


def test_plain_audience_a_typed_one_replaces_is_never_parsed():
    """The reference parses the conditions of its merged audience map only (typedAudiences replace audiences
    of the same id): a replaced plain audience may hold any text, malformed JSON included. Its schema still
    holds (string id, name and conditions), and a plain audience no typed one replaces is parsed."""
    df = _base()
    assert df["typedAudiences"]
    replaced = df["typedAudiences"][0]["id"]
    df["audiences"].insert(0, {"id": replaced, "name": "replaced", "conditions": "[not json"})
    _compare_all(df, users_from=_base()).close()

    df["audiences"][0]["id"] = "70707070"   # replaced by nothing: both refuse
    text = json.dumps(df)
    assert reference_client(text)[0] is None
    with pytest.raises(experiment.InvalidDatafileError, match=r"audiences\[0\]\.conditions: malformed JSON"):
        experiment.validate_datafile(text)

    df["audiences"][0].update(id=replaced, conditions=7)   # the schema wants a string
    text = json.dumps(df)
    assert reference_client(text)[0] is None
    with pytest.raises(experiment.InvalidDatafileError, match=r"audiences\[0\]\.conditions: expected a string"):
        experiment.validate_datafile(text)
