"""Real-time segments (ODP) through the real library against a real local ODP stand-in
(tests/odp/odp_server.py: an HTTP server on 127.0.0.1 speaking the segments GraphQL query and the events
API), with the reference SDK (optimizely-sdk 5.7.0) as the oracle for the request it sends, the events'
shape and the decisions."""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
from typing import Any, Iterator, List

import pytest

import experiment
from experiment import errors

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "tests", "odp"))
from odp_datafile import odp_datafile  # noqa: E402
from odp_server import API_KEY, ODPServer  # noqa: E402

GRAPHQL = "/v3/graphql"
EVENTS = "/v3/events"
ALL_SEGMENTS = {"seg-a", "seg-b", "vip-segment"}


@pytest.fixture()
def server() -> Iterator[ODPServer]:
    odp = ODPServer().start()
    yield odp
    odp.stop()


@pytest.fixture()
def make_client(server: ODPServer, tmp_path: Any) -> Iterator[Any]:
    clients: List[experiment.Client] = []

    def make(host: Any = "server", odp: Any = None, state_dir: Any = None, **options: Any) -> experiment.Client:
        datafile = odp_datafile(server.url if host == "server" else host)
        if odp is not None:
            options["odp"] = odp
        c = experiment.Client(datafile=json.dumps(datafile), state_dir=str(state_dir or tmp_path), **options)
        clients.append(c)
        return c

    yield make
    for c in clients:
        c.close()


def graphql_requests(server: ODPServer) -> List[dict]:
    return server.of_path(GRAPHQL)


# -- the request ---------------------------------------------------------------------------------

def test_fetch_sends_the_reference_query_and_api_key(server: ODPServer, make_client: Any) -> None:
    c = make_client()
    assert sorted(c.fetch_qualified_segments("user-1")) == ["seg-a", "seg-b"]
    [request] = graphql_requests(server)
    assert request["headers"]["x-api-key"] == API_KEY
    assert request["headers"]["content-type"] == "application/json"
    body = json.loads(request["body"])
    assert body["query"] == ("query($userId: String, $audiences: [String]) {customer(fs_user_id: $userId) "
                             "{audiences(subset: $audiences) {edges {node {name state}}}}}")
    assert body["variables"]["userId"] == "user-1"
    assert set(body["variables"]["audiences"]) == ALL_SEGMENTS
    assert len(body["variables"]["audiences"]) == len(ALL_SEGMENTS)

    # Byte for byte what the reference sends for the same user and segments (the reference's segment
    # order is a set's, so it is given ours).
    from optimizely.odp.odp_segment_api_manager import OdpSegmentApiManager
    reference = OdpSegmentApiManager(timeout=5).fetch_segments(API_KEY, server.url, "fs_user_id", "user-1",
                                                               body["variables"]["audiences"])
    assert sorted(reference or []) == ["seg-a", "seg-b"]
    reference_request = graphql_requests(server)[-1]
    assert reference_request["body"] == request["body"]
    assert reference_request["headers"]["x-api-key"] == request["headers"]["x-api-key"]


def test_reference_config_names_the_same_segments_and_integration(server: ODPServer) -> None:
    from optimizely.project_config import ProjectConfig
    from optimizely import logger as optimizely_logger, error_handler
    config = ProjectConfig(json.dumps(odp_datafile(server.url)), optimizely_logger.NoOpLogger(),
                           error_handler.NoOpErrorHandler())
    assert set(config.all_segments) == ALL_SEGMENTS
    assert (config.host_for_odp, config.public_key_for_odp) == (server.url, API_KEY)


def test_unicode_and_quotes_in_the_user_id_are_sent_as_the_reference_sends_them(server: ODPServer,
                                                                              make_client: Any) -> None:
    user = 'jos\u00e9 "q" \\ \U0001F600'
    c = make_client()
    c.fetch_qualified_segments(user)
    ours = graphql_requests(server)[-1]["body"]
    from optimizely.odp.odp_segment_api_manager import OdpSegmentApiManager
    OdpSegmentApiManager(timeout=5).fetch_segments(API_KEY, server.url, "fs_user_id", user,
                                                   json.loads(ours)["variables"]["audiences"])
    assert graphql_requests(server)[-1]["body"] == ours


