"""Bad datafiles: every one gets its error class, code and a message naming the problem, through
Client.start, Client(datafile=...) and validate_datafile alike; the client keeps its good config.

Refused here is what the reference SDK (optimizely-sdk 5.7.0) refuses too; what it accepts is accepted
with warnings (test_datafile_acceptance.py), e.g. a "featureEnabled" that is no boolean, below."""

from __future__ import annotations

import copy
import json

import pytest

import experiment
from conftest import SDK_NOT_READY, TRAILING, U2_ATTRS, assert_error_decision, nested_json, raises

MAX_DATAFILE = 64 * 1024 * 1024


def _mutate(fn):
    def build(good: dict) -> str:
        df = copy.deepcopy(good)
        fn(df)
        return json.dumps(df)
    return build


def _set(path, value):
    def fn(df):
        target = df
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value
    return _mutate(fn)


def _delete(path):
    def fn(df):
        target = df
        for part in path[:-1]:
            target = target[part]
        del target[path[-1]]
    return _mutate(fn)


def _without(field):
    """The datafile without a top-level field, and without every reference into it, so that the missing
    field is the only problem."""
    def fn(df):
        del df[field]
        if field == "experiments":
            for flag in df["featureFlags"]:
                flag["experimentIds"] = []
            for event in df["events"]:
                event["experimentIds"] = []
        elif field == "rollouts":
            for flag in df["featureFlags"]:
                flag["rolloutId"] = ""
        elif field == "audiences":
            df.pop("typedAudiences", None)
            for rule in df["experiments"] + [r for ro in df["rollouts"] for r in ro["experiments"]]:
                rule["audienceIds"] = []
                rule.pop("audienceConditions", None)
    return _mutate(fn)


# Top-level fields without which the reference SDK (optimizely-sdk 5.x) builds no config.
# ("featureFlags", "rollouts", "typedAudiences", "integrations" are optional there, and so here.)
REQUIRED_FIELDS = ["version", "projectId", "accountId", "revision", "experiments", "events",
                   "audiences", "attributes", "groups"]

# (id, builder(good_dict) -> str|bytes, class, code, message pattern)
BAD_DATAFILES = [
    ("empty", lambda g: "", experiment.InvalidJSONError, -2, r"."),
    ("whitespace", lambda g: "   \n", experiment.InvalidJSONError, -2, r"."),
    ("truncated", lambda g: json.dumps(g)[:-20], experiment.InvalidJSONError, -2, r"."),
    ("not json", lambda g: "datafile please", experiment.InvalidJSONError, -2, r"."),
    ("trailing garbage", lambda g: json.dumps(g) + "garbage", experiment.InvalidJSONError, -2,
     TRAILING),
    ("two documents", lambda g: json.dumps(g) + json.dumps(g), experiment.InvalidJSONError, -2,
     TRAILING),
    ("single quotes", lambda g: "{'version': '4'}", experiment.InvalidJSONError, -2, r"."),
    ("array", lambda g: "[]", experiment.InvalidDatafileError, -4, r"object"),
    ("string", lambda g: '"4"', experiment.InvalidDatafileError, -4, r"object"),
    ("null", lambda g: "null", experiment.InvalidDatafileError, -4, r"object"),
    ("version 5", _set(["version"], "5"), experiment.UnsupportedVersionError, -5, r"version.*5|5.*version"),
    ("version 1", _set(["version"], "1"), experiment.UnsupportedVersionError, -5, r"version"),
    ("missing experiment key", _delete(["experiments", 0, "key"]), experiment.InvalidDatafileError, -4,
     r"experiments\[0\].*key"),
    ("missing variation id", _delete(["experiments", 1, "variations", 0, "id"]),
     experiment.InvalidDatafileError, -4, r"experiments\[1\].*variations\[0\].*id"),
    ("endOfRange string", _set(["experiments", 0, "trafficAllocation", 0, "endOfRange"], "4000"),
     experiment.InvalidDatafileError, -4, r"experiments\[0\]\.trafficAllocation\[0\]\.endOfRange"),
    ("experiments not array", _set(["experiments"], {}), experiment.InvalidDatafileError, -4, r"experiments"),
    ("unknown rollout", _set(["featureFlags", 0, "rolloutId"], "99"), experiment.InvalidDatafileError, -4,
     r"featureFlags\[0\]\.rolloutId.*99"),
    ("unknown experiment in flag", _set(["featureFlags", 1, "experimentIds"], ["12345"]),
     experiment.InvalidDatafileError, -4, r"featureFlags\[1\].*12345"),
    ("deeply nested", lambda g: nested_json(10000), experiment.TooDeepError, -15, r"deep|depth|nest"),
    ("deeply nested objects", lambda g: '{"a":' * 10000 + "1" + "}" * 10000, experiment.TooDeepError, -15,
     r"deep|depth|nest"),
    ("nested inside datafile", _set(["integrations"], json.loads(nested_json(100))), experiment.TooDeepError,
     -15, r"deep|depth|nest"),
    ("invalid utf-8", lambda g: json.dumps(g).encode().replace(b'"production"', b'"prod\xffuction"'),
     experiment.InvalidUTF8Error, -13, r"utf-?8"),
    ("overlong utf-8", lambda g: json.dumps(g).encode().replace(b'"production"', b'"\xc0\xafproduction"'),
     experiment.InvalidUTF8Error, -13, r"utf-?8"),
    ("nul byte inside", lambda g: json.dumps(g).encode().replace(b'"production"', b'"prod\x00uction"'),
     experiment.InvalidJSONError, -2, r"."),
]


