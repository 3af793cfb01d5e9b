"""Audience condition evaluation against optimizely-sdk 5.7.0 over a grid (issue 15): every match type x a
condition "value" of every JSON type (absent, null, booleans, numbers at and past 2^53, strings, lists, objects,
objects nested in objects and lists) x a user attribute value of every Python type the reference's API takes x
the condition alone or wrapped in "and" / "or" / "not" / "not" of "or" (and beside another condition), as a
string-encoded audience ("audiences") and as a typed audience ("typedAudiences"). Plus odd leaf shapes: no
"match", a null "match", a non-string name or type, no name, an unknown type, an object as name / type / match.

Every cell is one flag of one datafile; decide_all with INCLUDE_REASONS on both sides must give each flag the
same enabled / variation / rule and the same reasons (which carry the audiences' combined TRUE / FALSE).

Why objects matter: the reference decodes audience conditions with a JSON object hook that turns every object,
innermost first, into its index in the audience's condition list, so a condition value written as
{"a": 1} reaches `lt` as an integer (issue 15, difffuzz seeds 3059 and 765).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Dict, List, Tuple

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_attribute_inputs import VALUES  # noqa: E402
from test_differential import RecordingDispatcher, make_ours, make_reference  # noqa: E402

ATTRIBUTE = "a"
ABSENT = object()

MATCHES: List[Any] = ["exact", "exists", "substring", "gt", "ge", "lt", "le", "semver_eq", "semver_gt",
                      "semver_ge", "semver_lt", "semver_le", "qualified", "no_such_match", ABSENT, None]

# Condition values of every JSON type. Small integers matter: an object value becomes such an index.
CONDITION_VALUES: List[Any] = [
    ABSENT, None, True, False, 0, 1, 2, 3, 5, -1, 5.5, 0.0, 1e300, 2 ** 53, 2 ** 53 + 1, -(2 ** 53) - 1,
    2 ** 64, "", "x", "5", "1.2.3", "1.2", "1.2.3-beta", [], [1], ["x"], [{"b": 1}], {}, {"a": 1},
    {"a": {"b": 1}}, {"a": [{"b": 1}, {"c": 2}]},
]

# The leaf inside its audience: a list of operands holding the leaf (and, for some, another condition whose
# objects shift the numbers the reference gives the leaf's objects).
OTHER = {"name": "other", "type": "custom_attribute", "match": "exists"}
WRAPPERS: Dict[str, Any] = {
    "plain": lambda leaf: leaf,
    "or": lambda leaf: ["or", leaf],
    "and": lambda leaf: ["and", leaf],
    "not": lambda leaf: ["not", leaf],
    "not_or_exists": lambda leaf: ["not", ["or", OTHER, ["or", leaf]]],
    "and_after_exists": lambda leaf: ["and", ["not", OTHER], leaf],
    "implicit_or": lambda leaf: [leaf, OTHER],
}

# Attribute values: every Python type, plus absent. Values the reference itself cannot take everywhere
# (unhashable in a set lookup) are still fine: conditions only read them.
USER_VALUES: List[Any] = [ABSENT] + VALUES + [-3, 2, 3, 1.5, "1.2", "1.2.3-beta"]


def _leaf(match: Any, value: Any, **fields: Any) -> Dict[str, Any]:
    leaf: Dict[str, Any] = {"name": ATTRIBUTE, "type": "custom_attribute"}
    if match is not ABSENT:
        leaf["match"] = match
    if value is not ABSENT:
        leaf["value"] = value
    leaf.update(fields)
    return {k: v for k, v in leaf.items() if v is not ABSENT}


def _reference_accepts(leaf: Dict[str, Any]) -> bool:
    """The reference refuses a datafile with a "qualified" condition whose value is a list (it collects the
    values in a set); which datafiles are accepted is not this file's business."""
    return not (leaf.get("match") == "qualified" and isinstance(leaf.get("value"), list))


def _datafile(audiences: List[Tuple[Any, bool]]) -> str:
    """One flag per audience: a targeted delivery rule (all traffic, enabled) then an everyone-else rule
    (all traffic, disabled)."""
    legacy, typed, flags, rollouts = [], [], [], []
    for index, (conditions, is_typed) in enumerate(audiences):
        number = 100000 + index * 10
        entry = {"id": str(number), "name": "aud%d" % index,
                 "conditions": conditions if is_typed else json.dumps(conditions)}
        (typed if is_typed else legacy).append(entry)

        def rule(offset: int, key: str, audience_ids: List[str], enabled: bool) -> dict:
            variation = str(number + offset + 1)
            return {"id": str(number + offset), "key": key, "status": "Running", "layerId": "L%d" % number,
                    "audienceIds": audience_ids, "forcedVariations": {},
                    "variations": [{"id": variation, "key": "on" if enabled else "off", "featureEnabled": enabled,
                                    "variables": []}],
                    "trafficAllocation": [{"entityId": variation, "endOfRange": 10000}]}

        rollouts.append({"id": "R%d" % number, "experiments": [rule(2, "targeted%d" % index, [str(number)], True),
                                                               rule(4, "everyone%d" % index, [], False)]})
        flags.append({"id": str(number + 8), "key": "flag%d" % index, "rolloutId": "R%d" % number,
                      "experimentIds": [], "variables": []})
    return json.dumps({
        "version": "4", "projectId": "1", "accountId": "1", "revision": "1", "anonymizeIP": False,
        "botFiltering": False, "sendFlagDecisions": True,
        "attributes": [{"id": "900", "key": ATTRIBUTE}, {"id": "901", "key": "other"}],
        "audiences": legacy, "typedAudiences": typed, "experiments": [], "groups": [],
        "featureFlags": flags, "rollouts": rollouts, "events": [],
    })


