"""experiment.optimizely sends nothing the program switched off, honours what it is given and speaks only
through the program's logger, each against optimizely-sdk 5.7.0 where it has an answer: ODP disabled in
OptimizelySdkSettings means no request to the ODP host; events given to the program's event processor (as the
reference's user events) or dispatcher never reach the default endpoint nor the state file; error_handler hears
what the reference hands it; event_processor_options and the factory's batching shape the library's pipeline;
without a logger nothing reaches stderr. Local servers on 127.0.0.1 count every request."""

from __future__ import annotations

import http.server
import json
import os
import sqlite3
import sys
import subprocess
import threading
from typing import Any, Dict, Iterator, List, Tuple

import pytest

from experiment import optimizely as dropin
from optimizely import optimizely as reference
from optimizely.event.event_factory import EventFactory
from optimizely.event.event_processor import BatchEventProcessor, ForwardingEventProcessor
from optimizely.event_dispatcher import EventDispatcher
from optimizely.helpers import enums
from optimizely.helpers.sdk_settings import OptimizelySdkSettings
from optimizely.notification_center import NotificationCenter as ReferenceNotificationCenter
from optimizely.logger import NoOpLogger

HERE = os.path.dirname(os.path.abspath(__file__))
ODP_DIR = os.path.join(HERE, "..", "..", "..", "tests", "odp")
sys.path.insert(0, ODP_DIR)
from odp_datafile import odp_datafile  # noqa: E402
from odp_server import ODPServer  # noqa: E402

DEMO = os.path.join(HERE, "..", "..", "..", "examples", "datafiles", "demo.json")


