"""The built-in event pipeline through the real library: durable SQLite queue in a state directory,
batched POSTs to a real HTTP server on 127.0.0.1 that fails, stalls, refuses and goes down; retries,
poison events, queue capacity policies, flush, stats, close draining, leftovers sent by the next client,
a SIGKILLed process, notification listeners, Kameleoon conversions and user data, and payloads equal
to what optimizely-sdk's batching dispatcher sends."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import struct
import subprocess
import sys
import textwrap
from collections import defaultdict

import pytest

import experiment
from conftest import U2_ATTRS, U3_ATTRS
from event_server import EventServer, closed_port


def raises(cls, pattern=None):
    return pytest.raises(cls, match=pattern)


@pytest.fixture()
def server():
    s = EventServer()
    yield s
    s.stop()


def pipeline_client(datafile_text, state_dir, endpoint, **options):
    options.setdefault("event_flush_interval_ms", 50)
    options.setdefault("request_timeout_ms", 2000)
    return experiment.Client(datafile=datafile_text, state_dir=str(state_dir), event_endpoint=endpoint, **options)


def seqs(events):
    return [e["tags"]["seq"] for e in events if "tags" in e and "seq" in e["tags"]]


def dead_letters(state_dir):
    with sqlite3.connect(os.path.join(str(state_dir), "state.sqlite")) as db:
        return db.execute("SELECT uuid, status, reason, visitor FROM event_dead_letter").fetchall()


# ------------------------------------------------------------------------------------------------
# delivery
# ------------------------------------------------------------------------------------------------

def test_events_are_batched_and_delivered(datafile_text, tmp_path, server):
    # No timer rounds: batches leave when 10 events wait, and at the flush. One POST at a time, because
    # sizes[0] is about order: with event_max_inflight > 1 (default 4) the batches of one round are POSTed
    # at once and may arrive in any order (the README promises at-least-once delivery, not order across
    # batches); a dispatcher woken late under load takes all 25 in one round and its 5 could arrive first.
    with pipeline_client(datafile_text, tmp_path, server.url, event_batch_size=10,
                         event_flush_interval_ms=3_600_000, event_max_inflight=1) as c:
        for i in range(25):
            c.track("purchase", "user-%d" % i, tags={"seq": i})
        assert c.flush() is True
        stats = c.stats()
    sizes = [len(b["visitors"]) for b in server.batches]
    assert sum(sizes) == 25 and max(sizes) == 10 and sizes[0] == 10
    assert sorted(seqs(server.events())) == list(range(25))
    assert all(r["content_type"] == "application/json" for r in server.requests)
    batch = server.batches[0]
    assert (batch["account_id"], batch["project_id"], batch["revision"]) == ("10001", "20001", "42")
    assert batch["client_name"] == "libexperiment" and batch["enrich_decisions"] is True
    uuids = [e["uuid"] for e in server.events()]
    assert len(set(uuids)) == 25
    assert stats["queued"] == 25 and stats["sent"] == 25 and stats["pending"] == 0
    assert stats["batches_sent"] == len(sizes) and stats["dropped"] == 0 and stats["failed"] == 0


def test_flush_interval_sends_a_partial_batch(datafile_text, tmp_path, server):
    with pipeline_client(datafile_text, tmp_path, server.url, event_batch_size=100) as c:
        c.track("purchase", "u1", tags={"seq": 1})
        assert server.wait_for(lambda: len(server.events()) == 1)


def test_impressions_go_through_the_queue(datafile_text, tmp_path, server):
    with pipeline_client(datafile_text, tmp_path, server.url) as c:
        c.decide("u2", "checkout_flow", U2_ATTRS)
        c.decide("u2", "checkout_flow", U2_ATTRS, options=["DISABLE_DECISION_EVENT"])
        c.activate("legacy_ab", "u2", U2_ATTRS)
        c.get_variation("legacy_ab", "u2", U2_ATTRS)
        assert c.flush()
        assert c.stats()["queued"] == 2
    keys = [e["key"] for e in server.events()]
    assert keys == ["campaign_activated", "campaign_activated"]


def test_flaky_server_every_accepted_event_arrives(datafile_text, tmp_path, server):
    """Half the requests fail with 500, some stall past the timeout, then the server goes down for a
    while and comes back: every accepted event arrives, and an event seen twice is a retry of the same
    uuid (a stalled request the server did process)."""
    server.failure_rate = 0.5
    server.stall_rate = 0.1
    server.stall_s = 0.6
    c = pipeline_client(datafile_text, tmp_path, server.url, event_batch_size=7, request_timeout_ms=300,
                        close_timeout_ms=5000)
    accepted = 0
    for i in range(120):
        c.track("purchase", "user-%d" % (i % 9), tags={"seq": i})
        accepted += 1
    c.flush()
    server.stop()  # down for a while
    for i in range(120, 200):
        c.track("signup", "user-%d" % (i % 9), tags={"seq": i})
        accepted += 1
    assert c.flush() is False  # nothing can be delivered now
    down_stats = c.stats()
    assert down_stats["pending"] > 0 and down_stats["last_error"]
    server.start()  # back, same port
    for _ in range(100):
        if c.flush():
            break
    stats = c.stats()
    c.close()
    events = server.events()
    assert sorted(set(seqs(events))) == list(range(accepted))
    uuid_by_seq = defaultdict(set)
    for event in events:
        uuid_by_seq[event["tags"]["seq"]].add(event["uuid"])
    assert all(len(uuids) == 1 for uuids in uuid_by_seq.values())  # duplicates only as the same uuid
    assert stats["pending"] == 0 and stats["queued"] == accepted
    assert stats["failed"] > 0 and stats["retried"] > 0 and stats["dropped"] == 0
    assert any(r["status"] == 500 for r in server.requests)


def test_400_makes_only_the_bad_event_poison(datafile_text, tmp_path, server):
    server.poison_marker = "poison-me"
    seen = []
    with pipeline_client(datafile_text, tmp_path, server.url, event_batch_size=10) as c:
        c.add_listener("log_event", seen.append)
        for i in range(6):
            c.track("purchase", "u%d" % i, tags={"seq": i, "note": "poison-me" if i == 3 else "fine"})
        assert c.flush() is True
        stats = c.stats()
    assert sorted(seqs(server.events())) == [0, 1, 2, 4, 5]
    assert stats["poisoned"] == 1 and stats["pending"] == 0 and stats["sent"] == 5
    assert "400" in stats["last_error"]
    rows = dead_letters(tmp_path)
    assert len(rows) == 1 and rows[0][1] == 400 and "poison-me" in rows[0][3]
    assert any(p["outcome"] == "poisoned" and p["status"] == 400 for p in seen)
    assert any(p["outcome"] == "sent" and p["status"] == 204 for p in seen)


def test_429_and_408_are_retried_not_poisoned(datafile_text, tmp_path, server):
    statuses = iter([429, 408])
    original = server._answer

    def answer(body, content_type):
        status = next(statuses, None)
        return status if status is not None else original(body, content_type)

    server._answer = answer
    with pipeline_client(datafile_text, tmp_path, server.url) as c:
        c.track("purchase", "u1", tags={"seq": 0})
        for _ in range(5):
            if c.flush():
                break
        stats = c.stats()
    assert seqs(server.events()) == [0]
    assert stats["poisoned"] == 0 and stats["retried"] == 2


def test_connection_reset_mid_body_is_retried(datafile_text, tmp_path, server):
    server.resets = 2
    with pipeline_client(datafile_text, tmp_path, server.url) as c:
        for i in range(3):
            c.track("purchase", "u%d" % i, tags={"seq": i})
        for _ in range(5):
            if c.flush():
                break
        stats = c.stats()
    assert sorted(seqs(server.events())) == [0, 1, 2]
    assert [r["status"] for r in server.requests][:2] == ["reset", "reset"]
    assert stats["failed"] == 2 and stats["poisoned"] == 0


def test_unresolvable_endpoint_keeps_events(datafile_text, tmp_path):
    with pipeline_client(datafile_text, tmp_path, "http://nonexistent-host.invalid/v1/events",
                         request_timeout_ms=500, close_timeout_ms=1000) as c:
        c.track("purchase", "u1")
        assert c.flush() is False
        stats = c.stats()
    assert stats["pending"] == 1 and stats["failed"] >= 1 and stats["last_error"]


# ------------------------------------------------------------------------------------------------
# capacity, flush, close, restart
# ------------------------------------------------------------------------------------------------

def test_queue_full_reject(datafile_text, tmp_path):
    endpoint = "http://127.0.0.1:%d/v1/events" % closed_port()
    with pipeline_client(datafile_text, tmp_path, endpoint, event_queue_capacity=5, close_timeout_ms=0) as c:
        for i in range(5):
            c.track("purchase", "u1", tags={"seq": i})
        with raises(experiment.QueueFullError, "event_queue_capacity"):
            c.track("purchase", "u1")
        c.decide("u2", "checkout_flow", U2_ATTRS)  # an impression that does not fit: dropped, decide works
        stats = c.stats()
    assert stats["queued"] == 5 and stats["dropped"] == 2 and stats["pending"] == 5


def test_queue_full_drop_oldest(datafile_text, tmp_path, server):
    server.stop()
    with pipeline_client(datafile_text, tmp_path, server.url, event_queue_capacity=5,
                         event_queue_full_policy="drop_oldest", close_timeout_ms=0) as c:
        for i in range(8):
            c.track("purchase", "u1", tags={"seq": i})
        stats = c.stats()
    assert stats["queued"] == 8 and stats["dropped"] == 3 and stats["pending"] == 5
    server.start()
    # the next client adopts the leftovers in the background (its flush waits only for its own events)
    with pipeline_client(datafile_text, tmp_path, server.url):
        assert server.wait_for(lambda: len(seqs(server.events())) >= 5)
    assert sorted(seqs(server.events())) == [3, 4, 5, 6, 7]


def test_close_leaves_undelivered_events_for_the_next_client(datafile_text, tmp_path, server):
    server.stop()
    c = pipeline_client(datafile_text, tmp_path, server.url, close_timeout_ms=200)
    for i in range(20):
        c.track("purchase", "u%d" % i, tags={"seq": i})
    c.close()  # endpoint down: returns after the drain attempt, events stay on disk
    assert server.events() == []
    server.start()
    # the next client on the same state_dir sends them without being asked
    with pipeline_client(datafile_text, tmp_path, server.url) as again:
        assert server.wait_for(lambda: len(server.events()) == 20)
        assert server.wait_for(lambda: again.stats()["backlog"] == 0)
    assert sorted(seqs(server.events())) == list(range(20))


def test_close_drains_the_queue(datafile_text, tmp_path, server):
    c = pipeline_client(datafile_text, tmp_path, server.url, event_batch_size=1000,
                        event_flush_interval_ms=3_600_000)
    for i in range(50):
        c.track("purchase", "u%d" % i, tags={"seq": i})
    assert server.events() == []
    c.close()
    assert sorted(seqs(server.events())) == list(range(50))


def test_flush_with_nothing_to_send_and_with_a_host_dispatcher(datafile_text, tmp_path, server):
    with pipeline_client(datafile_text, tmp_path, server.url) as c:
        assert c.flush() is True
    received = []

    class Host:
        def dispatch_event(self, event):
            received.append(event)

    with pipeline_client(datafile_text, tmp_path, server.url, event_dispatcher=Host()) as c:
        c.track("purchase", "u1")
        assert c.flush() is True
        stats = c.stats()
    assert len(received) == 1 and server.requests == []
    assert stats["sent"] == 1 and stats["queued"] == 0


def test_endpoint_none_drops_and_counts(datafile_text, tmp_path):
    with experiment.Client(datafile=datafile_text, state_dir=str(tmp_path), event_endpoint="none") as c:
        c.track("purchase", "u1")
        c.decide("u2", "checkout_flow", U2_ATTRS)
        assert c.stats()["dropped"] == 2
    # No queue was opened: no journal, and no event table in the state file (which sticky bucketing uses).
    assert not [name for name in os.listdir(str(tmp_path)) if name.startswith("event-journal")]
    state = os.path.join(str(tmp_path), "state.sqlite")
    if os.path.exists(state):
        import sqlite3
        with sqlite3.connect(state) as db:
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert not tables & {"event_queue", "event_dead_letter"}, tables


def test_bad_pipeline_options(datafile_text):
    with raises(experiment.InvalidOptionError, "event_endpoint"):
        experiment.Client(datafile=datafile_text, event_endpoint="ftp://example.invalid/")
    with raises(experiment.InvalidOptionError, "event_queue_full_policy"):
        experiment.Client(datafile=datafile_text, event_queue_full_policy="block")


def test_stats_and_flush_after_close(datafile_text, tmp_path, server):
    c = pipeline_client(datafile_text, tmp_path, server.url)
    c.close()
    with raises(experiment.ClosedError):
        c.flush()


def test_unwritable_state_dir_reports_store_error(datafile_text, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pipeline_client(datafile_text, blocker / "state", "http://127.0.0.1:9/v1/events") as c:
        with raises(experiment.StoreError, "state"):
            c.track("purchase", "u1")
        c.decide("u2", "checkout_flow", U2_ATTRS)  # decisions keep coming
        stats = c.stats()
    assert stats["dropped"] == 2 and stats["last_error"]


CHILD = textwrap.dedent("""
    import sys, experiment
    datafile = open(sys.argv[1]).read()
    c = experiment.Client(datafile=datafile, state_dir=sys.argv[2], event_endpoint=sys.argv[3],
                          event_flush_interval_ms=20, event_batch_size=5)
    i = 0
    while True:
        c.track("purchase", "user-%d" % (i % 13), tags={"seq": i})
        print(i, flush=True)  # only after exp_track returned OK
        i += 1
