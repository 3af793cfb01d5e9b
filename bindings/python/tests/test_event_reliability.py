"""Issue 18, event pipeline items, through the real library against real HTTP servers on 127.0.0.1 and real
SQLite files: close and flush retry within their timeout and report what is left (item 2); events outlive a
dead endpoint and every event's life is bounded (item 3); another program's backlog does not delay a close
(item 4); several POSTs in flight (item 6); a full disk does not stop delivery and repeating errors are
logged once per interval (item 8). Item 5 (a full journal segment under concurrent tracking) is the C test
tests/events/concurrent_track.c (`make test-c`): Python threads cannot track fast enough to fill a segment
during one ingest."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest

import experiment
from event_server import EventServer, closed_port
from test_faults import CapturedLog, _fill, small_fs  # noqa: F401  (small_fs: a pytest fixture)


@pytest.fixture()
def server():
    s = EventServer()
    yield s
    s.stop()


def client(datafile_text, state_dir, endpoint, **options):
    options.setdefault("event_flush_interval_ms", 50)
    options.setdefault("request_timeout_ms", 2000)
    return experiment.Client(datafile=datafile_text, state_dir=str(state_dir), event_endpoint=endpoint, **options)


def seqs(events, marker=None):
    """The seq tags of the events delivered, once per uuid (receivers deduplicate by uuid: at-least-once)."""
    unique = {e["uuid"]: e for e in events}
    return sorted(e["tags"]["seq"] for e in unique.values()
                  if "seq" in e.get("tags", {}) and (marker is None or e["tags"].get("who") == marker))


def wait_for(predicate, timeout_s=15.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


def queue_rows(state_dir):
    with sqlite3.connect(os.path.join(str(state_dir), "state.sqlite")) as db:
        return db.execute("SELECT COUNT(*) FROM event_queue").fetchone()[0]


def dead_letters(state_dir):
    with sqlite3.connect(os.path.join(str(state_dir), "state.sqlite")) as db:
        return db.execute("SELECT uuid, attempts, reason FROM event_dead_letter").fetchall()


# ------------------------------------------------------------------------------------------------
# item 2: close and flush keep retrying within their timeout; pending is what is on disk
# ------------------------------------------------------------------------------------------------

def test_close_retries_failing_events_until_delivered(datafile_text, tmp_path, server):
    # Before: one attempt per event, close returned at once with ~27% of them left and "pending": 0.
    server.failure_rate = 0.3
    c = client(datafile_text, tmp_path, server.url, event_batch_size=10, close_timeout_ms=30_000,
               event_flush_interval_ms=3_600_000)
    for i in range(2000):
        c.track("purchase", "user-%d" % (i % 50), tags={"seq": i})
    assert c.close() is True
    assert seqs(server.events()) == list(range(2000))
    assert queue_rows(tmp_path) == 0
    assert sum(1 for r in server.requests if r["status"] == 500) > 0


def test_flush_retries_failing_events_until_delivered(datafile_text, tmp_path, server):
    server.failure_rate = 0.3
    with client(datafile_text, tmp_path, server.url, close_timeout_ms=30_000,
                event_flush_interval_ms=3_600_000) as c:
        for i in range(500):
            c.track("purchase", "user-%d" % (i % 50), tags={"seq": i})
        assert c.flush() is True
        assert c.stats()["pending"] == 0
        assert seqs(server.events()) == list(range(500))


def test_close_that_cannot_deliver_says_so_and_pending_counts_the_disk(datafile_text, tmp_path):
    c = client(datafile_text, tmp_path, "http://127.0.0.1:%d/v1/events" % closed_port(), close_timeout_ms=300)
    for i in range(40):
        c.track("purchase", "user-%d" % i, tags={"seq": i})
    assert c.flush() is False  # exp_flush: EXP_ERR_TIMEOUT
    stats = c.stats()
    assert stats["pending"] == 40 and stats["backlog"] == 40 and stats["sent"] == 0
    assert c.close() is False  # exp_client_close: EXP_ERR_TIMEOUT (closed; the events stay on disk)
    assert queue_rows(tmp_path) == 40
    # (exp_client_stats after exp_client_close reports them too: tests/events/concurrent_track.c)


# ------------------------------------------------------------------------------------------------
# item 3: a corrected endpoint gets the leftovers; every event's life is bounded
# ------------------------------------------------------------------------------------------------

def test_leftovers_of_a_dead_endpoint_go_to_the_current_endpoint(datafile_text, tmp_path, server):
    # Before: each row kept the URL it was queued under, so the restarted client retried the dead one forever.
    dead = "http://127.0.0.1:%d/v1/events" % closed_port()
    first = client(datafile_text, tmp_path, dead, close_timeout_ms=200)
    for i in range(20):
        first.track("purchase", "user-%d" % i, tags={"seq": i})
    assert first.close() is False
    with client(datafile_text, tmp_path, server.url) as fixed:
        assert server.wait_for(lambda: seqs(server.events()) == list(range(20)), timeout_s=15)
        assert fixed.stats()["backlog"] == 0


def test_events_past_max_attempts_move_to_dead_letters(datafile_text, tmp_path, server):
    server.failure_rate = 1.0
    log = CapturedLog()
    with client(datafile_text, tmp_path, server.url, event_max_attempts=3, logger=log.logger,
                log_level="info") as c:
        for i in range(5):
            c.track("purchase", "user-%d" % i, tags={"seq": i})
        assert server.wait_for(lambda: c.stats()["expired"] == 5, timeout_s=15)
        stats = c.stats()
        assert stats["pending"] == 0 and stats["dead_letter"] == 5 and stats["backlog"] == 0
        assert c.flush() is True
    letters = dead_letters(tmp_path)
    assert len(letters) == 5 and all(attempts == 3 for _, attempts, _ in letters)
    assert all("event_max_attempts" in reason and "HTTP 500" in reason for _, _, reason in letters)
    assert log.has("moved to event_dead_letter")
    assert len(server.requests) <= 3 * 5


def test_events_past_max_age_move_to_dead_letters(datafile_text, tmp_path):
    dead = "http://127.0.0.1:%d/v1/events" % closed_port()
    with client(datafile_text, tmp_path, dead, event_max_age_s=1) as c:
        for i in range(3):
            c.track("purchase", "user-%d" % i, tags={"seq": i})
        assert wait_for(lambda: c.stats()["expired"] == 3)
        assert c.stats()["pending"] == 0
    assert len(dead_letters(tmp_path)) == 3
    assert all("event_max_age_s" in reason for _, _, reason in dead_letters(tmp_path))


@pytest.mark.parametrize("name,value,message", [
    ("event_max_attempts", 0, "event_max_attempts: expected an integer from 1 to 1000000, got 0"),
    ("event_max_age_s", -5, "event_max_age_s: expected an integer from 1 to"),
    ("event_max_inflight", 65, "event_max_inflight: expected an integer from 1 to 64, got 65"),
    ("event_max_inflight", "4", "event_max_inflight: expected an integer"),
])
def test_bad_delivery_bound_options(datafile_text, name, value, message):
    with pytest.raises(experiment.InvalidOptionError) as error:
        experiment.Client(datafile=datafile_text, **{name: value})
    assert message in str(error.value)


# ------------------------------------------------------------------------------------------------
# item 4: another program's backlog is adopted in the background, never drained by someone's close
# ------------------------------------------------------------------------------------------------

LEAVE_BACKLOG = textwrap.dedent("""
    import sys, experiment
    datafile, state_dir, endpoint = open(sys.argv[1]).read(), sys.argv[2], sys.argv[3]
    # no round before close (batch size and interval out of reach), and close gives no time: all stay queued
    c = experiment.Client(datafile=datafile, state_dir=state_dir, event_endpoint=endpoint,
                          close_timeout_ms=0, event_flush_interval_ms=3600000, event_batch_size=10000)
    for i in range(2000):
        c.track("purchase", "other-%d" % (i % 100), tags={"seq": i, "who": "other"})
    print(c.close())
    """)


def test_close_waits_only_for_its_own_events(datafile_text, tmp_path, server):
    # Every POST carrying the other program's events stalls 3 s; this script's own events are answered at once.
    server.stall_marker = "other-"
    server.stall_s = 3.0
    # Another program (a real second process, same endpoint) leaves 2,000 events on the shared state directory.
    datafile = tmp_path / "datafile.json"
    datafile.write_text(datafile_text)
    state = tmp_path / "state"
    state.mkdir()
    out = subprocess.run([sys.executable, "-c", LEAVE_BACKLOG, str(datafile), str(state), server.url],
                         capture_output=True, text=True, env=dict(os.environ), timeout=120)
    assert out.returncode == 0, out.stderr
    assert queue_rows(state) == 2000 and server.started == []
    log = CapturedLog()
    script = client(datafile_text, state, server.url, close_timeout_ms=60_000, request_timeout_ms=10_000,
                    logger=log.logger, log_level="warning")
    for i in range(5):
        script.track("purchase", "me-%d" % i, tags={"seq": i, "who": "me"})
    assert script.close() is True
    # Before: the close gave each of the other program's events an attempt, one stalled POST after another,
    # until close_timeout_ms (about 20 of them); now the close takes none, and the background POSTs in
    # flight when it began (at most event_max_inflight) are cut short.
    others = [b for b in server.started if b"other-" in b]
    assert len(others) <= 4
    assert seqs(server.events(), "me") == list(range(5))
    assert not log.has("2000")
    # The backlog is adopted in the background by the next client with a pipeline, whatever its close.
    server.stall_marker = None
    with client(datafile_text, state, server.url):
        assert server.wait_for(lambda: seqs(server.events(), "other") == list(range(2000)), timeout_s=30)


# ------------------------------------------------------------------------------------------------
# item 6: several POSTs in flight
# ------------------------------------------------------------------------------------------------

def test_several_posts_in_flight(datafile_text, tmp_path, server):
    # Before: one POST at a time, so every batch waited for the one before (a stalled one held up all).
    server.delay_s = 0.2
    with client(datafile_text, tmp_path, server.url, event_batch_size=5, event_max_inflight=4,
                close_timeout_ms=20_000, event_flush_interval_ms=3_600_000) as c:
        for i in range(60):
            c.track("purchase", "user-%d" % i, tags={"seq": i})
        assert c.flush() is True
    assert server.max_in_flight >= 2
    assert seqs(server.events()) == list(range(60))


def test_one_in_flight_when_asked(datafile_text, tmp_path, server):
    server.delay_s = 0.05
    with client(datafile_text, tmp_path, server.url, event_batch_size=5, event_max_inflight=1,
                event_flush_interval_ms=3_600_000) as c:
        for i in range(60):
            c.track("purchase", "user-%d" % i, tags={"seq": i})
        assert c.flush() is True
    assert server.max_in_flight == 1
    assert seqs(server.events()) == list(range(60))


# ------------------------------------------------------------------------------------------------
# item 8: a full disk does not stop delivery; a repeating error is logged once per interval
# ------------------------------------------------------------------------------------------------

def test_full_disk_still_drains_to_a_healthy_server(datafile_text, small_fs):  # noqa: F811
    """A real full filesystem: a 4 MiB tmpfs this test mounts (root), too small for the event journal, so
    every event goes to SQLite; the endpoint is down until the disk is full, and the space is NOT given
    back. Before: "cannot read queued events: database or disk is full", nothing delivered, and one log line
    per refused exp_track."""
    state = small_fs(4)
    server = EventServer()
    port = server.port
    server.stop()
    log = CapturedLog()
    try:
        c = client(datafile_text, state, server.url, close_timeout_ms=5000, logger=log.logger, log_level="info")
        c.track("purchase", "warm", tags={"seq": 0})
        filler = _fill(state)
        os.truncate(filler, os.path.getsize(filler) - 256 * 1024)  # room for a few hundred events
        accepted, refused = 1, 0
        for i in range(1, 40_000):
            try:
                c.track("purchase", "user-%d" % (i % 11), tags={"seq": accepted, "pad": "x" * 400})
                accepted += 1
            except experiment.StoreError as error:
                assert "full" in str(error).lower()
                refused += 1
                if refused >= 3000:
                    break
        assert refused == 3000 and accepted > 10
        server = EventServer(port)
        delivered = False
        for _ in range(200):
            if c.flush():
                delivered = True
                break
        assert delivered, (c.stats(), log.messages[-5:])
        assert seqs(server.events()) == list(range(accepted))
        assert os.path.exists(filler)  # the disk stayed full
        assert not log.has("cannot read queued events")
        assert c.close() is True
        # 3,000 refusals: a few lines with counts, not one per call
        lines = [m for m in log.messages if "cannot store an event" in m]
        assert 1 <= len(lines) <= 5, len(lines)
        assert any("more like this" in m for m in lines) or log.has("more \"store\" messages were held back")
    finally:
        server.stop()