@pytest.fixture(params=BAD_DATAFILES, ids=[b[0] for b in BAD_DATAFILES])
def bad(request, datafile_dict):
    name, build, cls, code, pattern = request.param
    return build(datafile_dict), cls, code, pattern


def test_start_rejects_and_keeps_good_config(client, bad):
    text, cls, code, pattern = bad
    raises(cls, code, pattern, client.start, text)
    assert client.ready
    assert client.config["revision"] == "42"
    assert client.decide("u2", "checkout_flow", U2_ATTRS).variation_key == "control"


def test_validate_datafile_rejects(bad):
    text, cls, code, pattern = bad
    raises(cls, code, pattern, experiment.validate_datafile, text)


def test_constructor_rejects(bad):
    text, cls, code, pattern = bad
    raises(cls, code, pattern, experiment.Client, datafile=text)


def test_start_rejects_on_a_not_ready_client(idle_client, bad):
    text, cls, code, pattern = bad
    raises(cls, code, pattern, idle_client.start, text)
    assert idle_client.ready is False
    assert_error_decision(idle_client.decide("u1", "checkout_flow"), "checkout_flow", SDK_NOT_READY)


def test_too_large_datafile(client):
    huge = b" " * (MAX_DATAFILE + 1)
    raises(experiment.TooLargeError, -14, r"large|size|limit|exceed|bytes", client.start, huge)
    raises(experiment.TooLargeError, -14, r"large|size|limit|exceed|bytes", experiment.validate_datafile, huge)
    assert client.decide("u2", "checkout_flow", U2_ATTRS).variation_key == "control"


def test_datafile_of_wrong_python_type(client):
    raises(experiment.UnsupportedTypeError, -1, r"datafile", client.start, 42)
    raises(experiment.UnsupportedTypeError, -1, r"datafile", client.start, {"version": "4"})
    raises(experiment.InvalidArgumentError, -1, r"datafile|null|argument", client.start, None)
    assert client.decide("u2", "checkout_flow", U2_ATTRS).variation_key == "control"


def test_datafile_with_lone_surrogate(client, datafile_text):
    bad = datafile_text.replace('"production"', '"prod\ud800"')
    raises(experiment.InvalidUTF8Error, -13, r"utf-?8", client.start, bad)
    assert client.config["revision"] == "42"


def test_datafile_with_bom_or_leading_whitespace(client, datafile_text):
    # whitespace around the document is JSON; the library must accept it
    client.start("\n  " + datafile_text + "\n\t ")
    assert client.ready


def test_buffer_not_nul_terminated_is_read_by_length(client, datafile_text):
    # memoryview of a larger buffer: only datafile bytes are passed (length-delimited)
    data = datafile_text.encode()
    client.start(memoryview(data + b"garbage")[: len(data)])
    assert client.config["revision"] == "42"


def test_valid_minimal_datafile(client):
    minimal = {"version": "4", "projectId": "1", "accountId": "2", "revision": "3", "experiments": [],
               "featureFlags": [], "rollouts": [], "events": [], "audiences": [], "attributes": [],
               "groups": []}
    experiment.validate_datafile(json.dumps(minimal))
    client.start(json.dumps(minimal))
    assert client.config["flags"] == []
    assert client.decide_all("u1") == {}
    assert_error_decision(client.decide("u1", "checkout_flow"), "checkout_flow",
                          'No flag was found for key "checkout_flow".')


@pytest.mark.parametrize("field", ["featureFlags", "rollouts", "typedAudiences", "integrations"])
def test_optional_top_level_fields(client, datafile_dict, field):
    text = _without(field)(datafile_dict)
    experiment.validate_datafile(text)
    client.start(text)
    assert client.ready


@pytest.mark.parametrize("field", REQUIRED_FIELDS)
def test_missing_required_field(client, datafile_dict, field):
    """A datafile without a field the reference SDK requires is rejected everywhere, naming the field,
    and the client keeps its config."""
    text = _without(field)(datafile_dict)
    raises(experiment.InvalidDatafileError, -4, r"\b%s\b" % field, experiment.validate_datafile, text)
    raises(experiment.InvalidDatafileError, -4, r"\b%s\b" % field, experiment.Client, datafile=text)
    raises(experiment.InvalidDatafileError, -4, r"\b%s\b" % field, client.start, text)
    assert client.config["revision"] == "42"
    assert client.decide("u2", "checkout_flow", U2_ATTRS).variation_key == "control"


def test_feature_enabled_that_is_no_boolean_is_accepted_with_a_warning(datafile_dict):
    """The reference accepts it and tests it for truth: "yes" enables the flag, "" does not."""
    for value, enabled in (("yes", True), ("", False), (1, True), (0, False)):
        df = copy.deepcopy(datafile_dict)
        for rule in df["experiments"] + [r for ro in df["rollouts"] for r in ro["experiments"]]:
            for variation in rule["variations"]:
                variation["featureEnabled"] = value
        text = json.dumps(df)
        experiment.validate_datafile(text)
        with experiment.Client(datafile=text, profile_store="none") as client:
            warnings = client.datafile_status()["warnings"]
            assert warnings and all(w["severity"] == "warning" and w["place"].endswith(".featureEnabled")
                                    for w in warnings)
            decisions = [client.decide("u%d" % i, "checkout_flow") for i in range(20)]
            assert {d.enabled for d in decisions if d.variation_key} == {enabled}
