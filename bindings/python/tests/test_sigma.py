"""The Sigma surface through the real libexperiment.so: typed flag values (type rules, found vs not found
vs errors), the user's flags / experiments / holdouts in string and JSON forms, experiment handles with
typed parameters, holdouts by key, and Sigma user properties (standard keys, custom.<name>, set / edit /
clear, profile id as the bucketing id).

The datafile is built here so every membership is certain: traffic is all-or-nothing and audiences pick
users by attribute."""

from __future__ import annotations

import json

import pytest

import experiment
from conftest import RecordingDispatcher, raises

ERR_TYPE_MISMATCH = -21
ERR_NOT_FOUND = -27
ERR_UNKNOWN_FLAG = -7
ERR_UNKNOWN_EXPERIMENT = -8
ERR_INVALID_ARGUMENT = -1
ERR_INVALID_JSON = -2


def _audience(aid: str, name: str, match: str, value) -> dict:
    leaf = {"type": "custom_attribute", "name": name, "match": match}
    if match != "exists":
        leaf["value"] = value
    return {"id": aid, "name": aid, "conditions": json.dumps(["and", ["or", leaf]])}


def _variation(vid: str, key: str, enabled: bool, values: dict) -> dict:
    return {"id": vid, "key": key, "featureEnabled": enabled,
            "variables": [{"id": k, "value": v} for k, v in values.items()]}


VARIABLES = [
    {"id": "901", "key": "show", "type": "boolean", "defaultValue": "false"},
    {"id": "902", "key": "count", "type": "integer", "defaultValue": "1"},
    {"id": "903", "key": "ratio", "type": "double", "defaultValue": "0.5"},
    {"id": "904", "key": "title", "type": "string", "defaultValue": "default title"},
    {"id": "905", "key": "cfg", "type": "string", "subType": "json", "defaultValue": "{\"a\": 1}"},
    {"id": "906", "key": "broken", "type": "integer", "defaultValue": "1.5"},
    {"id": "907", "key": "huge", "type": "integer", "defaultValue": "99999999999999999999"},
]


