"""Differential tests: the library's decisions equal those of Optimizely's reference SDK
(optimizely-sdk on PyPI) for the demo datafile, many users and attribute sets."""

from __future__ import annotations

import itertools
import math

import pytest

import experiment

from optimizely import optimizely as optimizely_module  # noqa: E402
from optimizely.logger import NoOpLogger  # noqa: E402
from optimizely.optimizely_user_context import OptimizelyUserContext  # noqa: E402

FLAGS = ("checkout_flow", "search_ranking")
EXPERIMENTS = ("checkout_test", "search_test", "paused_test", "legacy_ab")

ATTRIBUTE_SETS = [
    {},
    {"country": "NL", "age": 30},
    {"country": "NL", "age": 17},
    {"country": "BE", "beta": True},
    {"country": "BE", "beta": False, "age": 18.0},
    {"country": "US", "age": 99},
    {"country": "NL", "age": "30"},
    {"country": "NL", "age": True},
    {"plan": "premium", "score": 0.9},
    {"plan": "premium", "score": 0.1},
    {"plan": "premium"},
    {"plan": "premium", "score": None},
    {"plan": "premium", "score": math.nan},
    {"plan": "premium", "score": math.inf},
    {"plan": "basic", "country": "NL", "age": 50},
    {"country": None, "age": 40, "beta": True},
    {"$opt_bucketing_id": "shared-bucket"},
    {"$opt_bucketing_id": "shared-bucket", "country": "NL", "age": 21},
]
USERS = ["u1", "u2", "u3", "", "forced_user", "użytkownik-ß", "😀"] + ["user-%d" % i for i in range(60)]


@pytest.fixture(scope="module")
def ref(datafile_text):
    return optimizely_module.Optimizely(datafile=datafile_text, logger=NoOpLogger())


@pytest.fixture(scope="module")
def lib_client(datafile_text):
    with experiment.Client(datafile=datafile_text, profile_store="none") as c:
        yield c


def _ref_decision(ref, user, attrs, flag):
    d = ref.create_user_context(user, dict(attrs)).decide(flag, ["DISABLE_DECISION_EVENT"])
    return (d.enabled, d.variation_key, d.rule_key, d.variables)


def _lib_decision(client, user, attrs, flag):
    d = client.decide(user, flag, attrs, options=["DISABLE_DECISION_EVENT"])
    return (d.enabled, d.variation_key, d.rule_key, d.variables)


def _same(a, b):
    # NaN-safe structural equality is not needed: variables never hold NaN in this datafile
    return a == b


@pytest.mark.parametrize("attrs", ATTRIBUTE_SETS, ids=[repr(a) for a in ATTRIBUTE_SETS])
def test_decide_matches_reference(ref, lib_client, attrs):
    mismatches = []
    for user, flag in itertools.product(USERS, FLAGS):
        expected = _ref_decision(ref, user, attrs, flag)
        got = _lib_decision(lib_client, user, attrs, flag)
        if not _same(expected, got):
            mismatches.append((user, flag, expected, got))
    assert mismatches == [], mismatches[:5]


@pytest.mark.parametrize("attrs", ATTRIBUTE_SETS, ids=[repr(a) for a in ATTRIBUTE_SETS])
def test_get_variation_matches_reference(ref, lib_client, attrs):
    mismatches = []
    for user, exp in itertools.product(USERS, EXPERIMENTS):
        expected = ref.get_variation(exp, user, dict(attrs))
        got = lib_client.get_variation(exp, user, attrs)
        if expected != got:
            mismatches.append((user, exp, expected, got))
    assert mismatches == [], mismatches[:5]


def test_decide_all_matches_reference(ref, lib_client):
    for user in USERS[:20]:
        for attrs in ATTRIBUTE_SETS[:6]:
            expected = ref.create_user_context(user, dict(attrs)).decide_all(["DISABLE_DECISION_EVENT"])
            got = lib_client.decide_all(user, attrs, ["DISABLE_DECISION_EVENT"])
            assert {k: (v.enabled, v.variation_key, v.rule_key, v.variables) for k, v in expected.items()} == \
                {k: (v.enabled, v.variation_key, v.rule_key, v.variables) for k, v in got.items()}


def test_enabled_flags_only_matches_reference(ref, lib_client):
    for user in USERS[:20]:
        expected = ref.create_user_context(user, {"plan": "premium", "score": 0.9}).decide_all(
            ["DISABLE_DECISION_EVENT", "ENABLED_FLAGS_ONLY"])
        got = lib_client.decide_all(user, {"plan": "premium", "score": 0.9},
                                    ["DISABLE_DECISION_EVENT", "ENABLED_FLAGS_ONLY"])
        assert sorted(expected) == sorted(got)


FORCED = [
    ("checkout_flow", None, "treatment"),
    ("checkout_flow", "checkout_test", "treatment"),
    ("checkout_flow", "checkout_test", "control"),
    ("checkout_flow", "checkout_nl_rule", "on_nl"),
    ("checkout_flow", None, "nope"),
    ("checkout_flow", None, "on_nl"),
    ("checkout_flow", None, "off"),
    ("search_ranking", "82002", "on"),
    ("search_ranking", "search_test", "neural"),
]


@pytest.mark.parametrize("flag, rule, variation", FORCED)
def test_forced_decisions_match_reference(datafile_text, flag, rule, variation):
    ref = optimizely_module.Optimizely(datafile=datafile_text, logger=NoOpLogger())
    with experiment.Client(datafile=datafile_text, profile_store="none") as c:
        for user in USERS[:15]:
            for attrs in ({}, {"country": "NL", "age": 30}, {"plan": "premium", "score": 0.9}):
                ctx = ref.create_user_context(user, dict(attrs))
                ctx.set_forced_decision(OptimizelyUserContext.OptimizelyDecisionContext(flag, rule),
                                        OptimizelyUserContext.OptimizelyForcedDecision(variation))
                expected = ctx.decide(flag, ["DISABLE_DECISION_EVENT"])
                c.set_forced_decision(user, flag, variation, rule_key=rule)
                got = c.decide(user, flag, attrs, ["DISABLE_DECISION_EVENT"])
                c.remove_forced_decisions(user)
                assert (got.enabled, got.variation_key, got.rule_key, got.variables) == \
                    (expected.enabled, expected.variation_key, expected.rule_key, expected.variables), \
                    (user, attrs)


def test_forced_variations_match_reference(datafile_text):
    ref = optimizely_module.Optimizely(datafile=datafile_text, logger=NoOpLogger())
    with experiment.Client(datafile=datafile_text, profile_store="none") as c:
        for exp, var in [("checkout_test", "treatment"), ("checkout_test", "control"), ("search_test", "neural"),
                         ("paused_test", "a"), ("legacy_ab", "blue")]:
            for user in USERS[:10]:
                assert ref.set_forced_variation(exp, user, var)
                c.set_forced_variation(exp, user, var)
                for attrs in ({}, {"country": "NL", "age": 30}):
                    assert c.get_variation(exp, user, attrs) == ref.get_variation(exp, user, dict(attrs))
                    for flag in FLAGS:
                        assert _lib_decision(c, user, attrs, flag) == _ref_decision(ref, user, attrs, flag)
                ref.set_forced_variation(exp, user, None)
                c.set_forced_variation(exp, user, None)