""")


def test_sigkill_loses_no_accepted_event(datafile_text, tmp_path, server):
    from conftest import DATAFILE_PATH
    state_dir = tmp_path / "state"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    child = subprocess.Popen([sys.executable, "-c", CHILD, DATAFILE_PATH, str(state_dir), server.url],
                             stdout=subprocess.PIPE, env=env, text=True)
    accepted = []
    for line in child.stdout:
        accepted.append(int(line))
        if len(accepted) >= 400:
            break
    child.send_signal(signal.SIGKILL)
    child.wait()
    accepted += [int(line) for line in child.stdout.read().split()]
    child.stdout.close()
    assert len(server.events()) < len(accepted) or True  # some were delivered by the child, maybe all
    # the next client adopts the dead child's events in the background
    with pipeline_client(datafile_text, state_dir, server.url):
        server.wait_for(lambda: set(accepted) <= set(seqs(server.events())), timeout_s=60)
    delivered = set(seqs(server.events()))
    assert set(accepted) <= delivered


def _journal_record(uuid, url, body):
    payload = b"\0".join([uuid.encode(), url.encode(), body.encode()])
    record = struct.pack("<II", len(payload), 0x4A455645) + payload
    return record + b"\0" * (-len(record) % 8)


def test_abandoned_journal_with_a_torn_record_is_recovered(datafile_text, tmp_path, server):
    """A journal left by a dead process: whole records are sent, a record whose header was never
    written (the process died copying it) ends the journal."""
    # one real event body, captured through a host dispatcher
    bodies = []

    class Host:
        def dispatch_event(self, event):
            bodies.append(event.body if isinstance(event.body, str) else event.body.decode())

    with experiment.Client(datafile=datafile_text, event_dispatcher=Host()) as c:
        c.track("purchase", "journal-user", tags={"seq": 7})
    body = bodies[0]
    uuid = json.loads(body)["visitors"][0]["snapshots"][0]["events"][0]["uuid"]
    journal = _journal_record(uuid, server.url, body)
    torn = b"\0" * 8 + b"partial payload without its header"
    state_dir = tmp_path / "state"
    state_dir.mkdir()
    (state_dir / "event-journal-999999-1-a.bin").write_bytes(journal + torn + b"\0" * 4096)
    sqlite3.connect(str(state_dir / "state.sqlite")).close()  # a state file exists: the client opens the queue
    with pipeline_client(datafile_text, state_dir, server.url) as c:
        assert server.wait_for(lambda: len(server.events()) == 1)
        assert c.flush()
    (event,) = server.events()
    assert event["uuid"] == uuid and event["tags"] == {"seq": 7}
    assert not (state_dir / "event-journal-999999-1-a.bin").exists()


def test_two_clients_on_one_state_dir(datafile_text, tmp_path, server):
    """A live client's journal is not taken by another (it holds a lock); both deliver, once each."""
    a = pipeline_client(datafile_text, tmp_path, server.url, event_flush_interval_ms=3_600_000)
    for i in range(10):
        a.track("purchase", "a%d" % i, tags={"seq": i})
    b = pipeline_client(datafile_text, tmp_path, server.url)
    for i in range(10, 20):
        b.track("purchase", "b%d" % i, tags={"seq": i})
    assert b.flush()
    a.close()
    b.close()
    events = server.events()
    assert sorted(seqs(events)) == list(range(20))


