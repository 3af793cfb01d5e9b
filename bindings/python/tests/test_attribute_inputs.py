"""Inputs as the reference takes them (issue 15, parts 2 and 3), through the real .so, against optimizely-sdk:

* a table of user attribute values of every type the reference's Python API accepts (str, bool, int of any
  size, float with NaN and infinities, None, dict, list, tuple, other objects, subclasses, strings with NUL)
  against a table of audience conditions of every match type: every decision equal to the reference's;
* the attributes each side puts in the impression payload for every value: equal;
* NUL bytes in user ids, flag keys, attribute keys and values, end to end;
* the reference's answers for an unknown flag / experiment / event and a client without a datafile: the
  error decision with the reference's own reason, None, nothing sent -- never an exception.
"""

from __future__ import annotations

import decimal
import enum
import fractions
import json
import logging
import math
import os
import sys
from typing import Any, Dict, List, Tuple

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_differential import RecordingDispatcher, make_ours, make_reference, normalize_event  # noqa: E402

import experiment  # noqa: E402
from optimizely import optimizely as optimizely_mod  # noqa: E402
from optimizely.decision.optimizely_decision_message import OptimizelyDecisionMessage  # noqa: E402
from optimizely.helpers.sdk_settings import OptimizelySdkSettings  # noqa: E402

_SILENT = logging.getLogger("test_attribute_inputs.silent")
_SILENT.propagate = False
_SILENT.setLevel(logging.CRITICAL + 10)

ATTRIBUTE = "a"
NUL_ATTRIBUTE = "n\0ul"

# (match, condition value): every match type, numbers at and past 2^53, a condition of each JSON type.
CONDITIONS: List[Tuple[Any, Any]] = [
    ("exact", "x"), ("exact", ""), ("exact", "1.2.3"), ("exact", 5), ("exact", 5.5), ("exact", 0), ("exact", True),
    ("exact", False), ("exact", 2 ** 53), ("exact", 2 ** 53 + 1), ("exact", -(2 ** 53)), (None, "x"),
    ("exists", None),
    ("substring", "x"), ("substring", ""),
    ("gt", 5), ("gt", 5.5), ("gt", -(2 ** 53)), ("ge", 5), ("ge", 2 ** 53), ("lt", 5), ("lt", 2 ** 53 + 1),
    ("le", 5), ("le", 0.0),
    ("semver_eq", "1.2.3"), ("semver_gt", "1.2.3"), ("semver_ge", "1.2"), ("semver_lt", "1.2.3-beta"),
    ("semver_le", "2"),
    ("gt", "5"), ("substring", 5), ("semver_eq", 1),
    ("unknown_match", "x"),
]


class Color(enum.IntEnum):
    RED = 5


class MyStr(str):
    pass


class MyInt(int):
    pass


class MyFloat(float):
    pass


class Thing:
    def __repr__(self) -> str:
        return "Thing()"


# User values: every Python type the reference's API accepts as an attribute value.
VALUES: List[Any] = [
    "x", "xyz", "", "X", "1.2.3", "1.2.4-beta", "2", "5", "x\0y", "\0",
    MyStr("x"),
    True, False,
    0, 1, 5, 6, -1, MyInt(5), Color.RED,
    2 ** 53, 2 ** 53 + 1, -(2 ** 53), -(2 ** 53) - 1, 2 ** 63 - 1, 2 ** 63, -(2 ** 63), -(2 ** 63) - 1, 10 ** 30,
    -(10 ** 40),
    5.0, 5.5, 4.999, 0.0, -0.0, MyFloat(5.5), 1e300, float(2 ** 53), float(2 ** 53 + 2),
    float("nan"), float("inf"), float("-inf"),
    None,
    {"x": 1}, {}, [1, 2], [], ("x",), {1, 2}, Thing(), decimal.Decimal("5"), fractions.Fraction(11, 2), 5 + 0j,
    b"x", b"5", bytearray(b"x"),
]


def _condition(match: Any, value: Any, name: str = ATTRIBUTE) -> Dict[str, Any]:
    leaf: Dict[str, Any] = {"name": name, "type": "custom_attribute", "value": value}
    if match is not None:
        leaf["match"] = match
    return leaf


