"""Decision reasons (INCLUDE_REASONS) equal optimizely-sdk 5.7.0's, message for message and in order, on every
decision path: forced decisions (flag- and rule-level, valid and invalid), set_forced_variation, whitelists,
sticky profiles from a user profile service, global and local holdouts, groups, traffic gaps, delivery rules
with the everyone-else rule, audience trees with every match type, typed and string audiences.

Each case builds a small datafile where the path is certain, asks the reference and our library the same
question, and requires equal reasons -- and requires the message the case is about to be there, so no case
passes without exercising its path. (The differential suite compares reasons on random datafiles too.)
"""

from __future__ import annotations

import copy
import json
import logging
from typing import Any, Dict, List, Optional

import pytest

import experiment
from optimizely import optimizely as optimizely_mod
from optimizely.event.event_processor import ForwardingEventProcessor
from optimizely.helpers.sdk_settings import OptimizelySdkSettings
from optimizely.optimizely_user_context import OptimizelyUserContext

IR = "INCLUDE_REASONS"
USER = "user-1"

_SILENT = logging.getLogger("test_reasons.reference")
_SILENT.addHandler(logging.NullHandler())
_SILENT.propagate = False


class _Dispatcher:
    def __init__(self) -> None:
        self.events: List[Any] = []

    def dispatch_event(self, event: Any) -> None:
        self.events.append(event)


# ---------------------------------------------------------------------------------------------------
# Datafile builder: every id unique, every bucketing outcome decided by the traffic ranges alone
# ---------------------------------------------------------------------------------------------------

class Builder:
    def __init__(self) -> None:
        self.next_id = 1000
        self.df: Dict[str, Any] = {
            "version": "4", "accountId": "1", "projectId": "2", "revision": "1", "anonymizeIP": True,
            "botFiltering": False, "sendFlagDecisions": True,
            "attributes": [], "audiences": [], "typedAudiences": [], "events": [], "experiments": [],
            "groups": [], "featureFlags": [], "rollouts": [],
        }

    def id(self) -> str:
        self.next_id += 1
        return str(self.next_id)

    def attribute(self, key: str) -> None:
        if key not in [a["key"] for a in self.df["attributes"]]:
            self.df["attributes"].append({"id": self.id(), "key": key})

    def audience(self, conditions: Any, typed: bool = False, audience_id: Optional[str] = None) -> str:
        audience_id = audience_id or self.id()
        entry = {"id": audience_id, "name": "aud" + audience_id,
                 "conditions": conditions if typed else json.dumps(conditions)}
        self.df["typedAudiences" if typed else "audiences"].append(entry)
        return audience_id

    def rule(self, key: str, variations: List[str], traffic: List[tuple], audience_ids: List[str] = (),
             audience_conditions: Any = None, status: str = "Running", whitelist: Optional[dict] = None,
             kind: Optional[str] = None, enabled: bool = True) -> dict:
        """An experiment or delivery rule; traffic entries are (variation key, or "" / an id, endOfRange)."""
        ids = {v: self.id() for v in variations}
        entry = {"id": self.id(), "key": key, "status": status, "layerId": self.id(),
                 "audienceIds": list(audience_ids), "forcedVariations": dict(whitelist or {}),
                 "variations": [{"id": ids[v], "key": v, "featureEnabled": enabled, "variables": []}
                                for v in variations],
                 "trafficAllocation": [{"entityId": ids.get(e, e), "endOfRange": end} for e, end in traffic]}
        if audience_conditions is not None:
            entry["audienceConditions"] = audience_conditions
        if kind:
            entry["type"] = kind
        return entry

    def experiment(self, *args: Any, **kw: Any) -> dict:
        entry = self.rule(*args, **kw)
        self.df["experiments"].append(entry)
        return entry

    def group(self, experiments: List[dict], traffic: List[tuple]) -> dict:
        """traffic: (experiment key, or "" / an id, endOfRange)."""
        ids = {e["key"]: e["id"] for e in experiments}
        group = {"id": self.id(), "policy": "random", "experiments": experiments,
                 "trafficAllocation": [{"entityId": ids.get(e, e), "endOfRange": end} for e, end in traffic]}
        self.df["groups"].append(group)
        return group

    def rollout(self, rules: List[dict]) -> str:
        rollout_id = self.id()
        self.df["rollouts"].append({"id": rollout_id, "experiments": rules})
        return rollout_id

    def flag(self, key: str, experiments: List[dict] = (), rollout_id: str = "") -> str:
        self.df["featureFlags"].append({"id": self.id(), "key": key, "experimentIds": [e["id"] for e in experiments],
                                        "rolloutId": rollout_id, "variables": []})
        return key

    def holdout(self, key: str, traffic_end: int = 10000, status: str = "Running", audience_ids: List[str] = (),
                local_rules: Optional[List[dict]] = None, exclude_td: bool = False, entity: Optional[str] = None)\
            -> dict:
        variation_id = self.id()
        entry = {"id": self.id(), "key": key, "status": status, "audienceIds": list(audience_ids),
                 "variations": [{"id": variation_id, "key": "off_" + key, "featureEnabled": False, "variables": []}],
                 "trafficAllocation": [{"entityId": variation_id if entity is None else entity,
                                        "endOfRange": traffic_end}]}
        if exclude_td:
            entry["excludeTargetedDeliveries"] = True
        if local_rules is not None:
            entry["includedRules"] = [r["id"] for r in local_rules]
            self.df.setdefault("localHoldouts", []).append(entry)
        else:
            self.df.setdefault("holdouts", []).append(entry)
        return entry

    def text(self) -> str:
        return json.dumps(self.df)


