"""Kameleoon and Sigma leftovers (issue 17 item 5) through the real library:

- ``run_when_ready(callback, timeout_ms)``: answered at once when ready, from a library thread on a
  timeout, when a datafile arrives, and with False when the client closes first (close() returns only after
  the callback ran); exceptions in the callable are logged, not raised;
- completion callbacks (``on_complete``) of ``track_conversion``, ``flush_user`` and ``flush_async`` against
  a real HTTP endpoint on 127.0.0.1 that acknowledges, fails (the event stays queued and is delivered
  later) and refuses (400: dead letter); with a host dispatcher and with event_endpoint "none";
- integer experiment and goal ids (Kameleoon's), bools refused;
- Sigma forced memberships by experiment key, and an experiment's flag values (getFeatureFlagValue).
"""

from __future__ import annotations

import copy
import json
import logging
import threading
from typing import Any, List, Tuple

import pytest

import experiment
from event_server import EventServer

# A bound against hanging, not a timing assertion: every wait below normally ends in milliseconds.
WAIT_S = 30.0


class Recorder:
    """Collects callback calls and the thread each ran on."""

    def __init__(self) -> None:
        self.calls: List[Tuple[Any, int]] = []
        self.done = threading.Event()

    def __call__(self, value: Any) -> None:
        self.calls.append((value, threading.get_ident()))
        self.done.set()

    def wait(self) -> Any:
        assert self.done.wait(WAIT_S), "the callback was not called"
        assert len(self.calls) == 1
        return self.calls[0][0]

    @property
    def thread(self) -> int:
        return self.calls[0][1]


@pytest.fixture()
def server():
    s = EventServer()
    yield s
    s.stop()


def pipeline_client(datafile_text: str, state_dir: Any, endpoint: str, **options: Any) -> experiment.Client:
    options.setdefault("event_flush_interval_ms", 20)
    options.setdefault("request_timeout_ms", 2000)
    return experiment.Client(datafile=datafile_text, state_dir=str(state_dir), event_endpoint=endpoint, **options)


# ------------------------------------------------------------------------------------------------
# run_when_ready
# ------------------------------------------------------------------------------------------------

def test_run_when_ready_on_a_ready_client_answers_on_this_thread(datafile_text):
    with experiment.Client(datafile=datafile_text) as c:
        seen = Recorder()
        c.run_when_ready(seen, timeout_ms=1000)
        assert seen.calls == [(True, threading.get_ident())]  # before run_when_ready returned


def test_run_when_ready_times_out_on_a_library_thread(idle_client):
    seen = Recorder()
    idle_client.run_when_ready(seen, timeout_ms=10)
    assert seen.wait() is False
    assert seen.thread != threading.get_ident()


def test_run_when_ready_when_the_datafile_arrives(datafile_text):
    with experiment.Client() as c:
        seen = Recorder()
        c.run_when_ready(seen, timeout_ms=60_000)
        assert not seen.done.is_set()
        c.start(datafile_text)
        assert seen.wait() is True
        assert c.ready


def test_run_when_ready_close_first_calls_back_before_close_returns():
    c = experiment.Client()
    waits = [Recorder() for _ in range(5)]
    for seen in waits:
        c.run_when_ready(seen)  # the default timeout: 2000 ms
    c.close()
    assert [seen.calls[0][0] for seen in waits if seen.calls] == [False] * 5


def test_run_when_ready_errors_and_a_raising_callable(datafile_text, caplog):
    with experiment.Client(datafile=datafile_text) as c:
        with pytest.raises(TypeError):
            c.run_when_ready("not callable")  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            c.run_when_ready(lambda ready: None, timeout_ms=True)

        def boom(ready: bool) -> None:
            raise RuntimeError("callback bug")

        with caplog.at_level(logging.ERROR, logger="experiment"):
            c.run_when_ready(boom)
        assert "run_when_ready callback failed" in caplog.text and "callback bug" in caplog.text
        assert c.ready  # the client keeps working
    with pytest.raises(experiment.ClosedError):
        c.run_when_ready(lambda ready: None)


def test_run_when_ready_may_call_the_client_and_close_it():
    c = experiment.Client()
    seen = Recorder()

    def close_inside(ready: bool) -> None:
        c.close()  # allowed: the callback runs on a library thread holding no lock
        seen(ready)

    c.run_when_ready(close_inside, timeout_ms=10)
    assert seen.wait() is False
    c.close()


# ------------------------------------------------------------------------------------------------
# completion callbacks
# ------------------------------------------------------------------------------------------------

def test_track_conversion_on_complete_after_delivery(datafile_text, tmp_path, server):
    with pipeline_client(datafile_text, tmp_path, server.url) as c:
        seen = Recorder()
        c.track_conversion("user-1", 128763, 10.0, on_complete=seen)
        result = seen.wait()
        assert isinstance(result, experiment.DeliveryResult)
        assert result and result.ok and result.sent == 1 and result.error is None
        assert seen.thread != threading.get_ident()
        goals = [e["entity_id"] for e in server.events()]
        assert goals == ["128763"]  # delivered before the callback ran