# ------------------------------------------------------------------------------------------------
# notification listeners
# ------------------------------------------------------------------------------------------------

def test_decision_track_and_log_event_listeners(datafile_text, tmp_path, server):
    decisions, tracks, logs = [], [], []
    with pipeline_client(datafile_text, tmp_path, server.url) as c:
        c.add_listener("decision", decisions.append)
        c.add_listener("track", tracks.append)
        c.add_listener("log_event", logs.append)
        c.decide("u2", "checkout_flow", U2_ATTRS)
        c.decide("u1", "checkout_flow", options=["DISABLE_DECISION_EVENT"])
        c.activate("legacy_ab", "u2", U2_ATTRS)
        c.track("purchase", "u2", U2_ATTRS, {"revenue": 100})
        assert c.flush()
    flag = decisions[0]
    assert flag["type"] == "flag" and flag["user_id"] == "u2" and flag["attributes"] == U2_ATTRS
    info = flag["decision_info"]
    assert info["flag_key"] == "checkout_flow" and info["variation_key"] == "control"
    assert info["rule_key"] == "checkout_test" and info["enabled"] is True
    assert info["decision_event_dispatched"] is True and isinstance(info["variables"], dict)
    assert decisions[1]["decision_info"]["decision_event_dispatched"] is False
    ab = decisions[2]
    assert ab["type"] == "ab-test" and ab["decision_info"]["experiment_key"] == "legacy_ab"
    assert tracks == [{"event_key": "purchase", "user_id": "u2", "attributes": U2_ATTRS,
                       "event_tags": {"revenue": 100}}]
    assert sum(p["event_count"] for p in logs if p["outcome"] == "sent") == 3
    assert all(p["url"] == server.url and p["http_verb"] == "POST" for p in logs)


