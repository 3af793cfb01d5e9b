"""Event dispatcher: impressions on decide/activate/trigger, conversions on track, tag validation,
a failing dispatcher, and the payload format against the reference SDK."""

from __future__ import annotations

import json
import re
import logging

import pytest

import experiment
from conftest import TRAILING, U2_ATTRS, U3_ATTRS, RecordingDispatcher, nested_json, raises


def _snapshot(params):
    return params["visitors"][0]["snapshots"][0]


def test_impression_on_decide_of_an_experiment_flag(client, dispatcher):
    client.decide("u2", "checkout_flow", U2_ATTRS)
    assert len(dispatcher.events) == 1
    event = dispatcher.events[0]
    assert isinstance(event, experiment.Event)
    assert event.http_verb == "POST"
    assert event.url.startswith("http")
    assert event.headers == {"Content-Type": "application/json"}
    assert json.loads(event.body) == event.params
    params = event.params
    assert (params["account_id"], params["project_id"], params["revision"]) == ("10001", "20001", "42")
    visitor = params["visitors"][0]
    assert visitor["visitor_id"] == "u2"
    snapshot = visitor["snapshots"][0]
    assert snapshot["events"][0]["key"] == "campaign_activated"
    assert snapshot["events"][0]["entity_id"] == "90001"
    decision = snapshot["decisions"][0]
    assert (decision["campaign_id"], decision["experiment_id"], decision["variation_id"]) == \
        ("90001", "60001", "61001")
    assert decision["metadata"] == {"flag_key": "checkout_flow", "rule_key": "checkout_test",
                                    "rule_type": "feature-test", "variation_key": "control", "enabled": True}
    attributes = {a["key"]: a for a in visitor["attributes"]}
    assert attributes["country"]["value"] == "NL" and attributes["country"]["entity_id"] == "30001"
    assert attributes["age"]["value"] == 30


def test_no_impression_with_disable_decision_event(client, dispatcher):
    client.decide("u2", "checkout_flow", U2_ATTRS, options=["DISABLE_DECISION_EVENT"])
    client.decide_all("u2", U2_ATTRS, options=[experiment.DecideOption.DISABLE_DECISION_EVENT])
    client.decide_for_keys("u2", ["checkout_flow"], U2_ATTRS, options=["DISABLE_DECISION_EVENT"])
    assert dispatcher.events == []


def test_default_disable_decision_event(datafile_text):
    rec = RecordingDispatcher()
    with experiment.Client(datafile=datafile_text, event_dispatcher=rec,
                           default_decide_options=["DISABLE_DECISION_EVENT"]) as c:
        c.decide("u2", "checkout_flow", U2_ATTRS)
    assert rec.events == []


def test_no_impression_for_rollout_decision(client, dispatcher):
    # sendFlagDecisions is false: delivery rules send nothing, as in the reference SDK
    client.decide("u1", "checkout_flow")
    client.decide("u2", "search_ranking", U2_ATTRS)
    assert dispatcher.events == []


def test_impressions_on_decide_all(client, dispatcher):
    client.decide_all("u3", U3_ATTRS)
    flags = sorted(_snapshot(p)["decisions"][0]["metadata"]["flag_key"] for p in dispatcher.impressions())
    assert flags == ["checkout_flow", "search_ranking"]


def test_send_flag_decisions_sends_rollout_impressions(datafile_dict):
    datafile_dict["sendFlagDecisions"] = True
    rec = RecordingDispatcher()
    with experiment.Client(datafile=json.dumps(datafile_dict), event_dispatcher=rec) as c:
        c.decide("u1", "checkout_flow")
    assert len(rec.events) == 1
    metadata = _snapshot(rec.events[0].params)["decisions"][0]["metadata"]
    assert metadata["rule_type"] == "rollout" and metadata["variation_key"] == "off"