# ---------------------------------------------------------------------------------------------------
# Both sides
# ---------------------------------------------------------------------------------------------------

class DictProfiles:
    """A user profile service both sides can use (the reference's interface; ours takes lookup/save)."""

    def __init__(self, profiles: Optional[Dict[str, dict]] = None) -> None:
        self.profiles = copy.deepcopy(profiles or {})

    def lookup(self, user_id: str) -> Optional[dict]:
        return copy.deepcopy(self.profiles.get(user_id))

    def save(self, profile: dict) -> None:
        self.profiles[profile["user_id"]] = copy.deepcopy(profile)


class Pair:
    """The reference and our client on one datafile, asked the same questions."""

    def __init__(self, datafile: str, profiles: Optional[Dict[str, dict]] = None) -> None:
        self.ref = optimizely_mod.Optimizely(
            datafile=datafile, logger=_SILENT, event_processor=ForwardingEventProcessor(_Dispatcher(), logger=_SILENT),
            settings=OptimizelySdkSettings(odp_disabled=True),
            user_profile_service=DictProfiles(profiles) if profiles is not None else None)
        assert self.ref.is_valid
        store: Any = DictProfiles(profiles) if profiles is not None else "none"
        self.ours = experiment.Client(datafile=datafile, event_dispatcher=_Dispatcher(), profile_store=store)
        self.forced: List[tuple] = []

    def close(self) -> None:
        self.ours.close()
        self.ref.close()

    def force_decision(self, user: str, flag: str, rule: Optional[str], variation: str) -> None:
        self.forced.append((user, flag, rule, variation))
        self.ours.set_forced_decision(user, flag, variation, rule_key=rule)

    def context(self, user: str, attrs: dict) -> Any:
        uc = self.ref.create_user_context(user, attrs)
        for u, flag, rule, variation in self.forced:
            if u == user:
                uc.set_forced_decision(OptimizelyUserContext.OptimizelyDecisionContext(flag, rule),
                                       OptimizelyUserContext.OptimizelyForcedDecision(variation))
        return uc

    def reasons(self, flag: str, attrs: Optional[dict] = None, user: str = USER) -> List[str]:
        """Both sides' reasons for one decide; equal, or the test fails with both."""
        attrs = attrs or {}
        ref = self.context(user, dict(attrs)).decide(flag, [IR])
        ours = self.ours.decide(user, flag, dict(attrs), options=[IR])
        assert (ours.variation_key, ours.rule_key, ours.enabled) == (ref.variation_key, ref.rule_key, ref.enabled)
        assert list(ours.reasons) == list(ref.reasons), _diff(ref.reasons, ours.reasons)
        return list(ref.reasons)


def _diff(ref: List[str], ours: List[str]) -> str:
    lines = ["reasons differ:"]
    for i in range(max(len(ref), len(ours))):
        r = ref[i] if i < len(ref) else "<none>"
        o = ours[i] if i < len(ours) else "<none>"
        lines.append(("   " if r == o else "!! ") + f"{i}: ref {r!r}" + ("" if r == o else f"\n       ours {o!r}"))
    return "\n".join(lines)