def test_log_event_listener_with_host_dispatcher(client, dispatcher):
    logs = []
    client.add_listener("log_event", logs.append)
    client.track("purchase", "u1")
    assert logs[0]["outcome"] == "sent" and logs[0]["event_count"] == 1 and logs[0]["status"] is None


# ------------------------------------------------------------------------------------------------
# Kameleoon: conversions and user data
# ------------------------------------------------------------------------------------------------

def _visitors(server):
    return [v for b in server.batches for v in b["visitors"]]


def test_user_data_goes_with_the_next_trigger(datafile_text, tmp_path, server):
    with pipeline_client(datafile_text, tmp_path, server.url) as c:
        c.add_user_data("k1", {"type": "custom", "index": 1, "value": "gold"},
                        {"type": "interest", "index": 2})
        c.add_user_data("k1", {"type": "custom", "index": 1, "value": ["a", "b"]},
                        {"type": "conversion", "goal_id": 32, "revenue": 10.5, "negative": True})
        assert c.flush()
        assert server.events() == []  # nothing is sent by add_user_data
        c.trigger_experiment("k1", "60004", U2_ATTRS)
        assert c.flush()
    visitors = _visitors(server)
    assert [v["visitor_id"] for v in visitors] == ["k1", "k1"]
    impression, data = visitors
    assert impression["snapshots"][0]["events"][0]["key"] == "campaign_activated"
    attributes = {a["key"]: a["value"] for a in data["attributes"]}
    assert attributes == {"kameleoon_custom_1": ["a", "b"], "kameleoon_interest_2": True}
    (conversion,) = data["snapshots"][0]["events"]
    assert conversion["entity_id"] == "32" and conversion["key"] == "goal_32" and conversion["value"] == 10.5
    assert conversion["tags"] == {"goal_id": 32, "revenue": 10.5, "negative": True}
    assert len(conversion["uuid"]) == 36


