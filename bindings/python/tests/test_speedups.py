"""The binding's optional C accelerator (experiment/_speedups.c) against its pure ctypes path.

Clients here use profile_store="none": a sticky profile saved by the first path would change the second
path's reasons ("returning previously stored variation").

`make test-python` runs the whole suite with the accelerator built, and this file (with test_decide.py
and test_input_errors.py) once more with EXPERIMENT_NO_SPEEDUPS=1. Here both paths run in one process:
the decisions, the errors and the fallbacks must not depend on which path took the call.
"""
import json
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
        monkeypatch.setattr(client_module, "_decisions_by_flag", client_module._PY_DECISIONS_BY_FLAG)
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


@pytest.mark.parametrize("options", [(), ("INCLUDE_REASONS",), ("EXCLUDE_VARIABLES", "ENABLED_FLAGS_ONLY")])
def test_decide_all_and_for_keys_agree(datafile_text, pure, options):
    """decide_all / decide_for_keys build their Decisions in C with the accelerator."""
    def decide_many(c):
        return [(c.decide_all(user, attributes, options),
                 c.decide_for_keys(user, ["search_ranking", "no_such_flag", "checkout_flow"], attributes, options))
                for user, attributes in list(_users())[:60]]

    with experiment.Client(datafile=datafile_text, profile_store="none") as c:
        fast = decide_many(c)
        pure()
        slow = decide_many(c)
    assert fast == slow
    assert [list(d) for d, _ in fast] == [list(d) for d, _ in slow]  # the same flag order


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


@pytest.mark.parametrize("call", [
    lambda c: c.decide("u", "no_such_flag"),
    lambda c: c.variation_key("u", "no_such_flag"),
    lambda c: c.decide("u", "no_such_flag", None, ("INCLUDE_REASONS",)),
    lambda c: c.decide("u\0x", "checkout_flow"),
    lambda c: c.decide("u2", "checkout_flow", {"age": 1 << 70, "country": "NL"}),
    lambda c: c.decide("u2", "checkout_flow", {"age": object(), "country": ["NL"]}),
    lambda c: c.decide("u", "checkout_flow", {"country": "\ud800"}),
    lambda c: c.decide("u", "checkout_flow", {"age": 1 << 64, "ratio": float("nan")}),
    lambda c: c.decide("u", "checkout_flow", {1: "x"}),
    lambda c: c.variation_key("u", "checkout\0flow"),
    lambda c: c.variation_key("u", None),
    lambda c: c.decide("u", 42),
    lambda c: c.decide("u" * 2000, "checkout_flow"),
    lambda c: c.decide("u", "checkout_flow", {"k" * 2000: 1}),
])
def test_data_conditions_answer_the_same_on_both_paths(datafile_text, pure, call):
    """What the reference answers without raising (unknown flag, values of any type, NUL bytes, keys past the
    limits) gets the same answer from the accelerator and the ctypes path."""
    with experiment.Client(datafile=datafile_text, profile_store="none") as c:
        fast = call(c)
        pure()
        slow = call(c)
    assert fast == slow