def contains(reasons: List[str], *needles: str) -> None:
    for needle in needles:
        assert any(needle in r for r in reasons), f"{needle!r} not in {reasons}"


@pytest.fixture
def pairs():
    opened: List[Pair] = []

    def make(datafile: str, **kw: Any) -> Pair:
        pair = Pair(datafile, **kw)
        opened.append(pair)
        return pair

    yield make
    for pair in opened:
        pair.close()


def simple_flag(b: Builder, audience_ids: List[str] = (), audience_conditions: Any = None) -> tuple:
    """A flag with one experiment rule (everyone in "on") and a delivery rule plus everyone-else."""
    exp = b.experiment("exp", ["on", "off"], [("on", 10000)], audience_ids=audience_ids,
                       audience_conditions=audience_conditions)
    targeted = b.rule("delivery", ["d_on"], [("d_on", 10000)], audience_ids=audience_ids,
                      audience_conditions=audience_conditions)
    everyone = b.rule("everyone", ["e_on"], [("e_on", 10000)])
    return b.flag("flag", [exp], b.rollout([targeted, everyone])), exp, targeted, everyone


# ---------------------------------------------------------------------------------------------------
# Forced decisions, forced variations, whitelists, sticky profiles
# ---------------------------------------------------------------------------------------------------

def test_flag_level_forced_decision_valid_and_invalid(pairs):
    b = Builder()
    flag, *_ = simple_flag(b)
    pair = pairs(b.text())
    pair.force_decision(USER, flag, None, "e_on")
    assert pair.reasons(flag) == [f"Variation (e_on) is mapped to flag ({flag}) and user ({USER}) in the forced decision map."]
    pair.force_decision("user-2", flag, None, "no_such_variation")
    reasons = pair.reasons(flag, user="user-2")
    assert reasons[0] == f"Invalid variation is mapped to flag ({flag}) and user (user-2) in the forced decision map."
    assert len(reasons) > 1


def test_rule_level_forced_decisions_on_experiment_and_delivery_rules(pairs):
    b = Builder()
    audience = b.audience(["and", {"type": "custom_attribute", "name": "tier", "match": "exact", "value": "gold"}])
    b.attribute("tier")
    flag, exp, targeted, everyone = simple_flag(b, audience_ids=[audience])
    pair = pairs(b.text())
    pair.force_decision(USER, flag, "exp", "off")
    contains(pair.reasons(flag), f"Variation (off) is mapped to flag ({flag}), rule (exp) and user ({USER})")
    pair.force_decision("user-2", flag, "exp", "nope")
    pair.force_decision("user-2", flag, "delivery", "d_on")
    reasons = pair.reasons(flag, user="user-2")
    contains(reasons, "Invalid variation is mapped to flag (flag), rule (exp)", "rule (delivery) and user (user-2)")
    pair.force_decision("user-3", flag, "everyone", "missing")
    contains(pair.reasons(flag, user="user-3"), "Invalid variation is mapped to flag (flag), rule (everyone)")


def test_set_forced_variation_and_whitelists(pairs):
    b = Builder()
    exp = b.experiment("exp", ["on", "off"], [("on", 10000)], whitelist={"white": "off", "ghost": "no_such"})
    second = b.experiment("second", ["a", "b"], [("a", 10000)])
    flag = b.flag("flag", [exp, second])
    pair = pairs(b.text())
    assert pair.ref.set_forced_variation("exp", "forced", "off")
    pair.ours.set_forced_variation("exp", "forced", "off")
    contains(pair.reasons(flag, user="forced"),
             'Variation "off" is mapped to experiment "exp" and user "forced" in the forced variation map')
    contains(pair.reasons(flag, user="white"), 'User "white" is forced in variation "off".')
    # whitelisted to a variation the experiment does not have: bucketed as anyone else
    contains(pair.reasons(flag, user="ghost"), 'User "ghost" is in variation "on" of experiment exp.')