def _datafile(conditions: List[Dict[str, Any]], send_flag_decisions: bool = True) -> str:
    """One flag per condition: a rollout whose only rule targets an audience of that one condition, all
    traffic to an enabled variation."""
    audiences, flags, rollouts = [], [], []
    for index, leaf in enumerate(conditions):
        number = 1000 + index
        audiences.append({"id": str(number), "name": "aud%d" % index,
                          "conditions": json.dumps(["and", ["or", ["or", leaf]]])})
        rollouts.append({"id": "r%d" % number, "experiments": [{
            "id": str(number + 5000), "key": "rule%d" % index, "status": "Running", "layerId": "r%d" % number,
            "audienceIds": [str(number)], "audienceConditions": ["or", str(number)],
            "forcedVariations": {}, "variations": [{"id": str(number + 9000), "key": "on",
                                                    "featureEnabled": True, "variables": []}],
            "trafficAllocation": [{"entityId": str(number + 9000), "endOfRange": 10000}]}]})
        flags.append({"id": str(number + 20000), "key": "flag%d" % index, "rolloutId": "r%d" % number,
                      "experimentIds": [], "variables": []})
    datafile = {
        "version": "4", "projectId": "1", "accountId": "1", "revision": "1", "anonymizeIP": False,
        "botFiltering": False, "sendFlagDecisions": send_flag_decisions,
        "attributes": [{"id": "900", "key": ATTRIBUTE}, {"id": "901", "key": NUL_ATTRIBUTE},
                       {"id": "902", "key": "other"}],
        "audiences": audiences, "typedAudiences": [], "experiments": [], "groups": [],
        "featureFlags": flags, "rollouts": rollouts,
        "events": [{"id": "700", "key": "purchase", "experimentIds": []}],
    }
    return json.dumps(datafile)


def _pair(datafile: str) -> Tuple[Any, Any, RecordingDispatcher, RecordingDispatcher]:
    ref_events, our_events = RecordingDispatcher(), RecordingDispatcher()
    return make_reference(datafile, ref_events), make_ours(datafile, our_events), ref_events, our_events


def _shape(decision: Any) -> Tuple[Any, ...]:
    return (decision.flag_key, decision.enabled, decision.variation_key, decision.rule_key,
            dict(decision.variables))


def _payload_attributes(event: Any) -> List[Any]:
    params = normalize_event(event)[0]["params"]
    return params["visitors"][0]["attributes"]


@pytest.fixture(scope="module")
def table_pair() -> Any:
    datafile = _datafile([_condition(match, value) for match, value in CONDITIONS])
    ref, ours, ref_events, our_events = _pair(datafile)
    yield ref, ours, ref_events, our_events
    ours.close()
    ref.close()


ABSENT = Thing()


@pytest.mark.parametrize("value", VALUES + [ABSENT], ids=lambda v: "absent" if v is ABSENT else repr(v)[:40])
def test_every_value_against_every_match_type_decides_like_the_reference(table_pair: Any, value: Any) -> None:
    ref, ours, _, _ = table_pair
    attributes = {} if value is ABSENT else {ATTRIBUTE: value}
    mismatches = []
    for index, (match, condition) in enumerate(CONDITIONS):
        flag = "flag%d" % index
        options = ["DISABLE_DECISION_EVENT"]
        expected = ref.create_user_context("user-1", attributes).decide(flag, options)
        got = ours.decide("user-1", flag, attributes, options)
        if _shape(got) != _shape(expected):
            mismatches.append((match, condition, _shape(expected), _shape(got)))
        assert ours.variation_key("user-1", flag, attributes, options) == expected.variation_key
    assert mismatches == []


@pytest.mark.parametrize("value", VALUES, ids=lambda v: repr(v)[:40])
def test_payload_attributes_are_the_references(table_pair: Any, value: Any) -> None:
    ref, ours, ref_events, our_events = table_pair
    ref_events.events.clear()
    our_events.events.clear()
    attributes = {ATTRIBUTE: value, "other": "kept", 7: "a key that is not a str"}
    ref.create_user_context("user-1", attributes).decide("flag0")
    ours.decide("user-1", "flag0", attributes)
    ours.flush()
    assert len(ref_events.events) == len(our_events.events) == 1
    assert _payload_attributes(our_events.events[0]) == _payload_attributes(ref_events.events[0])


@pytest.mark.parametrize("value", [10 ** 30, {"x": 1}, [1], float("nan"), float("inf"), 2 ** 53 + 1, "x\0y"],
                         ids=repr)
def test_conversion_payload_attributes_are_the_references(table_pair: Any, value: Any) -> None:
    ref, ours, ref_events, our_events = table_pair
    ref_events.events.clear()
    our_events.events.clear()
    ref.track("purchase", "user-1", {ATTRIBUTE: value, "other": 1})
    ours.track("purchase", "user-1", {ATTRIBUTE: value, "other": 1})
    ours.flush()
    assert len(ref_events.events) == len(our_events.events) == 1
    assert _payload_attributes(our_events.events[0]) == _payload_attributes(ref_events.events[0])