def sigma_datafile() -> dict:
    exp_checkout = {
        "id": "3001", "key": "checkout_test", "layerId": "4001", "status": "Running",
        "audienceIds": [], "forcedVariations": {},
        "variations": [
            _variation("3101", "control", False, {"901": "true"}),
            _variation("3102", "treatment", True, {"901": "true", "902": "7", "903": "2.25", "904": "New checkout",
                                                   "905": "{\"steps\": [1, 2], \"fast\": true}"}),
        ],
        # everybody lands in "treatment", the variation at position 1
        "trafficAllocation": [{"entityId": "3102", "endOfRange": 10000}],
    }
    exp_banner = {   # an A/B test no flag uses
        "id": "3002", "key": "banner_test", "layerId": "4002", "status": "Running",
        "audienceIds": ["2003"], "forcedVariations": {},
        "variations": [{"id": "3201", "key": "blue"}, {"id": "3202", "key": "red"}],
        "trafficAllocation": [{"entityId": "3201", "endOfRange": 10000}],
    }
    exp_paused = {
        "id": "3003", "key": "paused_test", "layerId": "4003", "status": "Paused",
        "audienceIds": [], "forcedVariations": {},
        "variations": [{"id": "3301", "key": "a"}], "trafficAllocation": [{"entityId": "3301", "endOfRange": 10000}],
    }
    by_profile = {   # splits on the bucketing id: bucket of "p-in" vs "p-out" decides
        "id": "3004", "key": "profile_split", "layerId": "4004", "status": "Running",
        "audienceIds": [], "forcedVariations": {},
        "variations": [{"id": "3401", "key": "first"}, {"id": "3402", "key": "second"}],
        "trafficAllocation": [{"entityId": "3401", "endOfRange": 5000}, {"entityId": "3402", "endOfRange": 10000}],
    }
    rollout_on = {"id": "5001", "experiments": [{
        "id": "6001", "key": "everyone_on", "layerId": "5001", "status": "Running", "audienceIds": [],
        "forcedVariations": {}, "variations": [_variation("6101", "on", True, {"904": "rolled out"})],
        "trafficAllocation": [{"entityId": "6101", "endOfRange": 10000}]}]}
    rollout_nobody = {"id": "5002", "experiments": [{
        "id": "6002", "key": "nobody", "layerId": "5002", "status": "Running", "audienceIds": [],
        "forcedVariations": {}, "variations": [_variation("6201", "on", True, {})],
        "trafficAllocation": []}]}
    return {
        "version": "4", "projectId": "11", "accountId": "12", "revision": "7", "anonymizeIP": True,
        "sendFlagDecisions": True, "botFiltering": False,
        "attributes": [{"id": "1001", "key": "held"}, {"id": "1002", "key": "local_held"},
                       {"id": "1003", "key": "banner"}, {"id": "1004", "key": "geo_country"},
                       {"id": "1005", "key": "custom.isAuthorized"}],
        "audiences": [_audience("2001", "held", "exact", True), _audience("2002", "local_held", "exact", True),
                      _audience("2003", "banner", "exact", "yes"), _audience("2004", "geo_country", "exact", "NL"),
                      _audience("2005", "custom.isAuthorized", "exact", True)],
        "events": [{"id": "7001", "key": "purchase", "experimentIds": ["3001"]}],
        "experiments": [exp_checkout, exp_banner, exp_paused, by_profile],
        "groups": [],
        "featureFlags": [
            {"id": "8001", "key": "checkout", "experimentIds": ["3001"], "rolloutId": "5001", "variables": VARIABLES},
            {"id": "8002", "key": "rolled_out", "experimentIds": [], "rolloutId": "5001", "variables": VARIABLES},
            {"id": "8003", "key": "nobody_flag", "experimentIds": [], "rolloutId": "5002", "variables": VARIABLES},
        ],
        "rollouts": [rollout_on, rollout_nobody],
        "integrations": [],
        "holdouts": [
            {"id": "9001", "key": "global_holdout", "status": "Running", "audienceIds": ["2001"],
             "variations": [{"id": "9101", "key": "ho_off", "featureEnabled": False, "variables": []}],
             "trafficAllocation": [{"entityId": "9101", "endOfRange": 10000}]},
            {"id": "9002", "key": "draft_holdout", "status": "Draft", "audienceIds": [],
             "variations": [{"id": "9201", "key": "ho_off", "featureEnabled": False, "variables": []}],
             "trafficAllocation": [{"entityId": "9201", "endOfRange": 10000}]},
            {"id": "9004", "key": "country_holdout", "status": "Running", "audienceIds": ["2004"],
             "variations": [{"id": "9401", "key": "ho_off", "featureEnabled": False, "variables": []}],
             "trafficAllocation": [{"entityId": "9401", "endOfRange": 10000}]},
        ],
        "localHoldouts": [
            {"id": "9003", "key": "local_holdout", "status": "Running", "audienceIds": ["2002"],
             "includedRules": ["3001"],
             "variations": [{"id": "9301", "key": "lho_off", "featureEnabled": False, "variables": []}],
             "trafficAllocation": [{"entityId": "9301", "endOfRange": 10000}]},
        ],
    }


@pytest.fixture()
def sigma(dispatcher: RecordingDispatcher):
    c = experiment.Client(sdk_key="sigma", datafile=json.dumps(sigma_datafile()), event_dispatcher=dispatcher)
    yield c
    c.close()


# -- typed flag values ------------------------------------------------------------------------------

def test_flag_values_of_each_type(sigma):
    assert sigma.flag_bool("u1", "checkout") is True                 # enabled: treatment
    assert sigma.flag_bool("u1", "checkout", "show") is True
    assert sigma.flag_int("u1", "checkout", "count") == 7
    assert sigma.flag_double("u1", "checkout", "ratio") == 2.25
    assert sigma.flag_string("u1", "checkout", "title") == "New checkout"
    assert sigma.flag_json("u1", "checkout", "cfg") == {"steps": [1, 2], "fast": True}
    assert type(sigma.flag_int("u1", "checkout", "count")) is int
    assert type(sigma.flag_double("u1", "checkout", "ratio")) is float