def test_sticky_profile_from_a_user_profile_service(pairs):
    b = Builder()
    exp = b.experiment("exp", ["on", "off"], [("on", 10000)])
    flag = b.flag("flag", [exp])
    off_id = exp["variations"][1]["id"]
    profiles = {USER: {"user_id": USER, "experiment_bucket_map": {exp["id"]: {"variation_id": off_id}}},
                "stale": {"user_id": "stale", "experiment_bucket_map": {exp["id"]: {"variation_id": "999999"}}}}
    pair = pairs(b.text(), profiles=profiles)
    assert pair.reasons(flag) == [
        f'Returning previously activated variation ID "off" of experiment "exp" for user "{USER}" from user profile.']
    contains(pair.reasons(flag, user="stale"), 'User "stale" is in variation "on" of experiment exp.')
    contains(pair.reasons(flag, user="new"), 'User "new" is in variation "on" of experiment exp.')


# ---------------------------------------------------------------------------------------------------
# Holdouts
# ---------------------------------------------------------------------------------------------------

def test_global_holdouts_hit_miss_audience_and_not_running(pairs):
    b = Builder()
    b.attribute("country")
    audience = b.audience({"type": "custom_attribute", "name": "country", "match": "exact", "value": "NL"})
    flag, *_ = simple_flag(b)
    b.holdout("paused", status="Draft")
    b.holdout("nl_only", audience_ids=[audience])
    b.holdout("empty", traffic_end=0)
    b.holdout("blank", entity="")
    b.holdout("ghost", entity="424242")
    b.holdout("everyone")
    pair = pairs(b.text())
    reasons = pair.reasons(flag)
    contains(reasons, "User 'user-1' does not meet the conditions for holdout 'nl_only'.",
             "User 'user-1' is not bucketed into any variation for holdout 'empty'.",
             "Bucketed into an empty traffic range. Returning nil.",
             "The user 'user-1' is bucketed into holdout 'everyone' for feature flag 'flag'.")
    assert not any("paused" in r for r in reasons)
    contains(pair.reasons(flag, {"country": "NL"}), "The user 'user-1' is bucketed into holdout 'nl_only'")


def test_global_holdout_excluding_targeted_deliveries(pairs):
    b = Builder()
    exp = b.experiment("ab", ["on"], [("on", 10000)])
    td = b.experiment("td", ["t_on"], [("t_on", 0)], kind="td")
    everyone = b.rule("everyone", ["e_on"], [("e_on", 10000)])
    flag = b.flag("flag", [exp, td], b.rollout([everyone]))
    b.holdout("hold", exclude_td=True)
    pair = pairs(b.text())
    contains(pair.reasons(flag), "Holdout 'hold' excludes targeted deliveries. Targeted delivery rules will be evaluated.",
             'Holdout "hold" has excludeTargetedDeliveries enabled, continuing to rollout evaluation.')


def test_local_holdouts_on_experiment_and_delivery_rules(pairs):
    b = Builder()
    b.attribute("age")
    audience = b.audience({"type": "custom_attribute", "name": "age", "match": "gt", "value": 30})
    flag, exp, targeted, everyone = simple_flag(b)
    b.holdout("on_exp", local_rules=[exp], audience_ids=[audience])
    b.holdout("on_delivery", local_rules=[targeted])
    b.holdout("local_paused", local_rules=[exp], status="Concluded")
    pair = pairs(b.text())
    contains(pair.reasons(flag, {"age": 31}), "The user 'user-1' is bucketed into local holdout 'on_exp' for experiment rule 'exp'.")
    pair.force_decision("user-2", flag, "exp", "nope")
    contains(pair.reasons(flag, {"age": 3}, user="user-2"),
             "User 'user-2' does not meet the conditions for holdout 'on_exp'.")
    b2 = Builder()
    exp2 = b2.experiment("exp", ["on"], [("on", 0)])
    targeted2 = b2.rule("delivery", ["d_on"], [("d_on", 10000)])
    flag2 = b2.flag("flag", [exp2], b2.rollout([targeted2, b2.rule("everyone", ["e_on"], [("e_on", 10000)])]))
    b2.holdout("on_delivery", local_rules=[targeted2])
    contains(pairs(b2.text()).reasons(flag2),
             "The user 'user-1' is bucketed into local holdout 'on_delivery' for delivery rule 'delivery'.")


# ---------------------------------------------------------------------------------------------------
# Groups, traffic, rules
# ---------------------------------------------------------------------------------------------------

