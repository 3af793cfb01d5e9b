"""experiment.optimizely against optimizely-sdk, in one process, where the datafile comes from a real HTTP
server on 127.0.0.1 and events go to a real event endpoint: an sdk_key-only instance before and after its
datafile arrives, an instance given an sdk_key and a datafile (started at once, then polled: new revisions and
OPTIMIZELY_CONFIG_UPDATE), and the default event dispatcher (LOG_EVENT listeners hear the reference's
LogEvents while libexperiment's pipeline delivers the events).

The reference fetches from PollingConfigManager.DATAFILE_URL_TEMPLATE (patched here to the local server);
libexperiment from EXPERIMENT_DATAFILE_URL_TEMPLATE. The reference's default dispatcher would POST to
logx.optimizely.com: its dispatch is caught here; libexperiment's pipeline POSTs to EXPERIMENT_EVENT_ENDPOINT.
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any, Callable, Dict, List, Tuple

import pytest

from test_datafile_lifecycle import SECOND_MS, Answer, new_key, server  # noqa: F401  (server: a fixture)
from event_server import EventServer

from experiment import optimizely as dropin

from optimizely import optimizely as reference_optimizely  # noqa: E402
from optimizely import optimizely_factory as reference_factory  # noqa: E402
from optimizely.config_manager import PollingConfigManager  # noqa: E402
from optimizely.event_dispatcher import EventDispatcher  # noqa: E402
from optimizely.helpers import enums as reference_enums  # noqa: E402
from optimizely.notification_center import NotificationCenter as ReferenceNotificationCenter  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DEMO = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(HERE))), "examples", "datafiles", "demo.json")
USERS = [("user-%d" % i, {"country": ["NL", "US", "DE"][i % 3], "age": 18 + i % 50, "plan": "premium"})
         for i in range(12)]


class Side:
    """One implementation: its Optimizely, factory and notification center classes."""

    def __init__(self, name: str, optimizely: Any, factory: Any, center: Any, types: Any) -> None:
        self.name = name
        self.Optimizely = optimizely
        self.Factory = factory
        self.NotificationCenter = center
        self.types = types


REFERENCE = Side("optimizely-sdk", reference_optimizely.Optimizely, reference_factory.OptimizelyFactory,
                 ReferenceNotificationCenter, reference_enums.NotificationTypes)
OURS = Side("experiment.optimizely", dropin.Optimizely, dropin.OptimizelyFactory, dropin.NotificationCenter,
            dropin.NotificationTypes)
SIDES = [REFERENCE, OURS]


@pytest.fixture()
def demo_text() -> str:
    with open(DEMO, encoding="utf-8") as f:
        return f.read()


@pytest.fixture()
def lifecycle(server: Any, monkeypatch: Any) -> Any:
    """Both implementations fetch from the local server; the factories' settings are restored afterwards."""
    monkeypatch.setattr(PollingConfigManager, "DATAFILE_URL_TEMPLATE", server.template())
    monkeypatch.setenv("EXPERIMENT_DATAFILE_URL_TEMPLATE", server.template())
    for side in SIDES:
        for name in ("polling_interval", "blocking_timeout"):
            monkeypatch.setattr(side.Factory, name, None)
    return server


@pytest.fixture()
def caught_reference_posts(monkeypatch: Any) -> List[Any]:
    """The reference's default dispatcher's events, caught instead of POSTed to logx.optimizely.com."""
    posted: List[Any] = []
    monkeypatch.setattr(EventDispatcher, "dispatch_event", staticmethod(posted.append))
    return posted