def test_failing_endpoint_reports_delivery_failed_and_keeps_the_event(datafile_text, tmp_path, server):
    server.failure_rate = 1.0
    with pipeline_client(datafile_text, tmp_path, server.url, close_timeout_ms=5000) as c:
        seen = Recorder()
        c.track_conversion("user-1", "83023", on_complete=seen)
        result = seen.wait()
        assert not result and result.sent == 0
        assert isinstance(result.error, experiment.DeliveryFailedError)
        assert result.error.code == -28 and "not delivered" in result.error.message
        assert c.stats()["pending"] >= 1  # kept for a retry
        server.failure_rate = 0.0
        flushed = Recorder()
        c.flush_async(flushed)
        done = flushed.wait()
        assert done.ok and done.sent == 1
    assert [e["entity_id"] for e in server.events()] == ["83023"]


def test_refused_event_reports_delivery_failed(datafile_text, tmp_path, server):
    server.poison_marker = "refused-user"
    with pipeline_client(datafile_text, tmp_path, server.url) as c:
        seen = Recorder()
        c.track_conversion("refused-user", 1, on_complete=seen)
        assert isinstance(seen.wait().error, experiment.DeliveryFailedError)
        assert c.stats()["poisoned"] == 1


def test_flush_user_on_complete(datafile_text, tmp_path, server):
    with pipeline_client(datafile_text, tmp_path, server.url) as c:
        nothing = Recorder()
        c.flush_user("user-2", on_complete=nothing)
        assert nothing.calls and nothing.calls[0][1] == threading.get_ident()  # no data: at once
        assert nothing.calls[0][0].ok and nothing.calls[0][0].sent == 0
        c.add_user_data("user-2", {"type": "custom", "index": 1, "value": "gold"})
        seen = Recorder()
        c.flush_user("user-2", on_complete=seen)
        assert seen.wait().sent == 1
    attributes = [a for b in server.batches for v in b["visitors"] for a in v["attributes"]]
    assert any(a["key"] == "kameleoon_custom_1" and a["value"] == "gold" for a in attributes)


def test_flush_async_counts_this_clients_events(datafile_text, tmp_path, server):
    # No timer rounds: the events wait for the flush.
    with pipeline_client(datafile_text, tmp_path, server.url, event_flush_interval_ms=3_600_000,
                         event_batch_size=100) as c:
        for goal in range(5):
            c.track_conversion("user-%d" % goal, goal)
        seen = Recorder()
        c.flush_async(seen)
        result = seen.wait()
        assert result.ok and result.sent == 5
        assert seen.thread != threading.get_ident()
    assert sorted(int(e["entity_id"]) for e in server.events()) == list(range(5))


def test_flush_async_timeout_when_the_endpoint_stays_down(datafile_text, tmp_path, server):
    server.failure_rate = 1.0
    with pipeline_client(datafile_text, tmp_path, server.url, close_timeout_ms=200,
                         event_flush_interval_ms=3_600_000) as c:
        c.track_conversion("user-1", 7)
        seen = Recorder()
        c.flush_async(seen)
        result = seen.wait()
        assert isinstance(result.error, experiment.WaitTimeoutError) and result.sent == 0


def test_pending_callbacks_are_called_before_close_returns(datafile_text, tmp_path, server):
    c = pipeline_client(datafile_text, tmp_path, server.url, event_flush_interval_ms=3_600_000,
                        event_batch_size=1000)
    waits = [Recorder() for _ in range(10)]
    for goal, seen in enumerate(waits):
        c.track_conversion("user-%d" % goal, goal, on_complete=seen)
    c.close()  # delivers the queue, so every callback ran with its outcome
    assert [seen.calls[0][0].ok for seen in waits if seen.calls] == [True] * 10
    with pytest.raises(experiment.ClosedError):
        c.flush_async(lambda result: None)


def test_host_dispatcher_and_endpoint_none(datafile_text, client, dispatcher):
    seen = Recorder()
    client.track_conversion("user-1", 5, on_complete=seen)
    assert seen.calls and seen.thread == threading.get_ident()  # the dispatcher's answer, at once
    assert seen.calls[0][0].ok and seen.calls[0][0].sent == 1
    assert len(dispatcher.events) == 1
    with experiment.Client(datafile=datafile_text, event_endpoint="none") as c:
        nowhere = Recorder()
        c.track_conversion("user-1", 5, on_complete=nowhere)
        assert isinstance(nowhere.calls[0][0].error, experiment.DeliveryFailedError)


def test_on_complete_errors(datafile_text, tmp_path, server, caplog):
    with pipeline_client(datafile_text, tmp_path, server.url) as c:
        with pytest.raises(TypeError):
            c.track_conversion("u", 1, on_complete=42)  # type: ignore[arg-type]
        with pytest.raises(experiment.InvalidArgumentError):
            c.track_conversion("u", -1, on_complete=lambda result: None)
        raised = threading.Event()

        def boom(result: experiment.DeliveryResult) -> None:
            raised.set()
            raise ValueError("handler bug")

        with caplog.at_level(logging.ERROR, logger="experiment"):
            c.track_conversion("u", 1, on_complete=boom)
            assert raised.wait(WAIT_S)
            c.flush()
        assert "on_complete callback failed" in caplog.text