def test_group_mutual_exclusion_hits_and_misses(pairs):
    b = Builder()
    first = b.rule("first", ["f_on"], [("f_on", 10000)])
    second = b.rule("second", ["s_on"], [("s_on", 10000)])
    third = b.rule("third", ["t_on"], [("t_on", 10000)])
    b.group([first, second], [("first", 10000)])
    b.group([third], [("", 5000), ("424242", 10000)])
    flag_second = b.flag("flag_second", [second, first])
    flag_third = b.flag("flag_third", [third])
    pair = pairs(b.text())
    reasons = pair.reasons(flag_second)
    group_id = b.df["groups"][0]["id"]
    contains(reasons, f'User "user-1" is not in experiment "second" of group {group_id}.',
             f'User "user-1" is in experiment first of group {group_id}.', 'User "user-1" is in no variation.')
    # the third group: empty entity ids ("in no experiment") and an id of no experiment ("not in")
    seen = set()
    for n in range(40):
        for reason in pair.reasons(flag_third, user=f"u{n}"):
            if "in no experiment" in reason:
                seen.add("none")
            if "is not in experiment" in reason:
                seen.add("other")
    assert seen == {"none", "other"}


def test_traffic_gaps_and_unknown_variation_ids(pairs):
    b = Builder()
    gap = b.experiment("gap", ["on"], [("on", 0)])
    blank = b.experiment("blank", ["on"], [("", 10000)])
    ghost = b.experiment("ghost", ["on"], [("424242", 10000)])
    flag = b.flag("flag", [gap, blank, ghost])
    reasons = pairs(b.text()).reasons(flag)
    # the reference repeats its reasons so far at each experiment rule: 1 + 2 + 4 copies of the first rule's
    assert reasons.count('Evaluating audiences for experiment "gap": [].') == 4
    # gap and blank each add one; the unknown id in ghost's traffic adds none (the reference finds no variation)
    assert reasons.count("Bucketed into an empty traffic range. Returning nil.") == (1 * 2 + 1) * 2
    ghost_part = reasons[reasons.index('Evaluating audiences for experiment "ghost": [].'):]
    assert ghost_part[-1] == 'User "user-1" is in no variation.' and len(ghost_part) == 3


def test_delivery_rules_and_everyone_else(pairs):
    b = Builder()
    b.attribute("plan")
    paid = b.audience({"type": "custom_attribute", "name": "plan", "match": "exact", "value": "paid"})
    r1 = b.rule("r1", ["v1"], [("v1", 0)], audience_ids=[paid])
    r2 = b.rule("r2", ["v2"], [("v2", 10000)])
    r3 = b.rule("r3", ["v3"], [("v3", 10000)], audience_ids=[paid])
    flag = b.flag("flag", [], b.rollout([r1, r2, r3]))
    empty_everyone = b.rule("r4", ["v4"], [("", 10000)])
    flag_empty = b.flag("flag_empty", [], b.rollout([empty_everyone]))
    flag_no_rules = b.flag("flag_no_rules", [], b.rollout([]))
    flag_no_rollout = b.flag("flag_no_rollout")
    pair = pairs(b.text())
    contains(pair.reasons(flag, {"plan": "paid"}),
             'User "user-1" not bucketed into a targeting rule 1. Checking "Everyone Else" rule now.',
             "Evaluating audiences for rule Everyone Else: [" )
    contains(pair.reasons(flag, {"plan": "free"}), 'User "user-1" does not meet audience conditions for targeting rule 1.',
             'User "user-1" bucketed into a targeting rule 2.')
    contains(pair.reasons(flag_empty), "Bucketed into an empty traffic range. Returning nil.")
    rollout_id = b.df["featureFlags"][2]["rolloutId"]
    assert pair.reasons(flag_no_rules) == [f"Rollout {rollout_id} has no experiments."]
    assert pair.reasons(flag_no_rollout) == []


def test_experiment_not_running_and_non_string_bucketing_id(pairs):
    b = Builder()
    paused = b.experiment("paused", ["on"], [("on", 10000)], status="Paused")
    flag, *_ = simple_flag(b)
    b.df["featureFlags"][0]["experimentIds"].insert(0, paused["id"])
    b.holdout("nobody", traffic_end=0)
    pair = pairs(b.text())
    reasons = pair.reasons(flag, {"$opt_bucketing_id": 42})
    contains(reasons, 'Experiment "paused" is not running.')
    # once per holdout, experiment and delivery rule the reference buckets for
    assert reasons.count("Bucketing ID attribute is not a string. Defaulted to user_id.") >= 3
    assert pair.reasons(flag, {"$opt_bucketing_id": None}) == pair.reasons(flag)


