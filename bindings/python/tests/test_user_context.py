"""User contexts against optimizely-sdk's OptimizelyUserContext, through the real .so.

Differential: for seeded random datafiles (datafile_generator.py) and users drawn to hit their conditions, the
same sequence of context calls goes to the reference's ``create_user_context`` and to ours -- decide of every
flag (with reasons), forced decisions set / get / remove (flag-level and rule-level, valid and unknown
variation keys), set_attribute then decide, decide_all and decide_for_keys (with an unknown key), a second
context of the same user id (which must not see the first one's forced decisions), track_event with tags --
and every result and every dispatched event must be equal. Then the context's own behaviour: copies,
qualified segments, errors, a closed client.
"""

from __future__ import annotations

import json
import os
import random
import sys
from typing import Any, Dict, List, Optional

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from datafile_generator import generate_datafile, generate_users  # noqa: E402
from test_differential import RecordingDispatcher, make_ours, make_reference, normalize_event  # noqa: E402

import experiment  # noqa: E402
from optimizely.optimizely_user_context import OptimizelyUserContext  # noqa: E402

SEEDS = list(range(int(os.environ.get("CONTEXT_DIFF_SEEDS", "12"))))
USERS = int(os.environ.get("CONTEXT_DIFF_USERS", "40"))
REASONS = ["INCLUDE_REASONS"]


def decision_fields(d: Any) -> Dict[str, Any]:
    return {"flag_key": d.flag_key, "enabled": d.enabled, "variation_key": d.variation_key, "rule_key": d.rule_key,
            "variables": d.variables, "reasons": list(d.reasons),
            "user_id": d.user_context.user_id if d.user_context is not None else None,
            "attributes": d.user_context.get_user_attributes() if d.user_context is not None else None}