class CountingServer:
    """Answers every request with ``status`` and keeps (method, path) of each."""

    def __init__(self, status: int = 500) -> None:
        self.requests: List[Tuple[str, str]] = []
        self.bodies: List[bytes] = []
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                owner.bodies.append(self.rfile.read(length))
                owner.requests.append((self.command, self.path))
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST = do_PUT = answer

            def log_message(self, *_args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture()
def counting() -> Iterator[CountingServer]:
    server = CountingServer()
    yield server
    server.stop()


def test_odp_disabled_sends_nothing_to_the_odp_host(counting: CountingServer) -> None:
    client = dropin.Optimizely(datafile=json.dumps(odp_datafile(counting.url)),
                               settings=OptimizelySdkSettings(odp_disabled=True))
    user = client.create_user_context("user-1", {"country": "nl"})
    assert user.fetch_qualified_segments() is False  # as the reference: ODP is not enabled
    user.decide("segment_flag")
    client.close()
    assert counting.requests == []


def test_odp_enabled_reaches_the_odp_host(counting: CountingServer) -> None:
    """The counter above can fail: with ODP on, the same calls reach the host."""
    client = dropin.Optimizely(datafile=json.dumps(odp_datafile(counting.url)), settings=OptimizelySdkSettings())
    client.create_user_context("user-1").fetch_qualified_segments()
    client.close()
    assert ("POST", "/v3/graphql") in counting.requests


SILENT_PROGRAM = """
import json, sys
sys.path.insert(0, sys.argv[2])
from odp_datafile import odp_datafile
from experiment import optimizely
client = optimizely.Optimizely(datafile=json.dumps(odp_datafile(sys.argv[1])))
user = client.create_user_context("user-1")
user.fetch_qualified_segments()
user.decide("segment_flag")
user.track_event("no-such-event")
client.close()
"""


def test_silent_without_a_logger(counting: CountingServer) -> None:
    """Event deliveries and ODP fail, and still nothing is written (the reference's NoOpLogger). A program of
    its own: pytest's log capture would otherwise hide what Python's last-resort handler writes."""
    env = dict(os.environ, EXPERIMENT_EVENT_ENDPOINT=counting.url + "/events")
    run = subprocess.run([sys.executable, "-c", SILENT_PROGRAM, counting.url, ODP_DIR], env=env,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert counting.requests  # the failures happened
    assert (run.stdout, run.stderr) == ("", "")


# ------------------------------------------------------------------------------------------------
# Events given to the program's processor or dispatcher go there only: never to the default endpoint,
# never into the state file for another client to send
# ------------------------------------------------------------------------------------------------

class Catch:
    """A program's event dispatcher."""

    def __init__(self) -> None:
        self.events: List[Any] = []

    def dispatch_event(self, event: Any) -> None:
        self.events.append(event)


class Recording:
    """A program's event processor keeping the user events it is handed."""

    def __init__(self) -> None:
        self.user_events: List[Any] = []

    def process(self, user_event: Any) -> None:
        self.user_events.append(user_event)


def comparable(params: Dict[str, Any]) -> Dict[str, Any]:
    """A payload without what differs per run or per SDK (uuids, timestamps, client name and version)."""
    data = json.loads(json.dumps(params))
    data.pop("client_name", None)
    data.pop("client_version", None)
    for visitor in data.get("visitors", []):
        for snapshot in visitor.get("snapshots", []):
            for event in snapshot.get("events", []):
                event.pop("uuid", None)
                event.pop("timestamp", None)
    return data


def event_rows(state_dir: str) -> int:
    """Events the instance's state file holds for later delivery (queued or dead-lettered)."""
    db = sqlite3.connect(os.path.join(state_dir, "state.sqlite"))
    try:
        tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        return sum(db.execute("SELECT count(*) FROM %s" % table).fetchone()[0]
                   for table in tables & {"event_queue", "event_dead_letter"})
    finally:
        db.close()


def run_events(side: Any, counting: CountingServer, **arguments: Any) -> Tuple[Any, int]:
    """Decides, activates and tracks; answers the instance and the events its state file holds meanwhile."""
    with open(DEMO, encoding="utf-8") as f:
        client = side.Optimizely(datafile=f.read(), **arguments)
    user = client.create_user_context("user-1", {"country": "NL", "age": 30})
    user.decide_all()
    user.track_event("purchase", {"revenue": 42, "value": 1.5, "category": "shoes"})
    client.activate("checkout_redesign_ab", "user-2", {"country": "US"})
    client.track("purchase", "user-2")
    held = event_rows(client._state_dir) if side is dropin else 0
    client.close()
    return client, held


@pytest.fixture()
def default_endpoint(counting: CountingServer, monkeypatch: Any) -> CountingServer:
    """The library's default event endpoint, counting; the reference's default dispatcher must not be used."""
    monkeypatch.setenv("EXPERIMENT_EVENT_ENDPOINT", counting.url + "/events")
    monkeypatch.setattr(EventDispatcher, "dispatch_event", staticmethod(lambda _event: pytest.fail("POST")))
    return counting


def test_a_batch_event_processor_gets_every_event_and_nothing_else_is_sent(default_endpoint: CountingServer) -> None:
    payloads = []
    for side in (reference, dropin):
        caught = Catch()
        processor = BatchEventProcessor(caught, batch_size=100, flush_interval=60, start_on_init=True)
        _client, held = run_events(side, default_endpoint, event_processor=processor)
        assert held == 0
        payloads.append([comparable(event.params) for event in caught.events])  # stop() flushed the batch
    assert payloads[1] == payloads[0] and len(payloads[0][0]["visitors"]) == 6
    assert default_endpoint.requests == []


def test_a_processor_receives_the_reference_user_events(default_endpoint: CountingServer) -> None:
    made = []
    for side in (reference, dropin):
        processor = Recording()
        run_events(side, default_endpoint, event_processor=processor)
        made.append([(type(e).__name__, comparable(EventFactory.create_log_event(e, NoOpLogger()).params))
                     for e in processor.user_events])
    assert made[1] == made[0] and len(made[0]) == 6
    assert default_endpoint.requests == []


def test_a_forwarding_processor_announces_each_event_once(default_endpoint: CountingServer) -> None:
    """The processor fires LOG_EVENT on its notification center (the reference's class: its validator
    refuses any other); the instance's own center does not fire it again."""
    heard = []
    for side in (reference, dropin):
        center = ReferenceNotificationCenter()
        logged: List[Any] = []
        center.add_notification_listener(enums.NotificationTypes.LOG_EVENT, logged.append)
        caught = Catch()
        processor = ForwardingEventProcessor(caught, notification_center=center)
        also: List[Any] = []  # the drop-in's own center: LOG_EVENT is the processor's to fire
        own = dropin.NotificationCenter()
        own.add_notification_listener(dropin.NotificationTypes.LOG_EVENT, also.append)
        run_events(side, default_endpoint, event_processor=processor,
                   notification_center=center if side is reference else own)
        heard.append((len(logged), len(caught.events), len(also)))
    assert heard[1] == heard[0] == (6, 6, 0)
    assert default_endpoint.requests == []


def test_a_dispatcher_gets_every_event_and_nothing_is_kept(default_endpoint: CountingServer) -> None:
    caught = Catch()
    _client, held = run_events(dropin, default_endpoint, event_dispatcher=caught)
    assert held == 0 and len(caught.events) == 6
    assert default_endpoint.requests == []


def test_the_default_pipeline_is_what_the_counter_sees(default_endpoint: CountingServer) -> None:
    """The counter above can fail: without a dispatcher or processor the events reach the endpoint."""
    run_events(dropin, default_endpoint)
    assert default_endpoint.requests


# ------------------------------------------------------------------------------------------------
# error_handler: called where the reference calls handle_error
# ------------------------------------------------------------------------------------------------

class Errors:
    """A program's error handler keeping (exception class name, message) of each error."""

    def __init__(self) -> None:
        self.handled: List[Tuple[str, str]] = []

    def handle_error(self, error: Exception) -> None:
        self.handled.append((type(error).__name__, str(error)))


def test_the_error_handler_hears_what_the_reference_hands_it() -> None:
    with open(DEMO, encoding="utf-8") as f:
        demo = f.read()
    heard = []
    for side in (reference, dropin):
        errors = Errors()
        side.Optimizely(datafile="{not json", error_handler=errors).close()  # logged only (schema check)
        client = side.Optimizely(datafile=demo, error_handler=errors, event_dispatcher=Catch())
        bad: Any = ["not", "a", "dict"]
        client.activate("checkout_redesign_ab", "u1", bad)
        client.get_variation("checkout_redesign_ab", "u1", bad)
        client.track("purchase", "u1", bad)
        client.track("purchase", "u1", None, bad)
        client.is_feature_enabled("checkout_redesign", "u1", bad)
        client.get_enabled_features("u1", bad)
        client.get_feature_variable("checkout_redesign", "button_color", "u1", bad)
        client.create_user_context("u1").decide("checkout_redesign")  # nothing to handle
        client.close()
        heard.append(errors.handled)
    assert heard[1] == heard[0]
    assert len(heard[0]) == 7


@pytest.mark.parametrize("how", ["event_processor_options", "factory"])
def test_event_processor_options_batch_the_library_pipeline(how: str, monkeypatch: Any) -> None:
    """batch_size 2 and an hour's flush interval: two events, then the third at close (the library sends at once)."""
    endpoint = CountingServer(status=200)
    monkeypatch.setenv("EXPERIMENT_EVENT_ENDPOINT", endpoint.url + "/events")
    with open(DEMO, encoding="utf-8") as f:
        demo = f.read()
    if how == "factory":
        monkeypatch.setattr(dropin.OptimizelyFactory, "max_event_batch_size", None)
        monkeypatch.setattr(dropin.OptimizelyFactory, "max_event_flush_interval", None)
        dropin.OptimizelyFactory.set_batch_size(2)
        dropin.OptimizelyFactory.set_flush_interval(3600)
        client = dropin.OptimizelyFactory.custom_instance("batching-key", datafile=demo)
    else:
        client = dropin.Optimizely(datafile=demo, event_processor_options={"batch_size": 2, "flush_interval": 3600})
    try:
        for user_id in ("u1", "u2", "u3"):
            client.track("purchase", user_id)
        client.close()  # delivers what is queued: every batch has reached the endpoint
        assert sorted(len(json.loads(body)["visitors"]) for body in endpoint.bodies) == [1, 2]  # in any order
    finally:
        client.close()
        endpoint.stop()


@pytest.mark.parametrize("cache_size,fetches", [(0, 2), (10, 1)])
def test_segments_cache_size_is_honoured(cache_size: int, fetches: int) -> None:
    """A cache of size 0 (the reference: no caching) asks ODP every time; a cache keeps the first answer."""
    odp = ODPServer().start()
    try:
        client = dropin.Optimizely(datafile=json.dumps(odp_datafile(odp.url)),
                                   settings=OptimizelySdkSettings(segments_cache_size=cache_size))
        for _ in range(2):
            assert client.create_user_context("user-1").fetch_qualified_segments() is True
        client.close()
        assert len(odp.of_path("/v3/graphql")) == fetches
    finally:
        odp.stop()
