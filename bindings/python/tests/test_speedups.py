"""The binding's optional C accelerator (experiment/_speedups.c) against its pure ctypes path.

Clients here use profile_store="none": a sticky profile saved by the first path would change the second
path's reasons ("returning previously stored variation").

`make test-python` runs the whole suite with the accelerator built, and this file (with test_decide.py
and test_input_errors.py) once more with EXPERIMENT_NO_SPEEDUPS=1. Here both paths run in one process:
the decisions, the errors and the fallbacks must not depend on which path took the call.
"""
import os
import subprocess
import sys

import pytest

import experiment
from experiment import client as client_module
from conftest import BINDING_ROOT

COUNTRIES = ["NL", "DE", "US", "", "é"]


def _users():
    for i in range(400):
        attributes = {"country": COUNTRIES[i % 5], "age": 10 + i % 70, "beta": i % 3 == 0, "score": i / 7.0}
        if i % 11 == 0:
            attributes["plan"] = None
        yield "user-%d" % i, attributes


@pytest.fixture()
def pure(monkeypatch):
    """Makes the client take the ctypes path for the rest of the test."""
    def use_ctypes_path():
        monkeypatch.setattr(experiment.Client, "decide", client_module._PY_DECIDE)
        monkeypatch.setattr(experiment.Client, "variation_key", client_module._PY_VARIATION_KEY)
        monkeypatch.setattr(client_module, "_make_decision", client_module._PY_MAKE_DECISION)
    return use_ctypes_path


def _decisions(c, options=()):
    out = []
    for user, attributes in _users():
        for flag in ("checkout_flow", "search_ranking"):
            out.append(c.decide(user, flag, attributes, options))
            out.append(c.variation_key(user, flag, attributes, options))
    return out


def test_accelerator_is_built_and_loaded_unless_disabled():
    if os.environ.get("EXPERIMENT_NO_SPEEDUPS"):
        assert client_module._speedups is None
    else:  # make test-python builds it first
        assert client_module._speedups is not None, "experiment/_speedups was not built (make python-speedups)"


@pytest.mark.parametrize("options", [(), ("INCLUDE_REASONS",), ("EXCLUDE_VARIABLES", "DISABLE_DECISION_EVENT")])
def test_both_paths_decide_the_same(datafile_text, pure, options):
    with experiment.Client(datafile=datafile_text, profile_store="none") as c:
        fast = _decisions(c, options)
        pure()
        slow = _decisions(c, options)
    assert fast == slow
    assert any(d is not None and getattr(d, "variation_key", d) for d in fast)


def test_variation_key_equals_decide(datafile_text):
    with experiment.Client(datafile=datafile_text, profile_store="none") as c:
        for user, attributes in _users():
            assert c.variation_key(user, "checkout_flow", attributes) == \
                c.decide(user, "checkout_flow", attributes).variation_key


def test_impressions_are_sent_on_both_paths(datafile_text, dispatcher, pure):
    def decide_everyone(c):
        for user, attributes in _users():
            c.decide(user, "checkout_flow", attributes)
            c.variation_key(user, "checkout_flow", attributes)

    with experiment.Client(datafile=datafile_text, event_dispatcher=dispatcher, profile_store="none") as c:
        decide_everyone(c)
        fast_count = len(dispatcher.events)
        pure()
        decide_everyone(c)
    assert fast_count > 0 and len(dispatcher.events) == 2 * fast_count


class Country(str):
    pass


@pytest.mark.parametrize("user, flag, attributes", [
    (b"user-1", "checkout_flow", {"country": "NL"}),            # bytes user id
    (Country("user-1"), "checkout_flow", None),                 # str subclass
    ("user-1", "checkout_flow", {"country": Country("NL")}),    # str subclass value
    ("user-1", "checkout_flow", {"age": 1 << 40}),              # large but 64-bit int
    ("user-1", "checkout_flow", dict(("k%d" % i, i) for i in range(80))),  # more than the fast path takes
    ("user-1", "checkout_flow", {"country": b"NL"}),            # bytes value
])
def test_inputs_outside_the_fast_path_fall_back_and_agree(datafile_text, pure, user, flag, attributes):
    with experiment.Client(datafile=datafile_text, profile_store="none") as c:
        fast = c.decide(user, flag, attributes)
        pure()
        assert c.decide(user, flag, attributes) == fast


@pytest.mark.parametrize("call, cls", [
    (lambda c: c.decide("u", "no_such_flag"), experiment.UnknownFlagError),
    (lambda c: c.variation_key("u", "no_such_flag"), experiment.UnknownFlagError),
    (lambda c: c.decide("u\0x", "checkout_flow"), experiment.InvalidArgumentError),
    (lambda c: c.decide("u", "checkout_flow", {"age": 1 << 70}), experiment.InvalidArgumentError),
    (lambda c: c.decide("u", "checkout_flow", {"age": object()}), experiment.UnsupportedTypeError),
    (lambda c: c.decide("u", "checkout_flow", {"country": "\ud800"}), experiment.InvalidUTF8Error),
    (lambda c: c.decide("u", "checkout_flow", options=("NOT_AN_OPTION",)), experiment.InvalidOptionError),
    (lambda c: c.decide(42, "checkout_flow"), experiment.UnsupportedTypeError),
])
def test_errors_are_the_same_on_both_paths(datafile_text, pure, call, cls):
    with experiment.Client(datafile=datafile_text, profile_store="none") as c:
        with pytest.raises(cls) as fast:
            call(c)
        pure()
        with pytest.raises(cls) as slow:
            call(c)
    assert fast.value.code == slow.value.code


def test_not_ready_and_closed(idle_client, datafile_text):
    with pytest.raises(experiment.NotReadyError):
        idle_client.decide("u", "checkout_flow")
    with pytest.raises(experiment.NotReadyError):
        idle_client.variation_key("u", "checkout_flow")
    c = experiment.Client(datafile=datafile_text, profile_store="none")
    c.close()
    with pytest.raises(experiment.ClosedError):
        c.variation_key("u", "checkout_flow")


def test_disabled_by_environment_variable():
    env = dict(os.environ, EXPERIMENT_NO_SPEEDUPS="1", PYTHONPATH=BINDING_ROOT)
    result = subprocess.run([sys.executable, "-c", "import experiment.client as m; print(m._speedups)"],
                            env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "None"