def decisions_fields(ds: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    return {key: decision_fields(d) for key, d in ds.items()}


def rule_keys(datafile: dict, flag: dict) -> List[str]:
    experiments = {e["id"]: e for e in datafile.get("experiments", [])}
    for group in datafile.get("groups", []):
        for e in group.get("experiments", []):
            experiments[e["id"]] = e
    keys = [experiments[i]["key"] for i in flag.get("experimentIds", []) if i in experiments]
    for rollout in datafile.get("rollouts", []):
        if rollout["id"] == flag.get("rolloutId"):
            keys += [e["key"] for e in rollout.get("experiments", [])]
    return keys


def variation_keys(datafile: dict, flag: dict) -> List[str]:
    keys: List[str] = []
    for e in datafile.get("experiments", []) + [x for g in datafile.get("groups", []) for x in g["experiments"]] + \
            [x for r in datafile.get("rollouts", []) for x in r["experiments"]]:
        if e["id"] in flag.get("experimentIds", []) or any(
                r["id"] == flag.get("rolloutId") and e in r["experiments"] for r in datafile.get("rollouts", [])):
            keys += [v["key"] for v in e.get("variations", [])]
    return sorted(set(keys))


class Pair:
    """The same call on the reference's context and on ours; results must be equal."""

    def __init__(self, ref: Any, ours: Any, where: str) -> None:
        self.ref = ref
        self.ours = ours
        self.where = where

    def same(self, what: str, ref_result: Any, our_result: Any) -> None:
        assert our_result == ref_result, f"{self.where}: {what}\nreference: {ref_result!r}\nours:      {our_result!r}"

    def decide(self, key: str, options: Optional[List[str]] = None) -> None:
        self.same(f"decide({key!r}, {options})", decision_fields(self.ref.decide(key, list(options or REASONS))),
                  decision_fields(self.ours.decide(key, list(options or REASONS))))


def run_sequence(seed: int, rng: random.Random, datafile: dict, text: str) -> None:
    ref_events, our_events = RecordingDispatcher(), RecordingDispatcher()
    ref_client = make_reference(text, ref_events)
    ours_client = make_ours(text, our_events)
    flags = datafile.get("featureFlags", [])
    events = [e["key"] for e in datafile.get("events", [])]
    users = list(generate_users(seed, datafile, USERS))
    try:
        for index, (user_id, attributes) in enumerate(users):
            where = f"seed {seed}, user {user_id!r} {attributes!r}"
            pair = Pair(ref_client.create_user_context(user_id, attributes),
                        ours_client.create_user_context(user_id, attributes), where)
            pair.same("get_user_attributes", pair.ref.get_user_attributes(), pair.ours.get_user_attributes())
            for flag in flags:
                pair.decide(flag["key"])
            pair.decide("no_such_flag")
            # Forced decisions: flag-level and rule-level, valid and unknown variation keys.
            forced = []
            for flag in rng.sample(flags, min(3, len(flags))):
                rules = [None] + rule_keys(datafile, flag)
                rule = rng.choice(rules)
                variation = rng.choice(variation_keys(datafile, flag) + ["no_such_variation"])
                forced.append((flag["key"], rule))
                ref_ctx = OptimizelyUserContext.OptimizelyDecisionContext(flag["key"], rule)
                our_ctx = experiment.OptimizelyDecisionContext(flag["key"], rule)
                pair.same("set_forced_decision",
                          pair.ref.set_forced_decision(ref_ctx, OptimizelyUserContext.OptimizelyForcedDecision(variation)),
                          pair.ours.set_forced_decision(our_ctx, experiment.OptimizelyForcedDecision(variation)))
                ref_got, our_got = pair.ref.get_forced_decision(ref_ctx), pair.ours.get_forced_decision(our_ctx)
                pair.same("get_forced_decision", ref_got and ref_got.variation_key, our_got and our_got.variation_key)
                pair.decide(flag["key"])
            # Another context of the same user id does not see them.
            other = Pair(ref_client.create_user_context(user_id, attributes),
                         ours_client.create_user_context(user_id, attributes), where + " (second context)")
            for flag in flags:
                other.decide(flag["key"])
            # set_attribute, then decide: an attribute of another user.
            donor = users[(index + 1) % len(users)][1]
            if donor:
                key = rng.choice(sorted(donor))
                pair.ref.set_attribute(key, donor[key])
                pair.ours.set_attribute(key, donor[key])
                for flag in flags:
                    pair.decide(flag["key"])
            options = rng.choice([[], REASONS, ["ENABLED_FLAGS_ONLY"], ["EXCLUDE_VARIABLES", "INCLUDE_REASONS"]])
            pair.same(f"decide_all({options})", decisions_fields(pair.ref.decide_all(list(options))),
                      decisions_fields(pair.ours.decide_all(list(options))))
            keys = [f["key"] for f in rng.sample(flags, min(2, len(flags)))] + ["no_such_flag"]
            pair.same(f"decide_for_keys({keys})", decisions_fields(pair.ref.decide_for_keys(keys, list(REASONS))),
                      decisions_fields(pair.ours.decide_for_keys(keys, list(REASONS))))
            # Remove one forced decision (twice: the second finds none), then all.
            if forced:
                flag_key, rule = forced[0]
                for _ in range(2):
                    pair.same("remove_forced_decision",
                              pair.ref.remove_forced_decision(OptimizelyUserContext.OptimizelyDecisionContext(flag_key, rule)),
                              pair.ours.remove_forced_decision(experiment.OptimizelyDecisionContext(flag_key, rule)))
                pair.decide(flag_key)
            pair.same("remove_all_forced_decisions", pair.ref.remove_all_forced_decisions(),
                      pair.ours.remove_all_forced_decisions())
            for flag in flags:
                pair.decide(flag["key"], ["DISABLE_DECISION_EVENT", "INCLUDE_REASONS"])
            if events:
                tags = rng.choice([None, {"revenue": 4200}, {"value": 2.5, "category": "shoes"}])
                pair.ref.track_event(events[index % len(events)], tags)
                pair.ours.track_event(events[index % len(events)], tags)
        ours_client.flush()
        ref_normalized = [normalize_event(e)[0] for e in ref_events.events]
        our_normalized = [normalize_event(e)[0] for e in our_events.events]
        assert len(our_normalized) == len(ref_normalized), f"seed {seed}: event counts differ"
        for i, (r, o) in enumerate(zip(ref_normalized, our_normalized)):
            assert o == r, f"seed {seed}: event {i} differs\nreference: {json.dumps(r)}\nours:      {json.dumps(o)}"
        assert ref_events.events, f"seed {seed}: no events at all (the comparison would be vacuous)"
    finally:
        ours_client.close()


@pytest.mark.parametrize("seed", SEEDS)
def test_context_calls_equal_the_reference(seed: int) -> None:
    datafile = generate_datafile(seed)
    run_sequence(seed, random.Random(f"context-{seed}"), datafile, json.dumps(datafile))


def test_demo_datafile_equal_the_reference() -> None:
    path = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "datafiles", "demo.json")
    with open(path) as f:
        text = f.read()
    run_sequence(1000, random.Random("context-demo"), json.loads(text), text)