# ------------------------------------------------------------------------------------------------
# integer ids
# ------------------------------------------------------------------------------------------------

def trigger_outcome(client: experiment.Client, user: str, experiment_id: Any) -> str:
    try:
        return client.trigger_experiment(user, experiment_id)
    except (experiment.NotAllocatedError, experiment.NotTargetedError) as exc:
        return type(exc).__name__


def test_integer_experiment_and_goal_ids(client, dispatcher):
    outcomes = [trigger_outcome(client, "user-%d" % n, 60001) for n in range(20)]
    assert outcomes == [trigger_outcome(client, "user-%d" % n, "60001") for n in range(20)]
    assert {"61001", "61002"} <= set(outcomes)
    with pytest.raises(experiment.UnknownExperimentError):
        client.trigger_experiment("user-7", 9999)
    for bad in (True, False, 60001.0, [60001]):
        with pytest.raises(TypeError):
            client.trigger_experiment("user-7", bad)
    client.track_conversion("user-7", 42)
    client.track_conversion("user-7", "42")
    for bad in (True, 4.2, "4x", None):
        with pytest.raises(TypeError):
            client.track_conversion("user-7", bad)
    goals = [event["entity_id"] for params in dispatcher.conversions() for visitor in params["visitors"]
             for snapshot in visitor["snapshots"] for event in snapshot["events"]]
    assert goals[-2:] == ["42", "42"]
    client.force_include("user-8", 60001, 1)
    assert client.get_variation("checkout_test", "user-8") == "treatment"
    client.force_clear("user-8", 60001)
    with pytest.raises(TypeError):
        client.force_exclude("user-8", True)


# ------------------------------------------------------------------------------------------------
# Sigma: forced memberships by key, an experiment's flag values
# ------------------------------------------------------------------------------------------------

def test_forced_memberships_by_key(client, idle_client):
    with pytest.raises(experiment.NotReadyError):
        idle_client.force_include_key("qa", "checkout_test", 1)
    with pytest.raises(experiment.UnknownExperimentError):
        client.force_include_key("qa", "no_such_experiment")
    with pytest.raises(experiment.UnknownVariationError):
        client.force_include_key("qa", "checkout_test", 2)
    client.force_include_key("qa", "checkout_test", 1)
    assert client.get_variation("checkout_test", "qa") == "treatment"
    client.force_exclude_key("qa", "checkout_test")
    assert client.get_variation("checkout_test", "qa") is None
    client.force_clear_key("qa", "checkout_test")
    # The key names the id: the id-based calls see the same membership.
    client.force_include_key("qa", "checkout_test", 0)
    assert client.get_variation("checkout_test", "qa") == "control"
    client.force_clear("qa", "60001")
    client.force_include("qa", "60001", 1)
    assert client.get_variation("checkout_test", "qa") == "treatment"


def test_experiment_flag_values(client):
    client.force_include_key("qa", "checkout_test", 1)
    e = client.get_experiment("qa", "checkout_test")
    assert e is not None and e.variation_key == "treatment"
    assert e.flag_bool("checkout_flow") is True
    assert e.flag_string("checkout_flow", "headline") == "Big sale"
    assert e.flag_int("checkout_flow", "max_items") == 25
    assert e.flag_double("checkout_flow", "discount") == 0.15
    assert e.flag_bool("checkout_flow", "show_banner") is True
    # The same values decide gives the user for the flag.
    variables = client.decide("qa", "checkout_flow").variables
    assert (variables["headline"], variables["max_items"], variables["discount"]) == ("Big sale", 25, 0.15)
    with pytest.raises(experiment.UnknownFlagError):
        e.flag_bool("no_such_flag")
    with pytest.raises(experiment.NotFoundError, match="does not use experiment"):
        e.flag_bool("search_ranking")
    with pytest.raises(experiment.NotFoundError, match="no variable"):
        e.flag_string("checkout_flow", "nope")
    with pytest.raises(experiment.TypeMismatchError):
        e.flag_int("checkout_flow", "headline")
    with pytest.raises(experiment.TypeMismatchError):
        e.flag_json("checkout_flow", "max_items")
    with pytest.raises(TypeError):
        e.flag_bool(3)  # type: ignore[arg-type]


def test_experiment_flag_values_of_a_variation_that_disables_the_flag(datafile_dict):
    data = copy.deepcopy(datafile_dict)
    for exp in data["experiments"]:
        if exp["key"] == "checkout_test":
            exp["variations"][1]["featureEnabled"] = False
    with experiment.Client(datafile=json.dumps(data), event_endpoint="none") as c:
        c.force_include_key("qa", "checkout_test", 1)
        e = c.get_experiment("qa", "checkout_test")
        assert e is not None
        assert e.flag_bool("checkout_flow") is False
        # The flag's value is the default (as decide gives it); the parameter is the variation's own.
        assert e.flag_string("checkout_flow", "headline") == "Welcome"
        assert e.param_string("headline") == "Big sale"
        assert c.decide("qa", "checkout_flow").variables["headline"] == "Welcome"