@pytest.mark.parametrize("call, cls", [
    (lambda c: c.decide("u", "checkout_flow", options=("NOT_AN_OPTION",)), experiment.InvalidOptionError),
    (lambda c: c.decide(42, "checkout_flow"), experiment.UnsupportedTypeError),
    (lambda c: c.decide("u"), TypeError),                                         # flag_key missing
    (lambda c: c.decide(), TypeError),
    (lambda c: c.decide("u", "checkout_flow", None, (), "extra"), TypeError),     # too many
    (lambda c: c.decide("u", "checkout_flow", colour="red"), TypeError),          # unknown keyword
    (lambda c: c.decide("u", "checkout_flow", user_id="u"), TypeError),           # given twice
    (lambda c: c.variation_key("u", flag_key="checkout_flow", options=(1.5,)), experiment.InvalidOptionError),
    (lambda c: c.decide("u", "checkout_flow", options=-1), experiment.InvalidOptionError),
    (lambda c: c.decide("u", "checkout_flow", options=1 << 40), experiment.InvalidOptionError),
    (lambda c: c.decide("u", "checkout_flow", options=True), experiment.InvalidOptionError),
    (lambda c: c.decide("u", "checkout_flow", options=(["EXCLUDE_VARIABLES"],)), TypeError),  # unhashable
    (lambda c: c.decide("u", "checkout_flow", "country=NL"), experiment.UnsupportedTypeError),
    (lambda c: c.variation_key(None, "checkout_flow"), experiment.InvalidArgumentError),
    (lambda c: c.decide("u\ud800", "checkout_flow"), experiment.InvalidUTF8Error),
])
def test_errors_are_the_same_on_both_paths(datafile_text, pure, call, cls):
    with experiment.Client(datafile=datafile_text, profile_store="none") as c:
        with pytest.raises(cls) as fast:
            call(c)
        pure()
        with pytest.raises(cls) as slow:
            call(c)
    assert type(fast.value) is type(slow.value) and str(fast.value) == str(slow.value)
    assert getattr(fast.value, "code", None) == getattr(slow.value, "code", None)


def test_not_ready_and_closed(idle_client, datafile_text):
    decision = idle_client.decide("u", "checkout_flow")
    assert (decision.enabled, decision.variation_key, decision.reasons) == \
        (False, None, ["Optimizely SDK not configured properly yet."])
    assert idle_client.variation_key("u", "checkout_flow") is None
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


# ------------------------------------------------------------------------------------------------
# Client.decide / Client.variation_key as C method descriptors
# ------------------------------------------------------------------------------------------------

accelerated = pytest.mark.skipif(client_module._speedups is None, reason="the C accelerator is not loaded")


@pytest.mark.parametrize("call", [
    lambda c: c.decide("user-3", "checkout_flow", {"country": "NL"}),
    lambda c: c.decide("user-3", "checkout_flow", attributes={"country": "NL"}),
    lambda c: c.decide(user_id="user-3", flag_key="checkout_flow", attributes={"country": "NL"}, options=()),
    lambda c: c.decide("user-3", flag_key="checkout_flow", options=["INCLUDE_REASONS"]),
    lambda c: c.decide("user-3", "checkout_flow", None, experiment.DecideOption.INCLUDE_REASONS),
    lambda c: c.decide("user-3", "checkout_flow", None, int(experiment.DecideOption.EXCLUDE_VARIABLES)),
    lambda c: c.decide("user-3", "checkout_flow", None, "EXCLUDE_VARIABLES"),
    lambda c: c.decide("user-3", "checkout_flow", {}, None),
    lambda c: c.decide("user-3", "checkout_flow", [], ()),                      # falsy non-dict: no attributes
    lambda c: experiment.Client.decide(c, "user-3", "checkout_flow"),          # the class's Python function
    lambda c: c.variation_key("user-3", "checkout_flow", options=("INCLUDE_REASONS",)),
    lambda c: c.variation_key(flag_key="checkout_flow", user_id="user-3"),
])
def test_call_shapes_agree(datafile_text, pure, call):
    with experiment.Client(datafile=datafile_text, profile_store="none") as c:
        fast = call(c)
        pure()
        assert call(c) == fast


def test_methods_taken_before_close_refuse_after_it(datafile_text):
    c = experiment.Client(datafile=datafile_text, profile_store="none")
    decide, variation_key = c.decide, c.variation_key
    assert decide("u", "checkout_flow").flag_key == "checkout_flow"
    c.close()
    for call in (lambda: decide("u", "checkout_flow"), lambda: variation_key("u", "checkout_flow"),
                 lambda: c.decide("u", "checkout_flow", {"country": "NL"}, ("EXCLUDE_VARIABLES",))):
        with pytest.raises(experiment.ClosedError, match="the client is closed"):
            call()