def test_a_vuid_is_sent_as_vuid(server: ODPServer, make_client: Any) -> None:
    c = make_client()
    c.fetch_qualified_segments(c.vuid)
    body = json.loads(graphql_requests(server)[-1]["body"])
    assert "customer(vuid: $userId)" in body["query"]
    assert body["variables"]["userId"] == c.vuid


def test_options_host_and_key_override_a_datafile_without_integration(server: ODPServer, make_client: Any) -> None:
    c = make_client(host=None, odp={"host": server.url, "api_key": API_KEY})
    assert sorted(c.fetch_qualified_segments("user-1")) == ["seg-a", "seg-b"]
    no_odp = make_client(host=None)
    with pytest.raises(errors.FetchFailedError, match="api_key/api_host not defined"):
        no_odp.fetch_qualified_segments("user-1")


# -- the cache -----------------------------------------------------------------------------------

def test_a_cached_user_is_answered_without_a_request(server: ODPServer, make_client: Any) -> None:
    c = make_client()
    first = c.fetch_qualified_segments("user-1")
    server.qualified["user-1"] = set()  # ODP changed its mind: the cache still answers
    assert c.fetch_qualified_segments("user-1") == first
    assert len(graphql_requests(server)) == 1
    c.fetch_qualified_segments("user-2")
    assert len(graphql_requests(server)) == 2


def test_ignore_cache_neither_reads_nor_writes_it(server: ODPServer, make_client: Any) -> None:
    c = make_client()
    c.fetch_qualified_segments("user-1", [experiment.SegmentOption.IGNORE_CACHE])
    c.fetch_qualified_segments("user-1", ["IGNORE_CACHE"])
    assert len(graphql_requests(server)) == 2
    c.fetch_qualified_segments("user-1")  # nothing was saved: a request
    assert len(graphql_requests(server)) == 3
    server.qualified["user-1"] = {"seg-b"}
    assert c.fetch_qualified_segments("user-1", ["IGNORE_CACHE"]) == ["seg-b"]
    assert sorted(c.fetch_qualified_segments("user-1")) == ["seg-a", "seg-b"]  # the cache kept the old answer
    assert len(graphql_requests(server)) == 4


def test_reset_cache_empties_it_for_every_user(server: ODPServer, make_client: Any) -> None:
    c = make_client()
    c.fetch_qualified_segments("user-1")
    c.fetch_qualified_segments("user-2")
    server.qualified["user-1"] = {"seg-a"}
    assert c.fetch_qualified_segments("user-1", ["RESET_CACHE"]) == ["seg-a"]
    assert len(graphql_requests(server)) == 3
    c.fetch_qualified_segments("user-2")  # its entry went with the reset
    assert len(graphql_requests(server)) == 4
    c.fetch_qualified_segments("user-1")  # the reset fetch was saved
    assert len(graphql_requests(server)) == 4


def test_entries_expire_after_the_timeout(server: ODPServer, make_client: Any) -> None:
    c = make_client(odp={"segments_cache_timeout_s": 1})
    c.fetch_qualified_segments("user-1")
    c.fetch_qualified_segments("user-1")
    assert len(graphql_requests(server)) == 1
    time.sleep(1.05)
    c.fetch_qualified_segments("user-1")
    assert len(graphql_requests(server)) == 2


def test_cache_size_zero_disables_and_size_bounds_it(server: ODPServer, make_client: Any) -> None:
    off = make_client(odp={"segments_cache_size": 0})
    off.fetch_qualified_segments("user-1")
    off.fetch_qualified_segments("user-1")
    assert len(graphql_requests(server)) == 2
    one = make_client(odp={"segments_cache_size": 1})
    for user in ("user-1", "user-2", "user-1"):  # user-2 evicts user-1 (least recently used)
        one.fetch_qualified_segments(user)
    assert len(graphql_requests(server)) == 5
    one.fetch_qualified_segments("user-1")
    assert len(graphql_requests(server)) == 5