def test_rollout_values_and_defaults(sigma):
    assert sigma.flag_bool("u1", "rolled_out") is True
    assert sigma.flag_string("u1", "rolled_out", "title") == "rolled out"
    assert sigma.flag_int("u1", "rolled_out", "count") == 1          # the variable's default
    assert sigma.flag_json("u1", "rolled_out", "cfg") == {"a": 1}


def test_no_value_is_not_an_error(sigma):
    # no rule of the flag gives the user a variation
    assert sigma.flag_bool("u1", "nobody_flag") is None
    assert sigma.flag_string("u1", "nobody_flag", "title") is None
    # a held-out user gets the holdout's (disabled) variation: off, with defaults
    assert sigma.flag_bool("u1", "checkout", attributes={"held": True}) is False
    assert sigma.flag_string("u1", "checkout", "title", {"held": True}) == "default title"
    # a value the reference cannot typecast is no value
    assert sigma.flag_int("u1", "checkout", "broken") is None


def test_type_mismatch(sigma, dispatcher):
    dispatcher.clear()
    raises(experiment.TypeMismatchError, ERR_TYPE_MISMATCH, r"count.*integer.*not string",
           sigma.flag_string, "u1", "checkout", "count")
    raises(experiment.TypeMismatchError, ERR_TYPE_MISMATCH, r"ratio.*double.*not int",
           sigma.flag_int, "u1", "checkout", "ratio")
    raises(experiment.TypeMismatchError, ERR_TYPE_MISMATCH, r"show.*bool.*not json",
           sigma.flag_json, "u1", "checkout", "show")
    raises(experiment.TypeMismatchError, ERR_TYPE_MISMATCH, r"without a variable key is a bool",
           sigma.flag_int, "u1", "checkout", None)
    # the type is known before deciding: even a user without a value gets the mismatch, and no event is sent
    raises(experiment.TypeMismatchError, ERR_TYPE_MISMATCH, r"title.*string.*not bool",
           sigma.flag_bool, "u1", "nobody_flag", "title")
    getattr(sigma, "flush", lambda: None)()
    assert dispatcher.impressions() == []
    # an integer that does not fit in 64 bits
    raises(experiment.TypeMismatchError, ERR_TYPE_MISMATCH, r"huge.*64-bit", sigma.flag_int, "u1", "checkout", "huge")


def test_errors_are_distinct_from_no_value(sigma, idle_client):
    # As the reference's typed getters: no value (None) and a log message for an unknown flag or variable or
    # before a datafile, never an exception.
    assert sigma.flag_bool("u1", "no_such") is None
    assert sigma.flag_string("u1", "checkout", "nope") is None
    assert idle_client.flag_bool("u1", "checkout") is None
    raises(experiment.InvalidArgumentError, ERR_INVALID_ARGUMENT, r"value_type", sigma.check_flag, "u1",
           "checkout", list)
    # the client keeps working
    assert sigma.check_flag("u1", "checkout") is True
    assert sigma.check_flag("u1", "checkout", int, "count") == 7
    assert sigma.check_flag("u1", "checkout", dict, "cfg")["fast"] is True


def test_flag_accessor_sends_the_decide_impression(sigma, dispatcher):
    dispatcher.clear()
    sigma.flag_int("u1", "checkout", "count")
    getattr(sigma, "flush", lambda: None)()
    [impression] = dispatcher.impressions()
    decision = impression["visitors"][0]["snapshots"][0]["decisions"][0]
    assert (decision["experiment_id"], decision["variation_id"]) == ("3001", "3102")