def test_decide_all_and_for_keys_take_every_value_type(table_pair: Any) -> None:
    ref, ours, _, _ = table_pair
    attributes = {ATTRIBUTE: 10 ** 30, "other": {"nested": [1]}}
    options = ["DISABLE_DECISION_EVENT"]
    expected = ref.create_user_context("user-1", attributes).decide_all(options)
    got = ours.decide_all("user-1", attributes, options)
    assert {k: _shape(v) for k, v in got.items()} == {k: _shape(v) for k, v in expected.items()}
    keys = ["flag0", "flag12", "no-such-flag"]
    expected = ref.create_user_context("user-1", attributes).decide_for_keys(keys, options)
    got = ours.decide_for_keys("user-1", keys, attributes, options)
    assert {k: _shape(v) for k, v in got.items()} == {k: _shape(v) for k, v in expected.items()}
    assert got["no-such-flag"].reasons == expected["no-such-flag"].reasons == []


def test_experiment_calls_take_every_value_type(table_pair: Any) -> None:
    _, ours, _, _ = table_pair
    # No experiments in this datafile: unknown experiment -> None, as the reference.
    for value in ({"x": 1}, 10 ** 30, float("nan")):
        assert ours.get_variation("nope", "user-1", {ATTRIBUTE: value}) is None
        assert ours.activate("nope", "user-1", {ATTRIBUTE: value}) is None


# ------------------------------------------------------------------------------------------------
# NUL bytes end to end
# ------------------------------------------------------------------------------------------------

def test_nul_in_attribute_keys_values_and_user_ids() -> None:
    conditions = [_condition("exact", "v\0w", NUL_ATTRIBUTE), _condition("substring", "\0", ATTRIBUTE),
                  _condition("exists", None, NUL_ATTRIBUTE)]
    ref, ours, ref_events, our_events = _pair(_datafile(conditions))
    try:
        for user in ("u\0ser", "user", "\0"):
            for attributes in ({NUL_ATTRIBUTE: "v\0w"}, {NUL_ATTRIBUTE: "v"}, {ATTRIBUTE: "a\0b"}, {ATTRIBUTE: "ab"},
                               {"n": "v\0w"}, {}):
                for flag in ("flag0", "flag1", "flag2"):
                    expected = ref.create_user_context(user, attributes).decide(flag)
                    got = ours.decide(user, flag, attributes)
                    assert _shape(got) == _shape(expected), (user, attributes, flag)
        ours.flush()
        assert len(our_events.events) == len(ref_events.events) > 0
        for mine, theirs in zip(our_events.events, ref_events.events):
            mine_params, theirs_params = normalize_event(mine)[0]["params"], normalize_event(theirs)[0]["params"]
            assert mine_params["visitors"][0]["visitor_id"] == theirs_params["visitors"][0]["visitor_id"]
            assert mine_params["visitors"][0]["attributes"] == theirs_params["visitors"][0]["attributes"]
        assert any("\0" in normalize_event(e)[0]["params"]["visitors"][0]["visitor_id"] for e in our_events.events)
    finally:
        ours.close()
        ref.close()


def test_nul_in_flag_and_event_keys_names_nothing(table_pair: Any, caplog: Any) -> None:
    ref, ours, ref_events, our_events = table_pair
    expected = ref.create_user_context("u", {}).decide("flag0\0")
    got = ours.decide("u", "flag0\0")
    assert (got.flag_key, got.enabled, got.variation_key, got.reasons) == \
           (expected.flag_key, expected.enabled, expected.variation_key, expected.reasons)
    assert ours.decide_for_keys("u", ["flag0\0"])["flag0\0"].enabled is False
    our_events.events.clear()
    assert ours.track("purchase\0", "u") is None
    ours.flush()
    assert our_events.events == []


# ------------------------------------------------------------------------------------------------
# Unknown keys and a client without a datafile: the reference's answers, never an exception
# ------------------------------------------------------------------------------------------------

def test_unknown_flag_gives_the_references_error_decision(table_pair: Any, caplog: Any) -> None:
    ref, ours, _, _ = table_pair
    for options in ([], ["INCLUDE_REASONS"]):
        expected = ref.create_user_context("u", {}).decide("nope", options)
        with caplog.at_level(logging.ERROR, logger="experiment"):
            got = ours.decide("u", "nope", None, options)
        assert (got.flag_key, got.enabled, got.variation_key, got.rule_key, got.variables, got.reasons) == \
               (expected.flag_key, expected.enabled, expected.variation_key, expected.rule_key,
                expected.variables, expected.reasons)
        assert got.reasons == [OptimizelyDecisionMessage.FLAG_KEY_INVALID.format("nope")]
        assert ours.variation_key("u", "nope", None, options) is None
    assert any("nope" in record.getMessage() for record in caplog.records)