def test_track_conversion_and_flush_user(datafile_text, tmp_path, server):
    with pipeline_client(datafile_text, tmp_path, server.url) as c:
        c.add_user_data("k2", {"type": "interest", "index": 7})
        c.track_conversion("k2", 50001, 4.25)
        c.track_conversion("k3", 99)
        c.add_user_data("k4", {"type": "custom", "index": 3, "value": "x"})
        c.flush_user("k4")
        c.flush_user("nobody")  # nothing pending: nothing sent
        assert c.flush()
    visitors = {v["visitor_id"]: v for v in _visitors(server)}
    assert set(visitors) == {"k2", "k3", "k4"}
    k2 = visitors["k2"]["snapshots"][0]["events"][0]
    assert k2["key"] == "purchase" and k2["entity_id"] == "50001" and k2["value"] == 4.25
    assert visitors["k2"]["attributes"][0]["key"] == "kameleoon_interest_7"
    k3 = visitors["k3"]["snapshots"][0]["events"][0]
    assert "value" not in k3 and k3["tags"] == {"goal_id": 99, "negative": False}
    k4 = visitors["k4"]["snapshots"][0]["events"][0]
    assert k4["key"] == "kameleoon_data"
    assert visitors["k4"]["attributes"][0]["value"] == "x"