def test_flag_values_through_the_c_abi_null_checks(sigma):
    lib = experiment._native.lib
    from ctypes import byref, c_int
    found, out = c_int(7), c_int(7)
    handle = sigma._live()
    assert lib.exp_flag_bool(handle, b"u1", b"checkout", None, None, 0, None, byref(found)) == ERR_INVALID_ARGUMENT
    assert lib.exp_flag_bool(handle, b"u1", b"checkout", None, None, 0, byref(out), None) == ERR_INVALID_ARGUMENT
    assert lib.exp_flag_bool(handle, b"u1", b"nobody_flag", None, None, 0, byref(out), byref(found)) == 0
    assert (found.value, out.value) == (0, 7)      # not found: the value is left alone
    assert lib.exp_flag_bool(None, b"u1", b"checkout", None, None, 0, byref(out), byref(found)) == ERR_INVALID_ARGUMENT


# -- all flags, experiments, holdouts ---------------------------------------------------------------

def test_user_flags(sigma, dispatcher):
    dispatcher.clear()
    flags = sigma.user_flags("u1")
    assert list(flags) == ["checkout", "rolled_out"]            # nobody_flag gives no variation
    assert flags["checkout"]["enabled"] is True
    assert flags["checkout"]["variation_key"] == "treatment"
    assert flags["checkout"]["variables"]["count"] == 7
    assert flags["rolled_out"]["variables"]["title"] == "rolled out"
    held = sigma.user_flags("u1", {"held": True})
    assert held["checkout"] == {"enabled": False, "variation_key": "ho_off", "variables": held["checkout"]["variables"]}
    getattr(sigma, "flush", lambda: None)()
    assert dispatcher.impressions() == []                         # a report, not an exposure


def test_user_experiments_string_and_json(sigma):
    profile_group = sigma.user_experiments_json("u1")[-1]["group_index"]
    # checkout_test (treatment, index 1); banner_test needs banner=yes; paused_test is not running
    assert sigma.user_experiments("u1") == "3001.1|3004.%d" % profile_group
    assert sigma.user_experiments("u1", {"banner": "yes"}) == "3001.1|3002.0|3004.%d" % profile_group
    [first, second] = sigma.user_experiments_json("u1")
    assert first == {"id": "3001", "key": "checkout_test", "group_index": 1, "variation_id": "3102",
                     "variation_key": "treatment"}
    assert second["key"] == "profile_split"
    # held out globally: the flag never reaches its experiment rule
    assert sigma.user_experiments("u1", {"held": True}).split("|")[0] != "3001.1"
    # locally held out of the checkout rule
    assert not sigma.user_experiments("u1", {"local_held": True}).startswith("3001.")


def test_user_holdouts_string_and_json(sigma):
    assert sigma.user_holdouts("u1") == ""
    assert sigma.user_holdouts_json("u1") == []
    assert sigma.user_holdouts("u1", {"held": True}) == "9001.0"
    assert sigma.user_holdouts("u1", {"held": True, "local_held": True, "geo_country": "NL"}) == "9001.0|9004.0|9003.0"
    assert sigma.user_holdouts_json("u1", {"local_held": True}) == [
        {"id": "9003", "key": "local_holdout", "group_index": 0}]


def test_get_holdout(sigma):
    assert sigma.get_holdout("u1", "global_holdout") is False
    assert sigma.get_holdout("u1", "global_holdout", {"held": True}) is True
    assert sigma.get_holdout("u1", "draft_holdout") is False       # not running: holds nobody
    assert sigma.get_holdout("u1", "local_holdout", {"local_held": True}) is True
    raises(experiment.NotFoundError, ERR_NOT_FOUND, r"unknown holdout \"nope\"", sigma.get_holdout, "u1", "nope")