# ---------------------------------------------------------------------------------------------------
# Audiences
# ---------------------------------------------------------------------------------------------------

MATCH_CASES = [
    # match, condition value, attribute values (matching, non-matching, wrong type)
    ("exact", "gold", ["gold", "silver", 1]),
    ("exact", 5, [5.0, 6, "5"]),
    ("exact", True, [True, False, 1]),
    ("exists", None, ["anything", None, 0]),
    ("substring", "old", ["golden", "silver", 7]),
    ("gt", 10, [11, 10, "11"]),
    ("ge", 10.5, [10.5, 10, True]),
    ("lt", 10, [9.99, 10, None]),
    ("le", 10, [10, 11, "x"]),
    ("semver_eq", "1.2.3", ["1.2.3", "1.2.4", 1.2]),
    ("semver_gt", "1.2.3", ["1.3", "1.2", False]),
    ("semver_ge", "1.2.3", ["1.2.3-beta.1+b", "1.2.2", 3]),
    ("semver_lt", "2.0.0", ["1.9.9", "2.0.0", "bad..version"]),
    ("semver_le", "2.0.0", ["2.0.0", "2.0.1", ""]),
    ("no_such_match", "x", ["x", "y", 1]),
]


@pytest.mark.parametrize("typed", [False, True], ids=["string audience", "typed audience"])
@pytest.mark.parametrize("match,value,attributes", MATCH_CASES, ids=[c[0] + "-" + type(c[1]).__name__ for c in MATCH_CASES])
def test_every_match_type(pairs, typed, match, value, attributes):
    b = Builder()
    b.attribute("attr")
    condition = {"type": "custom_attribute", "name": "attr", "match": match}
    if value is not None:
        condition["value"] = value
    audience = b.audience(["and", ["or", condition]], typed=typed)
    flag, *_ = simple_flag(b, audience_conditions=["and", audience])
    pair = pairs(b.text())
    results = set()
    for attrs in [{"attr": v} for v in attributes] + [{}]:
        reasons = pair.reasons(flag, attrs)
        results.update(r.rsplit(" ", 1)[1] for r in reasons if "collectively evaluated to" in r)
        contains(reasons, f'Evaluating audiences for experiment "exp": ["and", "{audience}"].')
    assert "FALSE." in results


def test_audience_trees_and_condition_formatting(pairs):
    b = Builder()
    for name in ("a", "b", "ü"):
        b.attribute(name)
    leaf = lambda name, value: {"type": "custom_attribute", "name": name, "match": "exact", "value": value}  # noqa: E731
    one = b.audience(["and", leaf("a", 1), ["not", leaf("b", "x")]])
    two = b.audience(["or", leaf("ü", 1.5), {"type": "custom_attribute", "name": "b", "match": "exists"}], typed=True)
    # an audience id with non-ASCII, astral, control and quoting characters (json.dumps escapes them all)
    three = b.audience({"type": "unknown_type", "name": "a", "value": 1}, audience_id="\u00fc\U0001F600\t\"\\")
    conditions = ["or", ["and", one, ["not", two]], ["not", three], ["and"]]
    flag, exp, _, _ = simple_flag(b, audience_conditions=conditions)
    exp["trafficAllocation"] = []  # on to the delivery rules
    pair = pairs(b.text())
    expected = json.dumps(conditions)
    assert "\\u00fc\\ud83d\\ude00\\t\\\"\\\\" in expected
    for attrs in [{"a": 1, "b": "y"}, {"a": 1, "b": "x"}, {"ü": 1.5, "b": 0}, {}, {"a": True}]:
        contains(pair.reasons(flag, attrs), f'Evaluating audiences for experiment "exp": {expected}.',
                 f"Evaluating audiences for rule 1: {expected}.")


def test_audience_ids_without_audience_conditions(pairs):
    b = Builder()
    b.attribute("n")
    one = b.audience({"type": "custom_attribute", "name": "n", "match": "lt", "value": 1e-7})
    two = b.audience({"type": "custom_attribute", "name": "n", "match": "gt", "value": 1e16})
    flag, *_ = simple_flag(b, audience_ids=[one, two])
    pair = pairs(b.text())
    for attrs in [{"n": 0}, {"n": 2e16}, {"n": 5}, {"n": float("nan")}]:
        contains(pair.reasons(flag, attrs), f'Evaluating audiences for experiment "exp": ["{one}", "{two}"].')