def test_user_data_errors(datafile_text, tmp_path, server, idle_client):
    with pipeline_client(datafile_text, tmp_path, server.url) as c:
        with raises(experiment.InvalidArgumentError, "type"):
            c.add_user_data("u", {"type": "weather"})
        with raises(experiment.InvalidArgumentError, "index"):
            c.add_user_data("u", {"type": "interest", "index": -1})
        with raises(experiment.InvalidArgumentError, "unknown key"):
            c.add_user_data("u", {"type": "interest", "index": 1, "extra": 1})
        with raises(experiment.InvalidArgumentError, "value"):
            c.add_user_data("u", {"type": "custom", "index": 1, "value": 3})
        with raises(experiment.InvalidArgumentError, "revenue"):
            c.add_user_data("u", {"type": "conversion", "goal_id": 1, "revenue": "ten"})
        with raises(experiment.InvalidArgumentError, "goal_id"):
            c.track_conversion("u", -5)
        with raises(experiment.UnsupportedTypeError, "goal_id"):
            c.track_conversion("u", "five")
        with raises(experiment.TooLargeError, "1000"):
            c.add_user_data("u", *[{"type": "interest", "index": i} for i in range(1001)])
        c.add_user_data("u", {"type": "interest", "index": 1})  # the client keeps working
    with raises(experiment.NotReadyError):
        idle_client.track_conversion("u", 1)


def test_user_data_with_host_dispatcher(client, dispatcher):
    client.add_user_data("k5", {"type": "interest", "index": 1})
    client.track("purchase", "k5")
    assert [e.params["visitors"][0]["visitor_id"] for e in dispatcher.events] == ["k5", "k5"]
    assert dispatcher.events[1].params["visitors"][0]["attributes"][0]["key"] == "kameleoon_interest_1"


# ------------------------------------------------------------------------------------------------
# payloads against the reference SDK's batching dispatcher
# ------------------------------------------------------------------------------------------------

def _normalize(batch):
    batch = json.loads(json.dumps(batch))
    for key in ("client_name", "client_version"):
        batch.pop(key, None)
    for visitor in batch["visitors"]:
        visitor["attributes"] = sorted(visitor.get("attributes", []), key=lambda a: a["key"])
        for snapshot in visitor["snapshots"]:
            for event in snapshot["events"]:
                event.pop("uuid", None)
                event.pop("timestamp", None)
    return batch


def test_batched_payload_equals_optimizely_batch_event_processor(datafile_text, tmp_path, server):
    from optimizely import optimizely
    from optimizely.event.event_processor import BatchEventProcessor
    from optimizely.logger import NoOpLogger
    from conftest import RecordingDispatcher

    rec = RecordingDispatcher()
    processor = BatchEventProcessor(rec, logger=NoOpLogger(), batch_size=100, flush_interval=60,
                                    start_on_init=True)
    ref = optimizely.Optimizely(datafile=datafile_text, event_dispatcher=rec, logger=NoOpLogger(),
                                event_processor=processor)

    def calls(decide, activate, track):
        decide("u2", "checkout_flow", dict(U2_ATTRS))
        activate("legacy_ab", "u2", dict(U2_ATTRS))
        track("purchase", "u2", dict(U2_ATTRS), {"revenue": 4200, "value": 3.5, "category": "shoes"})
        decide("u3", "checkout_flow", dict(U3_ATTRS))
        track("signup", "u3", dict(U3_ATTRS), None)

    calls(lambda u, f, a: ref.create_user_context(u, a).decide(f), ref.activate, ref.track)
    processor.stop()  # flushes the batch
    # one batch: no timer round in between (flush sends it)
    with pipeline_client(datafile_text, tmp_path, server.url, event_batch_size=100,
                         event_flush_interval_ms=3_600_000) as c:
        calls(lambda u, f, a: c.decide(u, f, a), c.activate, c.track)
        assert c.flush()
    assert len(rec.events) == 1 and len(server.batches) == 1
    assert rec.events[0].url == "https://logx.optimizely.com/v1/events"
    assert _normalize(server.batches[0]) == _normalize(rec.events[0].params)
    assert len(server.batches[0]["visitors"]) >= 4