def test_get_experiment_with_typed_parameters(sigma):
    e = sigma.get_experiment("u1", "checkout_test")
    assert (e.id, e.key, e.variation_id, e.variation_key, e.group_index) == \
        ("3001", "checkout_test", "3102", "treatment", 1)
    assert e.parameters["title"] == "New checkout"
    assert e.param_bool("show") is True
    assert e.param_int("count") == 7
    assert e.param_double("ratio") == 2.25
    assert e.param_string("title") == "New checkout"
    assert e.param_json("cfg") == {"steps": [1, 2], "fast": True}
    assert e.param_int("broken") is None
    raises(experiment.TypeMismatchError, ERR_TYPE_MISMATCH, r"title.*string.*not int", e.param_int, "title")
    raises(experiment.NotFoundError, ERR_NOT_FOUND, r"no parameter \"nope\"", e.param_string, "nope")


def test_get_experiment_not_in_and_unknown(sigma):
    assert sigma.get_experiment("u1", "banner_test") is None          # audience not met
    assert sigma.get_experiment("u1", "paused_test") is None
    assert sigma.get_experiment("u1", "checkout_test", {"held": True}) is None
    banner = sigma.get_experiment("u1", "banner_test", {"banner": "yes"})
    assert (banner.variation_key, banner.group_index, banner.parameters) == ("blue", 0, {})
    raises(experiment.NotFoundError, ERR_NOT_FOUND, r"no parameter.*has none", banner.param_bool, "x")
    raises(experiment.UnknownExperimentError, ERR_UNKNOWN_EXPERIMENT, r"nope", sigma.get_experiment, "u1", "nope")
    raises(experiment.UnknownExperimentError, ERR_UNKNOWN_EXPERIMENT, r"delivery rules",
           sigma.get_experiment, "u1", "everyone_on")


def test_get_experiment_json_form(sigma):
    from ctypes import byref, c_char_p
    lib = experiment._native.lib
    out = c_char_p()
    assert lib.exp_get_experiment_json(sigma._live(), b"u1", b"checkout_test", None, 0, byref(out)) == 0
    doc = json.loads(out.value)
    lib.exp_free(out)
    assert doc["group_index"] == 1 and doc["parameters"]["count"] == 7
    assert lib.exp_get_experiment_json(sigma._live(), b"u1", b"banner_test", None, 0, byref(out)) == 0
    assert out.value == b"null"
    lib.exp_free(out)


# -- Sigma user properties --------------------------------------------------------------------------

def test_set_edit_clear(sigma):
    sigma.set_user_properties("u5", {"profile_id": "p-1", "email": "a@example.com", "custom.isAuthorized": True,
                                     "custom.level": 3})
    assert sigma.get_user_properties("u5") == {"profile_id": "p-1", "email": "a@example.com",
                                               "custom.isAuthorized": True, "custom.level": 3}
    sigma.edit_user_properties("u5", {"app_version": "2.3.0", "email": None, "custom.level": 4})
    assert sigma.get_user_properties("u5") == {"profile_id": "p-1", "custom.isAuthorized": True,
                                               "custom.level": 4, "app_version": "2.3.0"}
    sigma.set_user_properties("u5", {"geo_city": "Utrecht"})       # replaces everything
    assert sigma.get_user_properties("u5") == {"geo_city": "Utrecht"}
    sigma.clear_user_properties("u5")
    assert sigma.get_user_properties("u5") == {}


def test_every_standard_key(sigma):
    keys = ["profile_id", "device_id", "email", "app_version", "os_name", "os_version", "geo_code", "geo_country",
            "geo_state", "geo_city"]
    sigma.set_user_properties("u6", {k: "v-" + k for k in keys})
    assert sigma.get_user_properties("u6") == {k: "v-" + k for k in keys}


def test_properties_drive_audiences(sigma):
    assert sigma.get_holdout("u7", "country_holdout") is False
    sigma.set_user_properties("u7", {"geo_country": "NL"})
    assert sigma.get_holdout("u7", "country_holdout") is True
    assert sigma.user_holdouts("u7") == "9004.0"
    sigma.edit_user_properties("u7", {"geo_country": "DE"})
    assert sigma.get_holdout("u7", "country_holdout") is False