def wait_for(condition: Callable[[], bool], timeout_s: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


def with_revision(text: str, revision: str, **changes: Any) -> bytes:
    data = json.loads(text)
    data["revision"] = revision
    data.update(changes)
    return json.dumps(data).encode("utf-8")


def answers(client: Any, users: int = 6) -> List[Any]:
    """What every kind of call answers for a few users (decisions as JSON, the config's revision)."""
    out: List[Any] = []
    for user_id, attributes in USERS[:users]:
        out.append(("activate", client.activate("checkout_redesign_ab", user_id, attributes)))
        out.append(("get_variation", client.get_variation("checkout_redesign_ab", user_id, attributes)))
        out.append(("is_feature_enabled", client.is_feature_enabled("free_shipping", user_id, attributes)))
        out.append(("get_enabled_features", client.get_enabled_features(user_id, attributes)))
        out.append(("get_feature_variable", client.get_feature_variable("checkout_redesign", "button_color",
                                                                         user_id, attributes)))
        out.append(("get_feature_variable_integer", client.get_feature_variable_integer(
            "checkout_redesign", "steps", user_id, attributes)))
        out.append(("get_all_feature_variables", client.get_all_feature_variables("free_shipping", user_id,
                                                                                   attributes)))
        out.append(("track", client.track("purchase", user_id, attributes, {"revenue": 100})))
        out.append(("set_forced_variation", client.set_forced_variation("checkout_redesign_ab", user_id, "treatment")))
        out.append(("get_forced_variation", client.get_forced_variation("checkout_redesign_ab", user_id)))
        out.append(("unset_forced_variation", client.set_forced_variation("checkout_redesign_ab", user_id, None)))
        user = client.create_user_context(user_id, attributes)
        out.append(("decide", user.decide("checkout_redesign", ["INCLUDE_REASONS"]).as_json()))
        out.append(("decide_all", {k: d.as_json() for k, d in user.decide_all().items()}))
        out.append(("decide_for_keys", sorted(user.decide_for_keys(["free_shipping", "dark_mode"]))))
    config = client.get_optimizely_config()
    out.append(("config", None if config is None else (config.revision, config.sdk_key, config.environment_key,
                                                       sorted(config.features_map), config.get_datafile())))
    return out


def strip_user_context(results: List[Any]) -> List[Any]:
    """Decisions carry their user context (the same on both sides): kept, as as_json() gives it."""
    return json.loads(json.dumps(results, default=str))


# ------------------------------------------------------------------------------------------------
# Item 1: an sdk_key and no datafile
# ------------------------------------------------------------------------------------------------

def test_sdk_key_only_answers_as_the_reference_while_no_datafile_arrives(lifecycle: Any) -> None:
    """The server has no datafile for the key (404): every call answers what the reference answers with no
    config (None, False, [], {}, the not-ready decision), after waiting at most the blocking timeout."""
    results = {}
    for side in SIDES:
        side.Factory.set_blocking_timeout(0.2)  # the reference waits this long in every call
        client = side.Factory.default_instance(new_key())
        results[side.name] = strip_user_context(answers(client, users=1))
        client.close()
    assert results[OURS.name] == results[REFERENCE.name]
    assert ["config", None] in results[OURS.name]


def test_sdk_key_only_waits_for_its_datafile_then_answers_as_the_reference(lifecycle: Any, demo_text: str,
                                                                           caught_reference_posts: Any) -> None:
    """The datafile arrives after a delay: the first call waits for it (the reference's blocking get_config),
    then every call decides from it, and get_optimizely_config gives it back, byte for byte."""
    results = {}
    for side in SIDES:
        key = new_key()
        lifecycle.serve(key, Answer(demo_text.encode("utf-8"), delay_s=0.5))
        client = side.Optimizely(sdk_key=key)
        results[side.name] = strip_user_context(answers(client))
        client.close()
    assert results[OURS.name] == results[REFERENCE.name]
    config = results[OURS.name][-1]
    assert config[1] is not None and config[1][0] == "42" and config[1][-1] == demo_text
    assert ["activate", "treatment"] in results[OURS.name] or ["activate", "control"] in results[OURS.name]


# ------------------------------------------------------------------------------------------------
# Item 2: an sdk_key and a datafile: at once, then polled
# ------------------------------------------------------------------------------------------------

def run_polling_scenario(side: Side, server: Any, demo_text: str) -> List[Any]:
    """Starts from revision 42 while the server answers 43 late; then the server moves to 44, which drops
    the free_shipping flag. Records what the instance says at each step and every config update."""
    key = new_key()
    later = with_revision(demo_text, "43")
    dropped = json.loads(demo_text)
    dropped["featureFlags"] = [f for f in dropped["featureFlags"] if f["key"] != "free_shipping"]
    latest = with_revision(json.dumps(dropped), "44")
    server.serve(key, Answer(later, delay_s=0.5))
    center = side.NotificationCenter()
    updates: List[Any] = []
    center.add_notification_listener(side.types.OPTIMIZELY_CONFIG_UPDATE, lambda *args: updates.append(args))
    side.Factory.set_polling_interval(1)  # the reference polls every second; the library every 10 "seconds"
    client = side.Factory.custom_instance(key, datafile=demo_text, notification_center=center)
    steps: List[Any] = []
    try:
        config = client.get_optimizely_config()
        steps.append(("at once", config.revision, config.get_datafile() == demo_text, len(updates)))
        assert wait_for(lambda: client.get_optimizely_config().revision == "43"), side.name
        steps.append(("fetched", client.get_optimizely_config().get_datafile() == later.decode(), len(updates),
                      client.is_feature_enabled("free_shipping", "u1", {"country": "NL"})))
        server.serve(key, Answer(latest))
        assert wait_for(lambda: client.get_optimizely_config().revision == "44"), side.name
        user = client.create_user_context("u1", {"country": "NL"})
        steps.append(("polled", len(updates), sorted(client.get_optimizely_config().features_map),
                      client.get_enabled_features("u1", {"country": "NL"}),
                      user.decide("free_shipping").reasons, client.get_all_feature_variables("free_shipping", "u1")))
    finally:
        client.close()
    return steps


def test_sdk_key_and_datafile_start_at_once_and_poll_like_the_reference(lifecycle: Any, demo_text: str,
                                                                         caught_reference_posts: Any) -> None:
    steps = {side.name: run_polling_scenario(side, lifecycle, demo_text) for side in SIDES}
    assert steps[OURS.name] == steps[REFERENCE.name]
    # The listener heard the given datafile at construction, then each new revision once.
    assert steps[OURS.name][0] == ("at once", "42", True, 1) and steps[OURS.name][2][1] == 3


# ------------------------------------------------------------------------------------------------
# Item 3: no event_dispatcher: LOG_EVENT as the reference's, delivery by the library's pipeline
# ------------------------------------------------------------------------------------------------

def comparable(params: Dict[str, Any]) -> str:
    """An event batch without what differs per run (uuids, timestamps) or per SDK (client name, version)."""
    data = json.loads(json.dumps(params))
    data.pop("client_name", None)
    data.pop("client_version", None)
    for visitor in data.get("visitors", []):
        for snapshot in visitor.get("snapshots", []):
            for event in snapshot.get("events", []):
                event.pop("uuid", None)
                event.pop("timestamp", None)
    return json.dumps(data, sort_keys=True)


def visitor_lines(params: Dict[str, Any]) -> List[str]:
    """One line per visitor of a batch (the pipeline puts several events in one POST)."""
    data = json.loads(comparable(params))
    visitors = data.pop("visitors", [])
    return [json.dumps([data, visitor], sort_keys=True) for visitor in visitors]


def run_default_dispatcher_scenario(side: Side, demo_text: str) -> Tuple[List[Any], List[Any]]:
    client = side.Optimizely(datafile=demo_text)
    center = client.notification_center
    logged: List[Any] = []
    activated: List[Any] = []
    center.add_notification_listener(side.types.LOG_EVENT, logged.append)
    center.add_notification_listener(side.types.ACTIVATE, lambda *args: activated.append(
        (args[0].key, args[1], args[3].key, args[4]["url"], comparable(args[4]["params"]))))
    for user_id, attributes in USERS:
        client.activate("checkout_redesign_ab", user_id, attributes)
        client.is_feature_enabled("checkout_redesign", user_id, attributes)
        client.track("purchase", user_id, attributes, {"revenue": 4200, "category": "shoes"})
        user = client.create_user_context(user_id, attributes)
        user.decide_all()
        user.track_event("add_to_cart")
    client.close()  # the reference's last events are sent on its processor thread by now
    assert wait_for(lambda: len(logged) >= len(USERS) * 3)
    events = [(e.url, e.http_verb, e.headers, comparable(e.params)) for e in logged]
    return events, activated


def test_default_dispatcher_log_events_equal_the_reference_and_the_pipeline_delivers(
        demo_text: str, caught_reference_posts: List[Any], monkeypatch: Any, tmp_path: Any) -> None:
    endpoint = EventServer()
    try:
        monkeypatch.setenv("EXPERIMENT_EVENT_ENDPOINT", endpoint.url)
        reference_events, reference_activations = run_default_dispatcher_scenario(REFERENCE, demo_text)
        our_events, our_activations = run_default_dispatcher_scenario(OURS, demo_text)
        assert our_events == reference_events
        assert our_activations == reference_activations
        assert our_events[0][:3] == ("https://logx.optimizely.com/v1/events", "POST",
                                     {"Content-Type": "application/json"})
        # What the reference's dispatcher was handed is what its LOG_EVENT listeners heard ...
        assert [(e.url, e.http_verb, e.headers, comparable(e.params)) for e in caught_reference_posts] \
            == reference_events
        # ... and libexperiment's pipeline delivered the same visitors to its endpoint (in batches).
        expected = sorted(line for e in our_events for line in visitor_lines(json.loads(e[3])))
        assert wait_for(lambda: len([1 for b in endpoint.batches for _ in b.get("visitors", [])]) >= len(expected))
        delivered = sorted(line for batch in endpoint.batches for line in visitor_lines(batch))
        assert delivered == expected
    finally:
        endpoint.stop()


# ------------------------------------------------------------------------------------------------
# An invalid datafile beside an sdk_key: logged, an instance all the same, polling for a good one
# ------------------------------------------------------------------------------------------------

class ErrorLog:
    """A reference-style logger keeping the texts of its error lines."""

    def __init__(self) -> None:
        self.errors: List[str] = []

    def error(self, message: str, *args: Any) -> None:
        self.errors.append(message % args if args else message)

    def debug(self, *_args: Any) -> None: ...
    info = warning = exception = critical = log = debug


@pytest.mark.parametrize("make", ["constructor", "default_instance", "custom_instance"])
def test_invalid_datafile_with_sdk_key_logs_and_polls_like_the_reference(lifecycle: Any, demo_text: str,
                                                                          make: str) -> None:
    outcomes = []
    for side in SIDES:
        key = new_key()
        lifecycle.serve(key, Answer(demo_text.encode("utf-8")))
        log = ErrorLog()
        if make == "constructor":
            client = side.Optimizely(sdk_key=key, datafile="{not json", logger=log)
        elif make == "default_instance":
            client = side.Factory.default_instance(key, datafile="{not json")
        else:
            client = side.Factory.custom_instance(key, datafile="{not json", logger=log)
        updated = threading.Event()
        client.notification_center.add_notification_listener(side.types.OPTIMIZELY_CONFIG_UPDATE,
                                                              lambda *_args: updated.set())
        try:
            if client.config_manager.get_config() if side is REFERENCE else client._ready():
                updated.set()  # the first poll landed before the listener was added
            assert updated.wait(20), side.name
            decision = client.create_user_context("u1", {"country": "NL"}).decide("checkout_redesign")
            outcomes.append((client.is_valid, bool(log.errors) or make == "default_instance",
                             decision.variation_key, decision.enabled))
        finally:
            client.close()
    assert outcomes[0] == outcomes[1]
    assert outcomes[1][:2] == (True, True)