# ------------------------------------------------------------------------------------------------
# The context's own behaviour
# ------------------------------------------------------------------------------------------------

def test_forced_decisions_do_not_leak_between_contexts_or_to_id_calls(client) -> None:
    a = client.create_user_context("qa", {"country": "NL"})
    b = client.create_user_context("qa", {"country": "NL"})
    natural = a.decide("checkout_flow").variation_key
    forced = "control" if natural != "control" else "treatment"
    flag = experiment.OptimizelyDecisionContext("checkout_flow")
    assert a.set_forced_decision(flag, experiment.OptimizelyForcedDecision(forced)) is True
    assert a.decide("checkout_flow").variation_key == forced
    assert b.get_forced_decision(flag) is None
    assert b.decide("checkout_flow").variation_key == natural
    assert client.decide("qa", "checkout_flow", {"country": "NL"}).variation_key == natural
    # The id-keyed shortcut keeps working, and does not reach contexts.
    client.set_forced_decision("qa", "checkout_flow", forced)
    assert client.decide("qa", "checkout_flow", {"country": "NL"}).variation_key == forced
    assert b.decide("checkout_flow").variation_key == natural
    client.remove_forced_decisions("qa")


def test_copies_keep_their_own_state(client) -> None:
    user = client.create_user_context("u1", {"country": "NL"})
    flag = experiment.OptimizelyDecisionContext("checkout_flow")
    user.set_forced_decision(flag, experiment.OptimizelyForcedDecision("off"))
    decision = user.decide("checkout_flow")
    snapshot = decision.user_context
    user.set_attribute("country", "DE")
    user.remove_all_forced_decisions()
    assert snapshot.get_user_attributes() == {"country": "NL"}
    assert snapshot.get_forced_decision(flag) == experiment.OptimizelyForcedDecision("off")
    assert snapshot.decide("checkout_flow").variation_key == "off"
    assert user.get_forced_decision(flag) is None
    assert user.get_user_attributes() == {"country": "DE"}
    copy = user.copy()
    copy.set_attribute("plan", "gold")
    assert "plan" not in user.get_user_attributes()
    assert decision.as_json()["user_context"] == {"user_id": "u1", "attributes": {"country": "NL"}}


def test_get_user_attributes_is_a_copy(client) -> None:
    attributes = {"country": "NL"}
    user = client.create_user_context("u1", attributes)
    attributes["country"] = "DE"
    got = user.get_user_attributes()
    got["country"] = "FR"
    assert user.get_user_attributes() == {"country": "NL"}
    assert user.user_id == "u1" and user.client is client


def test_rule_level_forced_decision(client, datafile_dict) -> None:
    user = client.create_user_context("u1", {})
    rule = experiment.OptimizelyDecisionContext("checkout_flow", "checkout_test")
    user.set_forced_decision(rule, experiment.OptimizelyForcedDecision("treatment"))
    d = user.decide("checkout_flow")
    assert (d.rule_key, d.variation_key) == ("checkout_test", "treatment")
    assert user.get_forced_decision(experiment.OptimizelyDecisionContext("checkout_flow")) is None
    assert user.remove_forced_decision(rule) is True
    assert user.remove_forced_decision(rule) is False