def test_bad_properties_change_nothing(sigma):
    sigma.set_user_properties("u8", {"email": "keep@example.com"})
    for bad, pattern in [({"nickname": "x"}, r"unknown Sigma property \"nickname\".*custom\.<name>"),
                         ({"user_id": "x"}, r"user_id.*argument"),
                         ({"email": 5}, r"\"email\" must be a string"),
                         ({"custom.": 1}, r"needs a property name"),
                         ({"custom.list": [1]}, r"expected a string, number, boolean or null"),
                         ({"email": "new@example.com", "bogus": 1}, r"bogus")]:
        raises(experiment.InvalidArgumentError, ERR_INVALID_ARGUMENT, pattern, sigma.edit_user_properties, "u8", bad)
        raises(experiment.InvalidArgumentError, ERR_INVALID_ARGUMENT, pattern, sigma.set_user_properties, "u8", bad)
    raises(experiment.InvalidArgumentError, ERR_INVALID_ARGUMENT, r"expected a JSON object",
           sigma.set_user_properties, "u8", "[1]")
    raises(experiment.InvalidJSONError, ERR_INVALID_JSON, r".", sigma.set_user_properties, "u8", "{")
    assert sigma.get_user_properties("u8") == {"email": "keep@example.com"}


def _bucket_group(client, user_id):
    return [e["group_index"] for e in client.user_experiments_json(user_id) if e["key"] == "profile_split"][0]


def test_profile_id_as_bucketing_id(dispatcher):
    df = json.dumps(sigma_datafile())
    # find two profile ids that land in different halves of profile_split
    plain = experiment.Client(datafile=df)
    by_profile = experiment.Client(datafile=df, bucket_by_profile_id=True)
    try:
        groups = {}
        for i in range(40):
            groups.setdefault(_bucket_group(plain, "p-%d" % i), "p-%d" % i)
        assert len(groups) == 2
        first, second = groups[0], groups[1]
        for user in ("anon-a", "anon-b"):
            by_profile.set_user_properties(user, {"profile_id": first})
            assert _bucket_group(by_profile, user) == 0
            assert by_profile.get_user_properties(user)["$opt_bucketing_id"] == first
            by_profile.edit_user_properties(user, {"profile_id": second})
            assert _bucket_group(by_profile, user) == 1
            assert by_profile.get_experiment(user, "profile_split").group_index == 1
            by_profile.edit_user_properties(user, {"profile_id": None})     # back to the user id
            assert "$opt_bucketing_id" not in by_profile.get_user_properties(user)
            assert _bucket_group(by_profile, user) == _bucket_group(plain, user)
        # without the option profile_id is only an attribute
        plain.set_user_properties("anon-a", {"profile_id": first})
        assert "$opt_bucketing_id" not in plain.get_user_properties("anon-a")
    finally:
        plain.close()
        by_profile.close()
    raises(experiment.InvalidOptionError, -3, r"bucket_by_profile_id", experiment.Client, bucket_by_profile_id="yes")


# -- consistency with decide on generated datafiles (decide itself is checked against the reference SDK
#    by test_differential.py, so these memberships agree with the reference's decisions) --------------

def check_typed_values(client, df, user_id, attrs, decisions):
    """Each typed accessor gives what decide gives (None where decide has no variation or a null value)."""
    accessors = {"boolean": client.flag_bool, "integer": client.flag_int, "double": client.flag_double,
                 "string": client.flag_string, "json": client.flag_json}
    for flag in df["featureFlags"]:
        d = decisions[flag["key"]]
        has_value = d.variation_key is not None
        assert client.flag_bool(user_id, flag["key"], None, attrs) == (d.enabled if has_value else None)
        for variable in flag["variables"]:
            kind = "json" if variable.get("subType") == "json" else variable["type"]
            want = d.variables[variable["key"]] if has_value else None
            if kind == "integer" and isinstance(want, int) and not -2 ** 63 <= want < 2 ** 63:
                with pytest.raises(experiment.TypeMismatchError):
                    accessors[kind](user_id, flag["key"], variable["key"], attrs)
                continue
            got = accessors[kind](user_id, flag["key"], variable["key"], attrs)
            assert got == want and type(got) is type(want), (user_id, flag["key"], variable["key"], got, want)