def test_close_from_a_listener_during_decide(datafile_text):
    """A decision listener (a Python callback made inside exp_decide) closes the client: the decide in
    flight still completes with its decision, the next one raises ClosedError."""
    c = experiment.Client(datafile=datafile_text, profile_store="none")
    c.add_listener("decision", lambda payload: c.close())
    decision = c.decide("user-1", "checkout_flow", {"country": "NL"})
    assert decision.flag_key == "checkout_flow"
    with pytest.raises(experiment.ClosedError):
        c.variation_key("user-1", "checkout_flow")


def test_listener_that_empties_the_attributes_during_decide(datafile_text, dispatcher):
    """The accelerator passes pointers into the attribute dict's str objects: it holds them for the call,
    so a listener clearing the dict (dropping the last references) cannot free them under the library."""
    with experiment.Client(datafile=datafile_text, event_dispatcher=dispatcher, profile_store="none") as c:
        expected = c.decide("user-1", "checkout_flow", {"country": "NL", "plan": "gold"})
        attributes = {"".join(["coun", "try"]): "".join(["N", "L"]), "".join(["pl", "an"]): "".join(["go", "ld"])}
        c.add_listener("decision", lambda payload: attributes.clear())
        assert c.decide("user-1", "checkout_flow", attributes) == expected
        assert attributes == {}
        attributes.update(country="NL", plan="gold")
        assert c.variation_key("user-1", "checkout_flow", attributes) == expected.variation_key


def _with_keys_renamed(datafile_text, suffix):
    data = json.loads(datafile_text)
    for experiment_ in data["experiments"]:
        experiment_["key"] += suffix
        for variation in experiment_["variations"]:
            variation["key"] += suffix
    for rollout in data["rollouts"]:
        for rule in rollout["experiments"]:
            rule["key"] += suffix
            for variation in rule["variations"]:
                variation["key"] += suffix
    return json.dumps(data)


@pytest.mark.parametrize("suffix", ["-v2", "-é", ""])
def test_keys_follow_a_replaced_datafile(datafile_text, pure, suffix):
    """The accelerator reuses str objects for variation and rule keys: a replaced datafile (new keys,
    maybe at addresses the old ones had) and a second client must still get their own keys."""
    renamed = _with_keys_renamed(datafile_text, suffix)
    users = [("user-%d" % i, {"country": COUNTRIES[i % 5]}) for i in range(60)]
    with experiment.Client(datafile=datafile_text, profile_store="none") as c, \
            experiment.Client(datafile=renamed, profile_store="none") as other:
        before = [c.decide(u, "checkout_flow", a) for u, a in users]
        c.start(renamed)
        after = [c.decide(u, "checkout_flow", a) for u, a in users]
        keys = [c.variation_key(u, "checkout_flow", a) for u, a in users]
        assert [other.variation_key(u, "checkout_flow", a) for u, a in users] == keys
        pure()
        assert [c.decide(u, "checkout_flow", a) for u, a in users] == after
    assert keys == [d.variation_key for d in after]
    assert any(d.variation_key for d in before)
    for old, new in zip(before, after):
        assert new.variation_key == (old.variation_key + suffix if old.variation_key else None)
        assert new.rule_key == (old.rule_key + suffix if old.rule_key else None)


def test_each_decision_owns_its_variables(datafile_text):
    """Variables come from a cache: mutating one decision's must not show in the next one's."""
    with experiment.Client(datafile=datafile_text, profile_store="none") as c:
        first = c.decide("user-1", "checkout_flow", {"country": "NL"})
        expected = json.loads(json.dumps(first.variables))
        first.variables.clear()
        first.reasons.append("mine")
        for _ in range(3):
            again = c.decide("user-1", "checkout_flow", {"country": "NL"})
            assert again.variables == expected and again.reasons == []
            again.variables["extra"] = 1