# -- errors --------------------------------------------------------------------------------------

def test_an_unknown_user_is_an_invalid_user_id(server: ODPServer, make_client: Any) -> None:
    c = make_client()
    with pytest.raises(errors.InvalidUserIdError) as info:
        c.fetch_qualified_segments("invalid-user")
    assert info.value.code == -25 and "invalid identifier" in str(info.value)
    with pytest.raises(errors.InvalidUserIdError):
        c.fetch_qualified_segments("")
    assert len(graphql_requests(server)) == 1  # the empty id never left the process
    assert c.get_qualified_segments("invalid-user") is None


@pytest.mark.parametrize("user", ["error-500", "malformed"])
def test_a_failing_service_is_a_failed_fetch(server: ODPServer, make_client: Any, user: str) -> None:
    c = make_client()
    c.set_qualified_segments(user, ["seg-a"])
    with pytest.raises(errors.FetchFailedError) as info:
        c.fetch_qualified_segments(user)
    assert info.value.code == -26
    assert c.get_qualified_segments(user) is None  # as the reference: a failed fetch leaves no segments
    assert c.decide(user, "segment_flag").variation_key == "off"


def test_an_unreachable_service_is_a_failed_fetch(make_client: Any) -> None:
    from odp_server import ODPServer as Fresh
    gone = Fresh()
    url = gone.url
    gone.httpd.server_close()  # nothing listens on that port any more
    c = make_client(host=url, odp={"fetch_timeout_ms": 2000})
    with pytest.raises(errors.FetchFailedError, match="network error"):
        c.fetch_qualified_segments("user-1")
    # the client keeps working
    assert c.decide("user-1", "segment_flag").variation_key == "off"


def test_disabled_odp_refuses_odp_calls_but_keeps_local_segments(make_client: Any) -> None:
    c = make_client(odp={"disabled": True})
    for call in (lambda: c.fetch_qualified_segments("user-1"),
                 lambda: c.fetch_qualified_segments_async("user-1"),
                 lambda: c.identify_user("user-1"),
                 lambda: c.send_odp_event("purchased", {"fs_user_id": "user-1"})):
        with pytest.raises(errors.ODPNotEnabledError) as info:
            call()
        assert info.value.code == -24
    c.set_qualified_segments("user-1", ["seg-a"])
    assert c.is_qualified_for("user-1", "seg-a")
    assert c.decide("user-1", "segment_flag").variation_key == "on"
    assert re.fullmatch(r"vuid_[0-9a-f]{27}", c.vuid)


def test_bad_inputs_are_refused_clearly(make_client: Any) -> None:
    c = make_client()
    with pytest.raises(errors.InvalidArgumentError, match="EXP_SEGMENT"):
        c.fetch_qualified_segments("user-1", [8])
    with pytest.raises(errors.InvalidArgumentError):
        c.fetch_qualified_segments("user-1", ["NOT_AN_OPTION"])
    lib = experiment._native.lib
    assert lib.exp_set_qualified_segments_json(c._h, b"u", b'{"a": 1}') == -1
    assert b"array of strings" in lib.exp_last_error()
    with pytest.raises(errors.InvalidArgumentError, match=r"segments_json\[1\]"):
        c.set_qualified_segments("u", ["a", 1])
    with pytest.raises(errors.InvalidArgumentError, match="action"):
        c.send_odp_event("", {"fs_user_id": "u"})
    with pytest.raises(errors.InvalidArgumentError, match="identifiers"):
        c.send_odp_event("purchased", {})
    with pytest.raises(errors.InvalidArgumentError, match="identifiers_json.fs_user_id"):
        c.send_odp_event("purchased", {"fs_user_id": 7})
    with pytest.raises(errors.InvalidArgumentError, match="ODP data is not valid"):
        c.send_odp_event("purchased", {"fs_user_id": "u"}, data={"nested": {"a": 1}})
    with pytest.raises(errors.InvalidJSONError):
        c.send_odp_event("purchased", "{not json")
    assert c.decide("u", "segment_flag").variation_key == "off"


# -- decisions -----------------------------------------------------------------------------------