def test_conversion_on_track_with_tags(client, dispatcher):
    client.track("purchase", "u2", U2_ATTRS, tags={"revenue": 4200, "value": 3.5, "category": "shoes"})
    assert len(dispatcher.events) == 1
    params = dispatcher.events[0].params
    event = _snapshot(params)["events"][0]
    assert event["key"] == "purchase" and event["entity_id"] == "50001"
    assert event["revenue"] == 4200
    assert event["value"] == 3.5
    assert event["tags"] == {"revenue": 4200, "value": 3.5, "category": "shoes"}
    assert params["visitors"][0]["visitor_id"] == "u2"
    assert {a["key"] for a in params["visitors"][0]["attributes"]} >= {"country", "age"}


def test_track_without_tags_and_tags_as_json_text(client, dispatcher):
    client.track("signup", "u1")
    client.track("purchase", "u1", tags='{"revenue": 100}')
    client.track("purchase", "u1", tags=b'{"category": "x"}')
    assert len(dispatcher.conversions()) == 3
    assert "revenue" not in _snapshot(dispatcher.events[0].params)["events"][0]
    assert _snapshot(dispatcher.events[1].params)["events"][0]["revenue"] == 100


def test_mistyped_revenue_and_value_stay_plain_tags(client, dispatcher):
    """As the reference SDK: only an integer revenue and a numeric value are reported as such."""
    client.track("purchase", "u1", tags={"revenue": 12.5, "value": "high"})
    client.track("purchase", "u1", tags={"revenue": True, "value": "2.5"})
    first = _snapshot(dispatcher.events[-2].params)["events"][0]
    second = _snapshot(dispatcher.events[-1].params)["events"][0]
    assert "revenue" not in first and "value" not in first
    assert first["tags"] == {"revenue": 12.5, "value": "high"}
    assert "revenue" not in second and second["value"] == 2.5


def test_track_errors(client, dispatcher, idle_client, caplog):
    """As the reference: an unknown event, a client without a datafile or unusable tags send nothing and log
    why, without an exception; a user id that is not text is a programmer error."""
    raises(experiment.InvalidArgumentError, -1, r"user", client.track, "purchase", None)
    data_conditions = [
        (r"no_such_event", lambda: client.track("no_such_event", "u1")),
        (r"event_key", lambda: client.track(None, "u1")),
        (r"object|tags", lambda: client.track("purchase", "u1", tags=[1, 2])),
        (r"object|tags", lambda: client.track("purchase", "u1", tags="42")),
        (r".", lambda: client.track("purchase", "u1", tags="{revenue: 1}")),
        (TRAILING, lambda: client.track("purchase", "u1", tags='{"revenue": 1} x')),
        (r"deep|depth|nest", lambda: client.track("purchase", "u1", tags='{"a": %s}' % nested_json(10000))),
        (r"large|size|limit|exceed|bytes", lambda: client.track("purchase", "u1",
                                                                 tags={"blob": "x" * (1024 * 1024 + 1)})),
        (r"utf-?8", lambda: client.track("purchase", "u1", tags=b'{"category": "\xff"}')),
        (r"tags.*(object|serializ)", lambda: client.track("purchase", "u1", tags={"when": object()})),
        (r"tags|nan|inf|NaN", lambda: client.track("purchase", "u1", tags={"value": float("nan")})),
        (r".", lambda: idle_client.track("purchase", "u1")),
    ]
    for pattern, call in data_conditions:
        caplog.clear()
        with caplog.at_level("ERROR", logger="experiment"):
            assert call() is None
        assert any(re.search(pattern, record.getMessage(), re.I) for record in caplog.records), pattern
    assert dispatcher.events == []
    client.track("purchase", "u1", tags={"revenue": 1})
    assert len(dispatcher.events) == 1


def test_dispatcher_that_raises_does_not_break_decide(datafile_text, caplog):
    class Exploding:
        calls = 0

        def dispatch_event(self, event):
            Exploding.calls += 1
            raise RuntimeError("network down")

    with caplog.at_level(logging.ERROR, logger="experiment"):
        with experiment.Client(datafile=datafile_text, event_dispatcher=Exploding()) as c:
            for _ in range(3):
                assert c.decide("u2", "checkout_flow", U2_ATTRS).variation_key == "control"
            c.track("purchase", "u2")
            assert c.activate("checkout_test", "u2", U2_ATTRS) == "control"
    assert Exploding.calls == 5
    assert "network down" in caplog.text