def _compare(audiences: List[Tuple[Any, bool]], user_values: List[Any]) -> int:
    """Decides every flag for every user value on both sides; returns how many decisions were compared."""
    datafile = _datafile(audiences)
    reference = make_reference(datafile, RecordingDispatcher())
    ours = make_ours(datafile, RecordingDispatcher())
    options = ["INCLUDE_REASONS", "DISABLE_DECISION_EVENT"]
    compared = 0
    failures: List[str] = []
    try:
        for value in user_values:
            for other in (ABSENT, 1):
                attributes: Dict[str, Any] = {}
                if value is not ABSENT:
                    attributes[ATTRIBUTE] = value
                if other is not ABSENT:
                    attributes["other"] = other
                expected = reference.create_user_context("user-1", dict(attributes)).decide_all(options)
                got = ours.decide_all("user-1", dict(attributes), options=options)
                assert sorted(got) == sorted(expected)
                for index, (conditions, is_typed) in enumerate(audiences):
                    key = "flag%d" % index
                    e, g = expected[key], got[key]
                    if ((g.enabled, g.variation_key, g.rule_key, list(g.reasons))
                            != (e.enabled, e.variation_key, e.rule_key, list(e.reasons))):
                        failures.append("%s audience %s %s, attributes %r: reference %r %r / ours %r %r" % (
                            key, "typed" if is_typed else "string", json.dumps(conditions), attributes,
                            e.variation_key, list(e.reasons), g.variation_key, list(g.reasons)))
                    compared += 1
    finally:
        ours.close()
        reference.close()
    assert not failures, "%d of %d decisions differ:\n" % (len(failures), compared) + "\n".join(failures[:20])
    return compared


@pytest.mark.parametrize("match", MATCHES, ids=lambda m: "absent" if m is ABSENT else repr(m))
def test_match_x_value_x_attribute_x_wrapper(match: Any) -> None:
    audiences = [(wrap(_leaf(match, value)), typed)
                 for value in CONDITION_VALUES if _reference_accepts(_leaf(match, value))
                 for wrap in WRAPPERS.values() for typed in (False, True)]
    assert _compare(audiences, USER_VALUES) == len(audiences) * len(USER_VALUES) * 2


# Leaf shapes beyond match x value: names and types that are absent, null, non-strings or objects.
SHAPES: List[Dict[str, Any]] = [
    {"name": None}, {"name": ABSENT}, {"name": 5}, {"name": True}, {"name": {"x": 1}}, {"name": "other"},
    {"type": None}, {"type": ABSENT}, {"type": "third_party_dimension"}, {"type": "Custom_Attribute"},
    {"type": 1}, {"type": {"x": 1}}, {"match": {"x": 1}}, {"match": 5}, {"match": True}, {"match": "EXACT"},
    {"extra": {"x": {"y": 1}}},
]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: json.dumps(s, default=lambda _: "absent"))
def test_leaf_shapes(shape: Dict[str, Any]) -> None:
    audiences = []
    for match in ("exact", "exists", "lt", "substring", "semver_eq", "qualified", ABSENT):
        for value in (ABSENT, 1, "x", "1.2.3", {"a": 1}, [1]):
            leaf = _leaf(match, ABSENT if value is ABSENT else value)
            leaf.update(shape)
            leaf = {k: v for k, v in leaf.items() if v is not ABSENT}
            if not _reference_accepts(leaf):
                continue
            for wrap in (WRAPPERS["plain"], WRAPPERS["not"], WRAPPERS["not_or_exists"]):
                for typed in (False, True):
                    audiences.append((wrap(leaf), typed))
    assert _compare(audiences, [ABSENT, None, 0, 1, 2, -1, 1.5, "x", "1.2.3", True, {"x": 1}, [1]]) > 0


def test_not_without_operand_and_operators_only() -> None:
    """["not"] is unknown, so is "not" of an unknown; only the first operand of "not" counts, though the
    others' objects still take numbers."""
    leaf = _leaf("lt", {"a": 1})
    audiences = [(c, typed) for typed in (False, True) for c in (
        ["not"], ["and", ["not"]], ["or", ["not"], leaf], ["not", leaf, OTHER], ["not", OTHER, leaf],
        ["and"], ["or"], ["not", ["not", leaf]], ["and", leaf, ["not", ["and"]]],
        ["or", _leaf("exact", {"x": {"y": {"z": 1}}}), leaf],
    )]
    _compare(audiences, [ABSENT, None, -1, 0, 1, 2, 3, 4, 5, 2.5, "x"])