def test_decision_value_semantics(datafile_text, pure):
    import copy
    import dataclasses
    import pickle
    with experiment.Client(datafile=datafile_text, profile_store="none") as c:
        fast = c.decide("user-1", "checkout_flow", {"country": "NL"}, ("INCLUDE_REASONS",))
        pure()
        slow = c.decide("user-1", "checkout_flow", {"country": "NL"}, ("INCLUDE_REASONS",))
    for d in (fast, slow):
        assert type(d) is experiment.Decision and d == fast and repr(d) == repr(fast)
        assert pickle.loads(pickle.dumps(d)) == d and copy.deepcopy(d) == d
        assert dataclasses.asdict(d) == d.to_dict() and dataclasses.replace(d, enabled=not d.enabled) != d
        with pytest.raises(dataclasses.FrozenInstanceError):
            d.enabled = False  # type: ignore[misc]
        with pytest.raises(TypeError):
            hash(d)


class Tracked(experiment.Client):
    __slots__ = ("calls",)

    def decide(self, *args, **kwargs):
        self.calls = getattr(self, "calls", 0) + 1
        return super().decide(*args, **kwargs)


def test_subclass_calls_through_super(datafile_text):
    with Tracked(datafile=datafile_text, profile_store="none") as c:
        assert c.decide("user-1", "checkout_flow").flag_key == "checkout_flow"
        assert c.decide("user-1", "checkout_flow", {"country": "NL"}).flag_key == "checkout_flow"
        assert c.calls == 2
        assert c.variation_key("user-1", "checkout_flow") == c.decide("user-1", "checkout_flow").variation_key


@accelerated
def test_methods_look_like_the_python_ones(datafile_text):
    import inspect
    with experiment.Client(datafile=datafile_text, profile_store="none") as c:
        assert isinstance(experiment.Client.__dict__["decide"], client_module._speedups.FastMethod)
        assert experiment.Client.decide is client_module._PY_DECIDE   # class access: the Python function
        assert c.decide.__self__ is c
        assert str(inspect.signature(c.variation_key)) == str(inspect.signature(
            client_module._PY_VARIATION_KEY.__get__(c)))
        assert c.decide.__doc__ == client_module._PY_DECIDE.__doc__


@accelerated
def test_found_client_takes_the_fast_path(datafile_text):
    with experiment.Client(datafile=datafile_text, profile_store="none", tag="speedups-find") as c:
        assert experiment.Client.find("speedups-find")._native is not None
        assert c._native is not None
    assert c._native is None


@accelerated
def test_gil_is_released_only_when_the_decide_may_wait(datafile_text, tmp_path):
    """Without the GIL: clients whose profile store may wait on I/O; the others keep it unless the call
    may send an impression (see _speedups.c). The flags only: timing is the benchmarks' business."""
    class Profiles:
        def lookup(self, user_id):
            return None

        def save(self, profile):
            pass

    cases = [({"profile_store": "none"}, 0, 0), ({"profile_store": Profiles()}, 0, 0),
             ({}, 1, 0), ({"profile_store": "sqlite"}, 1, 0),
             ({"profile_store": "none", "default_decide_options": ["DISABLE_DECISION_EVENT"]}, 0, 1),
             ({"profile_store": "none", "default_decide_options": experiment.DecideOption.DISABLE_DECISION_EVENT}, 0, 1)]
    for options, store_may_wait, events_off in cases:
        with experiment.Client(datafile=datafile_text, state_dir=str(tmp_path), **options) as c:
            assert (c._native.store_may_wait, c._native.events_off) == (store_may_wait, events_off), options
            for call_options in ((), ("DISABLE_DECISION_EVENT",)):
                assert c.variation_key("user-1", "checkout_flow", {"country": "NL"}, call_options) == \
                    client_module._PY_VARIATION_KEY(c, "user-1", "checkout_flow", {"country": "NL"}, call_options)