def test_flag_key_that_is_not_a_str_gives_the_references_error_decision(table_pair: Any) -> None:
    ref, ours, _, _ = table_pair
    expected = ref.create_user_context("u", {}).decide(42)
    got = ours.decide("u", 42)
    assert (got.flag_key, got.enabled, got.variation_key, got.reasons) == \
           (expected.flag_key, expected.enabled, expected.variation_key, expected.reasons)


def test_unknown_experiment_and_event_give_none_and_send_nothing(table_pair: Any) -> None:
    ref, ours, ref_events, our_events = table_pair
    ref_events.events.clear()
    our_events.events.clear()
    assert ref.get_variation("nope", "u") is None and ours.get_variation("nope", "u") is None
    assert ref.activate("nope", "u") is None and ours.activate("nope", "u") is None
    assert ref.activate("", "u") is None and ours.activate("", "u") is None
    assert ref.track("nope", "u") is None and ours.track("nope", "u") is None
    assert ref.track("purchase", "u", None, ["not", "a", "dict"]) is None
    assert ours.track("purchase", "u", None, {"bad": object()}) is None
    ours.flush()
    assert ref_events.events == our_events.events == []


def test_client_without_datafile_answers_like_the_reference(caplog: Any) -> None:
    reference = optimizely_mod.Optimizely(datafile="not a datafile", logger=_SILENT,
                                          settings=OptimizelySdkSettings(odp_disabled=True))
    expected = reference.create_user_context("u", {}).decide("flag0")
    with experiment.Client(start="none") as ours:
        with caplog.at_level(logging.ERROR, logger="experiment"):
            got = ours.decide("u", "flag0", {ATTRIBUTE: {"x": 1}})
        assert (got.flag_key, got.enabled, got.variation_key, got.rule_key, got.variables, got.reasons) == \
               (expected.flag_key, expected.enabled, expected.variation_key, expected.rule_key,
                expected.variables, expected.reasons)
        assert got.reasons == [OptimizelyDecisionMessage.SDK_NOT_READY]
        assert ours.variation_key("u", "flag0") is None
        assert ours.decide_all("u") == reference.create_user_context("u", {}).decide_all() == {}
        assert ours.decide_for_keys("u", ["flag0"]) == reference.create_user_context("u", {}).decide_for_keys(
            ["flag0"]) == {}
        assert ours.get_variation("e", "u") is None and reference.get_variation("e", "u") is None
        assert ours.activate("e", "u") is None and reference.activate("e", "u") is None
        assert ours.track("purchase", "u") is None and reference.track("purchase", "u") is None
        assert ours.flag_bool("u", "flag0") is None
        assert ours.flag_string("u", "flag0", "v") is None
    assert any("not configured" in record.getMessage() or "datafile" in record.getMessage()
               for record in caplog.records)


def test_programmer_errors_still_raise(table_pair: Any) -> None:
    _, ours, _, _ = table_pair
    with pytest.raises(experiment.UnsupportedTypeError):
        ours.decide(42, "flag0")  # the reference refuses a user id that is not a str
    with pytest.raises(experiment.UnsupportedTypeError):
        ours.decide("u", "flag0", ["not", "a", "dict"])
    with pytest.raises(experiment.InvalidOptionError):
        ours.decide("u", "flag0", None, ["NO_SUCH_OPTION"])


def test_closed_client_raises() -> None:
    client = experiment.Client(start="none")
    client.close()
    for call in (lambda: client.decide("u", "f"), lambda: client.variation_key("u", "f"),
                 lambda: client.decide_all("u"), lambda: client.track("e", "u"),
                 lambda: client.get_variation("e", "u")):
        with pytest.raises(experiment.ClosedError):
            call()


def test_values_cannot_make_decide_raise(table_pair: Any) -> None:
    """Whatever the value, decide answers (the reference never raises for a value either)."""
    _, ours, _, _ = table_pair

    class Weird:
        def __eq__(self, other: Any) -> bool:
            raise RuntimeError("no comparisons")

        __hash__ = object.__hash__

    for value in (Weird(), "\ud800", b"\xff", MyStr("x\0"), math.pi, [Weird()]):
        decision = ours.decide("u", "flag0", {ATTRIBUTE: value, "\ud800": 1})
        assert decision.flag_key == "flag0"