def test_replace_and_remove_dispatcher(client, dispatcher):
    other = RecordingDispatcher()
    client.set_event_dispatcher(other)
    assert client.event_dispatcher is other
    client.decide("u2", "checkout_flow", U2_ATTRS)
    assert len(other.events) == 1 and dispatcher.events == []
    client.set_event_dispatcher(None)
    client.decide("u2", "checkout_flow", U2_ATTRS)   # dropped, no error
    assert len(other.events) == 1
    with pytest.raises(TypeError):
        client.set_event_dispatcher(42)


def test_dispatcher_survives_garbage_collection(datafile_text):
    import gc
    rec = RecordingDispatcher()
    c = experiment.Client(datafile=datafile_text, event_dispatcher=rec)
    gc.collect()
    for i in range(20):
        c.decide("u2", "checkout_flow", U2_ATTRS)
        if i % 5 == 0:
            gc.collect()
    assert len(rec.events) == 20
    c.close()


def test_dispatcher_may_call_the_client(datafile_text):
    """The callback runs on the calling thread; calling back into the client must not deadlock."""
    seen = []

    class Reentrant:
        def __init__(self):
            self.client = None

        def dispatch_event(self, event):
            seen.append(self.client.get_variation("checkout_test", "u2", U2_ATTRS))

    disp = Reentrant()
    with experiment.Client(datafile=datafile_text, event_dispatcher=disp) as c:
        disp.client = c
        assert c.decide("u2", "checkout_flow", U2_ATTRS).variation_key == "control"
    assert seen == ["control"]


# ------------------------------------------------------------------------------------------------
# payloads against the reference SDK
# ------------------------------------------------------------------------------------------------

def _normalize(params):
    params = json.loads(json.dumps(params))
    for key in ("client_name", "client_version"):
        params.pop(key, None)
    for visitor in params["visitors"]:
        visitor["attributes"] = sorted(visitor.get("attributes", []), key=lambda a: a["key"])
        for snapshot in visitor["snapshots"]:
            for event in snapshot["events"]:
                event.pop("uuid", None)
                event.pop("timestamp", None)
    return params


@pytest.fixture()
def reference(datafile_text):
    from optimizely import optimizely
    from optimizely.event.event_processor import ForwardingEventProcessor
    from optimizely.logger import NoOpLogger
    rec = RecordingDispatcher()
    # the default BatchEventProcessor dispatches later, from its own thread; forward synchronously instead
    return optimizely.Optimizely(datafile=datafile_text, event_dispatcher=rec, logger=NoOpLogger(),
                                 event_processor=ForwardingEventProcessor(rec)), rec


def test_impression_payload_matches_reference(client, dispatcher, reference):
    ref, ref_rec = reference
    ref.create_user_context("u2", dict(U2_ATTRS)).decide("checkout_flow")
    client.decide("u2", "checkout_flow", U2_ATTRS)
    assert len(ref_rec.events) == len(dispatcher.events) == 1
    assert dispatcher.events[0].url == ref_rec.events[0].url
    assert dispatcher.events[0].http_verb == ref_rec.events[0].http_verb
    assert _normalize(dispatcher.events[0].params) == _normalize(ref_rec.events[0].params)


def test_activate_payload_matches_reference(client, dispatcher, reference):
    ref, ref_rec = reference
    ref.activate("legacy_ab", "u2", dict(U2_ATTRS))
    client.activate("legacy_ab", "u2", U2_ATTRS)
    assert _normalize(dispatcher.events[0].params) == _normalize(ref_rec.events[0].params)


def test_conversion_payload_matches_reference(client, dispatcher, reference):
    ref, ref_rec = reference
    tags = {"revenue": 4200, "value": 3.5, "category": "shoes"}
    ref.track("purchase", "u2", dict(U2_ATTRS), dict(tags))
    client.track("purchase", "u2", U2_ATTRS, tags)
    assert _normalize(dispatcher.events[0].params) == _normalize(ref_rec.events[0].params)