def test_qualified_segments(client) -> None:
    user = client.create_user_context("u1")
    assert user.get_qualified_segments() is None
    assert user.is_qualified_for("vip") is False
    user.set_qualified_segments(["vip", "beta"])
    segments = user.get_qualified_segments()
    assert segments == ["vip", "beta"]
    segments.append("x")
    assert user.get_qualified_segments() == ["vip", "beta"]
    assert user.is_qualified_for("vip") and not user.is_qualified_for("x")
    user.qualified_segments = None
    assert user.qualified_segments is None
    # Segments are the context's: another context of the same id has none.
    user.set_qualified_segments(["vip"])
    assert client.create_user_context("u1").get_qualified_segments() is None
    # No ODP in this datafile: a fetch fails (False), as the reference's does.
    assert user.fetch_qualified_segments() is False
    results: List[bool] = []
    thread = user.fetch_qualified_segments(callback=results.append)
    thread.join()
    assert results == [False]


def test_track_event_sends_the_context_attributes(client, dispatcher) -> None:
    user = client.create_user_context("u1", {"country": "NL"})
    user.set_attribute("age", 31)
    user.track_event("purchase", {"revenue": 4200})
    client.flush()
    (event,) = dispatcher.conversions()
    visitor = event["visitors"][0]
    assert visitor["visitor_id"] == "u1"
    attributes = {a["key"]: a["value"] for a in visitor["attributes"] if not a["key"].startswith("$opt")}
    assert attributes == {"country": "NL", "age": 31}
    assert visitor["snapshots"][0]["events"][0]["revenue"] == 4200
    user.track_event("no_such_event")  # logged, not raised (as the reference)
    assert len(dispatcher.conversions()) == 1


def test_not_ready_and_closed(idle_client, datafile_text) -> None:
    user = idle_client.create_user_context("u1", {"a": 1})
    d = user.decide("checkout_flow")
    assert (d.enabled, d.variation_key, d.reasons) == (False, None, ["Optimizely SDK not configured properly yet."])
    assert user.decide_all() == {} and user.decide_for_keys(["checkout_flow"]) == {}
    user.track_event("purchase")  # logged
    idle_client.start(datafile_text)
    assert user.decide("checkout_flow").flag_key == "checkout_flow"
    idle_client.close()
    with pytest.raises(experiment.ClosedError):
        user.decide("checkout_flow")
    with pytest.raises(experiment.ClosedError):
        idle_client.create_user_context("u2")


def test_bad_arguments(client) -> None:
    with pytest.raises(experiment.UnsupportedTypeError):
        client.create_user_context(42)
    with pytest.raises(experiment.UnsupportedTypeError):
        client.create_user_context("u1", ["not", "a", "dict"])
    user = client.create_user_context("u1")
    with pytest.raises(experiment.UnsupportedTypeError):
        user.set_forced_decision("checkout_flow", experiment.OptimizelyForcedDecision("off"))
    with pytest.raises(experiment.UnsupportedTypeError):
        user.decide_for_keys("checkout_flow")
    with pytest.raises(experiment.InvalidOptionError):
        user.decide("checkout_flow", ["NO_SUCH_OPTION"])
    # A user id with a NUL byte is a user id like any other (lengths are passed, not NUL terminators).
    odd = client.create_user_context("a\0b")
    assert odd.decide("checkout_flow").user_context.user_id == "a\0b"


def test_accelerator_and_ctypes_paths_agree(client) -> None:
    """With the accelerator built, a context's decide goes through it (unless EXPERIMENT_NO_SPEEDUPS); a str
    subclass key takes the ctypes path. Both give the same decision."""
    from experiment import client as client_module, user_context as module

    class Key(str):
        pass

    user = client.create_user_context("u7", {"country": "NL"})
    if client_module._speedups is not None:
        assert module._client_helpers["fast"] is not None
    options = ["INCLUDE_REASONS", "DISABLE_DECISION_EVENT", "IGNORE_USER_PROFILE_SERVICE"]
    fast = user.decide("checkout_flow", options)
    slow = user.decide(Key("checkout_flow"), options)
    assert type(fast) is type(slow) is experiment.UserDecision
    assert fast.to_dict() == slow.to_dict() and fast.reasons
    assert fast.user_context.user_id == slow.user_context.user_id == "u7"