def test_unknown_audience_id_referenced_by_an_experiment(pairs):
    b = Builder()
    flag, *_ = simple_flag(b, audience_conditions=["or", "424242"])
    try:
        pair = pairs(b.text())
    except experiment.Error as exc:
        pytest.skip(f"this build refuses audience ids the datafile does not define ({exc})")
    contains(pair.reasons(flag), 'Audiences for experiment "exp" collectively evaluated to FALSE.')


# ---------------------------------------------------------------------------------------------------
# decide_all and decide_for_keys
# ---------------------------------------------------------------------------------------------------

def _multi_flag_datafile() -> Builder:
    b = Builder()
    b.attribute("tier")
    gold = b.audience({"type": "custom_attribute", "name": "tier", "match": "exact", "value": "gold"})
    simple_flag(b, audience_ids=[gold])
    b.flag("second", [b.experiment("exp2", ["x"], [("x", 10000)], audience_conditions=["not", gold])])
    b.holdout("hold", traffic_end=0)
    return b


@pytest.mark.parametrize("attrs", [{}, {"tier": "gold"}, {"tier": 5}])
def test_decide_all_and_decide_for_keys(pairs, attrs):
    pair = pairs(_multi_flag_datafile().text())
    pair.force_decision(USER, "second", None, "no_such")
    uc = pair.context(USER, dict(attrs))
    ref_all = uc.decide_all([IR])
    ours_all = pair.ours.decide_all(USER, dict(attrs), options=[IR])
    assert list(ours_all) == list(ref_all)
    for key in ref_all:
        assert list(ours_all[key].reasons) == list(ref_all[key].reasons), _diff(ref_all[key].reasons, ours_all[key].reasons)
    contains(ref_all["second"].reasons, "Invalid variation is mapped to flag (second)")
    # a key asked for twice: the reference's one reasons list per key holds both evaluations
    keys = ["second", "flag", "no_such_flag", "second", "flag"]
    ref_keys = uc.decide_for_keys(list(keys), [IR])
    ours_keys = pair.ours.decide_for_keys(USER, list(keys), dict(attrs), options=[IR])
    assert set(ours_keys) == set(ref_keys)
    for key in ref_keys:
        assert list(ours_keys[key].reasons) == list(ref_keys[key].reasons), _diff(ref_keys[key].reasons,
                                                                                  ours_keys[key].reasons)
    assert ref_keys["flag"].reasons == ref_all["flag"].reasons * 2


def test_no_reasons_without_include_reasons(pairs):
    pair = pairs(_multi_flag_datafile().text())
    assert list(pair.ours.decide(USER, "flag", {}).reasons) == []
    assert all(list(d.reasons) == [] for d in pair.ours.decide_all(USER, {}).values())
    client = experiment.Client(datafile=_multi_flag_datafile().text(), profile_store="none",
                               default_decide_options=[IR])
    try:
        assert list(client.decide(USER, "flag", {}).reasons) == pair.reasons("flag")
    finally:
        client.close()


@pytest.mark.parametrize("key", ["", " ", "\u00a0\u3000", "\t\n"], ids=["empty", "space", "unicode spaces", "tab newline"])
def test_blank_keys_are_never_bucketed(pairs, key):
    """The reference's bucketer refuses an experiment, rule or holdout whose key is blank (`not key.strip()`):
    no variation and no bucketing reason, not even a group's."""
    b = Builder()
    blank = b.rule(key, ["on"], [("on", 10000)])
    b.group([blank], [(key, 10000)])
    b.df["groups"][0]["trafficAllocation"][0]["entityId"] = blank["id"]
    rule = b.rule(key + "r", ["r_on"], [("r_on", 10000)])
    rule["key"] = key
    everyone = b.rule("everyone", ["e_on"], [("e_on", 10000)])
    flag = b.flag("flag", [blank], b.rollout([rule, everyone]))
    b.holdout("held")["key"] = key
    pair = pairs(b.text())
    reasons = pair.reasons(flag)
    assert not any("of group" in r for r in reasons)
    contains(reasons, "User 'user-1' is not bucketed into any variation for holdout", 'User "user-1" is in no variation.',
             'User "user-1" not bucketed into a targeting rule 1.', 'User "user-1" bucketed into a targeting rule Everyone Else.')