@pytest.mark.parametrize("seed", range(8))
def test_memberships_agree_with_decide(seed):
    from datafile_generator import generate_datafile, generate_users
    df = generate_datafile(seed)
    # Memberships summarize fresh bucketing (no sticky profiles), so decide must not use one either here.
    client = experiment.Client(datafile=json.dumps(df), default_decide_options=["DISABLE_DECISION_EVENT"],
                               profile_store="none")
    global_holdouts = {h["id"]: h for h in df.get("holdouts", [])}
    flag_rule_ids = {i for f in df["featureFlags"] for i in f["experimentIds"]}
    experiments = df["experiments"] + [e for g in df["groups"] for e in g["experiments"]]
    plain = [e for e in experiments if e["id"] not in flag_rule_ids]
    try:
        for user_id, attrs in generate_users(seed, df, 40):
            decisions = client.decide_all(user_id, attrs)
            held = client.user_holdouts_json(user_id, attrs)
            assert client.user_holdouts(user_id, attrs) == "|".join("%s.0" % h["id"] for h in held)
            held_keys = {h["key"] for h in held}
            for h in held:
                assert client.get_holdout(user_id, h["key"], attrs) is True
            first_global = next((global_holdouts[h["id"]] for h in held if h["id"] in global_holdouts), None)
            if first_global is not None and not first_global.get("excludeTargetedDeliveries"):
                assert all(d.rule_key == first_global["key"] for d in decisions.values()), (seed, user_id)
            in_exps = client.user_experiments_json(user_id, attrs)
            assert client.user_experiments(user_id, attrs) == "|".join(
                "%s.%d" % (e["id"], e["group_index"]) for e in in_exps)
            by_key = {e["key"]: e for e in in_exps}
            for flag_key, d in decisions.items():
                if d.rule_key in held_keys or d.variation_key is None:
                    continue
                exp = next((e for e in experiments if e["key"] == d.rule_key and e["id"] in flag_rule_ids), None)
                if exp is not None:
                    assert by_key[d.rule_key]["variation_key"] == d.variation_key, (seed, user_id, flag_key)
            if user_id.endswith(("1", "5")):     # a fifth of the users: every typed value against decide
                check_typed_values(client, df, user_id, attrs, decisions)
            for exp in plain:
                variation = client.get_variation(exp["key"], user_id, attrs)
                entry = by_key.get(exp["key"])
                assert (entry and entry["variation_key"]) == (variation or None), (seed, user_id, exp["key"])
                if entry:
                    assert exp["variations"][entry["group_index"]]["key"] == variation
                    e = client.get_experiment(user_id, exp["key"], attrs)
                    assert (e.variation_key, e.group_index) == (variation, entry["group_index"])
    finally:
        client.close()


def test_python_example_prints_flags_experiments_and_holdouts():
    import os
    import subprocess
    import sys
    from conftest import BINDING_ROOT, REPO_ROOT
    env = dict(os.environ, PYTHONPATH=BINDING_ROOT)
    result = subprocess.run([sys.executable, os.path.join(REPO_ROOT, "examples", "python", "sigma.py"),
                             os.path.join(REPO_ROOT, "examples", "datafiles", "demo.json")],
                            env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "experiments: '3001.1|3002.1'" in result.stdout
    assert "holdouts:    '9001.0'" in result.stdout
    assert "type mismatch:" in result.stdout


def test_user_flags_ignore_a_default_enabled_flags_only():
    c = experiment.Client(datafile=json.dumps(sigma_datafile()), default_decide_options=["ENABLED_FLAGS_ONLY"])
    try:
        assert c.user_flags("u1", {"held": True})["checkout"]["enabled"] is False
        assert c.flag_bool("u1", "checkout", attributes={"held": True}) is False
    finally:
        c.close()