def test_a_decision_flips_when_the_users_segments_change(server: ODPServer, make_client: Any) -> None:
    c = make_client()
    assert c.decide("user-1", "segment_flag").variation_key == "off"
    server.qualified["user-1"] = {"seg-b"}
    assert c.fetch_qualified_segments("user-1") == ["seg-b"]
    assert c.is_qualified_for("user-1", "seg-b") and not c.is_qualified_for("user-1", "seg-a")
    assert c.decide("user-1", "segment_flag").variation_key == "on"
    assert c.decide("user-2", "segment_flag").variation_key == "off"  # segments are per user
    server.qualified["user-1"] = set()
    assert c.fetch_qualified_segments("user-1", ["IGNORE_CACHE"]) == []
    assert c.decide("user-1", "segment_flag").variation_key == "off"
    c.set_qualified_segments("user-1", ["seg-a"])
    assert c.decide("user-1", "segment_flag").variation_key == "on"
    assert c.get_qualified_segments("user-1") == ["seg-a"]
    c.set_qualified_segments("user-1", None)
    assert c.get_qualified_segments("user-1") is None
    assert c.decide("user-1", "segment_flag").variation_key == "off"


@pytest.mark.parametrize("segments", [None, [], ["seg-a"], ["seg-b", "vip-segment"], ["vip-segment"], ["other"]])
@pytest.mark.parametrize("country", [None, "nl", "de"])
def test_decisions_equal_the_reference(make_client: Any, segments: Any, country: Any) -> None:
    from optimizely import optimizely as optimizely_module
    from optimizely import logger as optimizely_logger
    datafile = json.dumps(odp_datafile(None))
    reference = optimizely_module.Optimizely(datafile, logger=optimizely_logger.NoOpLogger(),
                                             event_dispatcher=type("Null", (), {"dispatch_event": lambda *_: None})())
    try:
        attributes = {} if country is None else {"country": country}
        user = reference.create_user_context("user-7", attributes)
        if segments is not None:
            user.set_qualified_segments(segments)
        c = make_client(host=None)
        if segments is not None:
            c.set_qualified_segments("user-7", segments)
        for flag in ("segment_flag", "vip_flag"):
            expected = user.decide(flag)
            ours = c.decide("user-7", flag, attributes)
            assert (ours.variation_key, ours.enabled, ours.rule_key) == \
                (expected.variation_key, expected.enabled, expected.rule_key), flag
    finally:
        reference.close()


def test_get_variation_and_decide_all_see_the_segments(make_client: Any) -> None:
    c = make_client()
    c.set_qualified_segments("user-3", ["vip-segment"])
    decisions = c.decide_all("user-3", {"country": "nl"})
    assert decisions["vip_flag"].variation_key == "vip_on"
    assert decisions["segment_flag"].variation_key == "off"


