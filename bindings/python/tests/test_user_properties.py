"""User properties: set / remove / clear / get, their use as attributes, value types, capacity."""

from __future__ import annotations

import math

import pytest

import experiment
from conftest import U2_ATTRS, raises


def test_set_and_get(client):
    assert client.get_user_properties("u9") == {}
    client.set_user_property("u9", "country", "NL")
    client.set_user_property("u9", "age", 31)
    client.set_user_property("u9", "beta", True)
    client.set_user_property("u9", "score", 0.25)
    client.set_user_property("u9", "nothing", None)
    props = client.get_user_properties("u9")
    assert props == {"country": "NL", "age": 31, "beta": True, "score": 0.25, "nothing": None}
    assert list(props) == ["country", "age", "beta", "score", "nothing"]  # order first set
    assert type(props["age"]) is int and type(props["beta"]) is bool and type(props["score"]) is float


def test_overwrite_keeps_order_and_type(client):
    client.set_user_property("u9", "a", 1)
    client.set_user_property("u9", "b", 2)
    client.set_user_property("u9", "a", "one")
    assert list(client.get_user_properties("u9").items()) == [("a", "one"), ("b", 2)]


def test_properties_are_used_as_attributes(client):
    assert client.decide("u1", "checkout_flow").variation_key == "off"
    client.set_user_property("u1", "country", "NL")
    client.set_user_property("u1", "age", 40)
    d = client.decide("u1", "checkout_flow")
    assert (d.variation_key, d.rule_key) == ("on_nl", "checkout_nl_rule")
    assert client.decide_all("u1")["checkout_flow"].variation_key == "on_nl"
    assert client.decide_for_keys("u1", ["checkout_flow"])["checkout_flow"].variation_key == "on_nl"


def test_per_call_attributes_win(client):
    client.set_user_property("u1", "country", "NL")
    client.set_user_property("u1", "age", 40)
    assert client.decide("u1", "checkout_flow", {"country": "US"}).variation_key == "off"
    assert client.decide("u1", "checkout_flow", {"age": 10}).variation_key == "off"
    assert client.decide("u1", "checkout_flow").variation_key == "on_nl"


def test_remove_and_clear(client):
    client.set_user_property("u1", "country", "NL")
    client.set_user_property("u1", "age", 40)
    client.remove_user_property("u1", "age")
    assert client.get_user_properties("u1") == {"country": "NL"}
    assert client.decide("u1", "checkout_flow").variation_key == "off"
    client.remove_user_property("u1", "age")          # not set: fine
    client.remove_user_property("nobody", "age")      # unknown user: fine
    client.clear_user_properties("u1")
    assert client.get_user_properties("u1") == {}
    client.clear_user_properties("nobody")


def test_properties_are_per_user(client):
    client.set_user_property("u1", "country", "NL")
    assert client.get_user_properties("u2") == {}


def test_properties_appear_in_events(client, dispatcher):
    client.set_user_property("u2", "country", "NL")
    client.set_user_property("u2", "age", 30)
    client.decide("u2", "checkout_flow")
    attributes = dispatcher.impressions()[0]["visitors"][0]["attributes"]
    by_key = {a["key"]: a["value"] for a in attributes}
    assert by_key["country"] == "NL" and by_key["age"] == 30


def test_properties_work_before_start(idle_client, datafile_text):
    idle_client.set_user_property("u1", "country", "NL")
    idle_client.set_user_property("u1", "age", 40)
    assert idle_client.get_user_properties("u1") == {"country": "NL", "age": 40}
    idle_client.start(datafile_text)
    assert idle_client.decide("u1", "checkout_flow").variation_key == "on_nl"


def test_capacity_evicts_least_recently_used(datafile_text):
    with experiment.Client(datafile=datafile_text, user_store_capacity=2) as c:
        c.set_user_property("a", "k", 1)
        c.set_user_property("b", "k", 2)
        c.set_user_property("a", "k", 3)   # a is now the most recently used
        c.set_user_property("c", "k", 4)   # evicts b
        assert c.get_user_properties("b") == {}
        assert c.get_user_properties("a") == {"k": 3}
        assert c.get_user_properties("c") == {"k": 4}


def test_non_finite_double_property(client):
    client.set_user_property("u1", "score", math.inf)  # allowed as a typed value
    assert client.decide("u1", "search_ranking") is not None


def test_property_errors(client, idle_client):
    raises(experiment.InvalidArgumentError, -1, r"user", client.set_user_property, None, "k", 1)
    raises(experiment.InvalidArgumentError, -1, r"key", client.set_user_property, "u1", None, 1)
    for value in ([1], {"a": 1}, object(), {1, 2}, 1j, lambda: 0):
        err = raises(experiment.UnsupportedTypeError, -1, r"'plan'.*unsupported", client.set_user_property, "u1",
                     "plan", value)
        assert isinstance(err, TypeError)
    raises(experiment.UnsupportedTypeError, -1, r"key", client.set_user_property, "u1", 42, "x")
    raises(experiment.InvalidArgumentError, -1, r"64", client.set_user_property, "u1", "big", 2 ** 64)
    raises(experiment.InvalidUTF8Error, -13, r"utf-?8", client.set_user_property, "u1", "plan", b"\xff")
    raises(experiment.InvalidUTF8Error, -13, r"utf-?8", client.set_user_property, "u1", b"\xff", "x")
    raises(experiment.InvalidUTF8Error, -13, r"utf-?8", client.set_user_property, "u1", "plan", "\udcff")
    raises(experiment.TooLargeError, -14, r"large|long|exceed|limit|65536|max", client.set_user_property, "u1",
           "plan", "x" * 65537)
    raises(experiment.TooLargeError, -14, r"large|long|exceed|limit|1024|max", client.set_user_property, "u1",
           "k" * 1025, "x")
    raises(experiment.InvalidArgumentError, -1, r"user", client.remove_user_property, None, "k")
    raises(experiment.InvalidArgumentError, -1, r"key", client.remove_user_property, "u1", None)
    raises(experiment.InvalidArgumentError, -1, r"user", client.clear_user_properties, None)
    raises(experiment.InvalidArgumentError, -1, r"user", client.get_user_properties, None)
    assert client.get_user_properties("u1") == {}
    client.set_user_property("u1", "plan", "x" * 65536)  # exactly the limit is fine
    assert client.get_user_properties("u1") == {"plan": "x" * 65536}