def test_many_threads_fetch_set_decide_and_send_at_once(server: ODPServer, make_client: Any) -> None:
    c = make_client()
    failures: List[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(30):
                user = "user-%d-%d" % (n, i % 5)
                if i % 3 == 0:
                    c.fetch_qualified_segments(user)
                    assert c.decide(user, "segment_flag").variation_key == "on"
                elif i % 3 == 1:
                    c.set_qualified_segments(user, [])
                    assert c.decide(user, "segment_flag").variation_key == "off"
                else:
                    c.send_odp_event("tick", {"fs_user_id": user}, data={"i": i})
                c.decide("other-%d" % i, "segment_flag")
        except BaseException as exc:  # noqa: BLE001 - reported below
            failures.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures
    c.flush_odp_events(10)
    assert len([e for e in server.events() if e["action"] == "tick"]) == 6 * 10


# -- asynchronous fetch --------------------------------------------------------------------------

def test_async_fetch_completes_with_segments_or_the_typed_error(server: ODPServer, make_client: Any) -> None:
    c = make_client()
    seen: List[Any] = []
    done = threading.Event()

    def callback(segments: Any, error: Any) -> None:
        seen.append((segments, error))
        done.set()

    future = c.fetch_qualified_segments_async("user-1", callback=callback)
    assert sorted(future.result(timeout=10)) == ["seg-a", "seg-b"]
    assert done.wait(10) and sorted(seen[0][0]) == ["seg-a", "seg-b"] and seen[0][1] is None
    assert c.decide("user-1", "segment_flag").variation_key == "on"
    failing = c.fetch_qualified_segments_async("invalid-1")
    with pytest.raises(errors.InvalidUserIdError):
        failing.result(timeout=10)
    broken = c.fetch_qualified_segments_async("error-500", ["IGNORE_CACHE"])
    with pytest.raises(errors.FetchFailedError):
        broken.result(timeout=10)
    many = [c.fetch_qualified_segments_async("user-%d" % i) for i in range(20)]
    assert all(sorted(f.result(timeout=20)) == ["seg-a", "seg-b"] for f in many)


def test_async_fetches_pending_at_close_complete_with_closed(server: ODPServer, make_client: Any) -> None:
    c = make_client()
    futures = [c.fetch_qualified_segments_async("user-%d" % i) for i in range(50)]
    c.close()
    for f in futures:  # every one completes: with segments or with ClosedError
        try:
            assert sorted(f.result(timeout=20)) == ["seg-a", "seg-b"]
        except errors.ClosedError:
            pass


# -- ODP events ----------------------------------------------------------------------------------

def _strip_volatile(event: dict) -> dict:
    data = dict(event["data"])
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", data["idempotence_id"])
    for key in ("idempotence_id", "data_source", "data_source_version"):
        data.pop(key)
    return {**event, "data": data}


def test_identify_is_sent_once_when_a_user_is_first_seen(server: ODPServer, make_client: Any) -> None:
    c = make_client()
    c.fetch_qualified_segments("user-1")
    c.fetch_qualified_segments("user-1")
    c.identify_user("user-1")
    c.fetch_qualified_segments(c.vuid)  # a VUID alone links nothing: no identify
    c.flush_odp_events(10)
    requests = server.of_path(EVENTS)
    assert requests and requests[0]["headers"]["x-api-key"] == API_KEY
    assert requests[0]["headers"]["content-type"] == "application/json"
    events = server.events()
    assert len(events) == 1
    event = events[0]
    assert list(event) == ["type", "action", "identifiers", "data"]
    assert event["type"] == "fullstack" and event["action"] == "identified"
    assert event["identifiers"] == {"vuid": c.vuid, "fs_user_id": "user-1"}
    assert event["data"]["data_source_type"] == "sdk"
    assert event["data"]["data_source"] == "libexperiment"


def test_custom_events_have_the_reference_shape(server: ODPServer, make_client: Any) -> None:
    from optimizely.odp.odp_event import OdpEvent, OdpEventEncoder
    c = make_client()
    data = {"amount": 9.5, "count": 3, "sku": "caf\u00e9", "gift": True, "note": None}
    c.send_odp_event("purchased", {"FS-USER-ID": "user-9", "email": "a@b.c"}, data=data)
    c.send_odp_event("viewed", {"fs_user_id": "user-9"}, type="custom",
                     data={"data_source_type": "host"})
    c.flush_odp_events(10)
    [first, second] = server.events()
    reference = json.loads(json.dumps([OdpEvent("fullstack", "purchased", {"FS-USER-ID": "user-9", "email": "a@b.c"},
                                                data)], cls=OdpEventEncoder))[0]
    assert _strip_volatile(first) == _strip_volatile(reference)
    assert list(first["data"]) == list(reference["data"])
    assert second["type"] == "custom" and second["data"]["data_source_type"] == "host"
    # the wire format is the reference's json.dumps (", " and ": " separators)
    assert server.of_path(EVENTS)[0]["body"].startswith(b'[{"type": "fullstack", "action": "purchased", ')


def test_events_are_batched(server: ODPServer, make_client: Any) -> None:
    c = make_client()
    for i in range(25):
        c.send_odp_event("ping", {"fs_user_id": "user-%d" % i}, data={"i": i})
    c.flush_odp_events(10)
    events = server.events()
    assert [e["data"]["i"] for e in events] == list(range(25))
    assert all(len(json.loads(r["body"])) <= 10 for r in server.of_path(EVENTS))


def test_batch_size_is_an_option(server: ODPServer, make_client: Any) -> None:
    c = make_client(odp={"event_batch_size": 3})
    for i in range(10):
        c.send_odp_event("ping", {"fs_user_id": "user-%d" % i}, data={"i": i})
    c.flush_odp_events(10)
    assert [e["data"]["i"] for e in server.events()] == list(range(10))
    sizes = [len(json.loads(r["body"])) for r in server.of_path(EVENTS)]
    assert max(sizes) == 3 and len(sizes) >= 4


def test_flush_interval_is_an_option(server: ODPServer, make_client: Any) -> None:
    c = make_client(odp={"event_flush_interval_ms": 3_600_000, "event_batch_size": 100})
    c.send_odp_event("ping", {"fs_user_id": "user-1"})
    time.sleep(1.5)                     # past the default 1 s interval, far from this one
    assert server.events() == []
    c.flush_odp_events(10)              # an explicit flush does not wait for the interval
    assert len(server.events()) == 1


def test_queue_capacity_is_an_option(server: ODPServer, make_client: Any) -> None:
    server.events_status = 503          # nothing is accepted, so everything stays queued
    c = make_client(odp={"event_queue_capacity": 5, "event_flush_interval_ms": 3_600_000})
    for i in range(5):
        c.send_odp_event("ping", {"fs_user_id": "user-%d" % i})
    with pytest.raises(errors.QueueFullError, match="5 events"):
        c.send_odp_event("ping", {"fs_user_id": "user-5"})


@pytest.mark.parametrize("odp", [{"event_batch_size": 0}, {"event_batch_size": 1001},
                                 {"event_flush_interval_ms": 1}, {"event_queue_capacity": "10"}])
def test_bad_event_queue_options_are_refused(make_client: Any, odp: Any) -> None:
    with pytest.raises(errors.InvalidOptionError, match="options.odp.event_"):
        make_client(odp=odp)


def test_undelivered_events_wait_in_the_state_file_for_the_next_client(server: ODPServer, make_client: Any,
                                                                       tmp_path: Any) -> None:
    server.events_status = 503
    first = make_client(odp={"event_timeout_ms": 1000})
    first.send_odp_event("purchased", {"fs_user_id": "user-1"}, data={"n": 1})
    with pytest.raises(errors.WaitTimeoutError):
        first.flush_odp_events(0.5)
    first.close()
    assert server.events() and all(e["data"]["n"] == 1 for e in server.events())  # tried, refused
    server.requests.clear()
    server.events_status = 202
    second = make_client()  # same state_dir: delivers what the first one left
    deadline = time.time() + 10
    while not server.events() and time.time() < deadline:
        time.sleep(0.05)
    assert [e["data"]["n"] for e in server.events()] == [1]
    second.flush_odp_events(5)
    assert [e["data"]["n"] for e in server.events()] == [1]


def test_a_4xx_answer_drops_the_batch(server: ODPServer, make_client: Any) -> None:
    server.events_status = 400
    c = make_client()
    c.send_odp_event("purchased", {"fs_user_id": "user-1"})
    c.flush_odp_events(10)  # nothing remains queued
    assert len(server.of_path(EVENTS)) == 1


def test_events_need_an_odp_integration(make_client: Any) -> None:
    c = make_client(host=None)
    with pytest.raises(errors.ODPNotEnabledError, match="not integrated"):
        c.send_odp_event("purchased", {"fs_user_id": "user-1"})


# -- the VUID ------------------------------------------------------------------------------------

def test_the_vuid_is_persisted_in_the_state_dir(make_client: Any, tmp_path: Any) -> None:
    a = make_client(state_dir=tmp_path / "one")
    vuid = a.vuid
    assert re.fullmatch(r"vuid_[0-9a-f]{27}", vuid) and len(vuid) == 32
    assert a.vuid == vuid
    a.close()
    assert make_client(state_dir=tmp_path / "one").vuid == vuid
    assert make_client(state_dir=tmp_path / "two").vuid != vuid
