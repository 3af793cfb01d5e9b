"""Issue 33 items 1 and 2: a client created before fork keeps working in the parent and in every child, with
no call from the user. Each process delivers its own events exactly once (the child's pipeline is its own:
own journal segments, own SQLite connection, own threads), a child's close never crashes, and processes
sharing one state directory deliver while they run. A real event endpoint on 127.0.0.1 counts every event."""

from __future__ import annotations

import collections
import json
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import urllib.request

import pytest

import experiment
from event_server import EventServer

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture()
def server():
    s = EventServer()
    yield s
    s.stop()


def make_client(datafile_text, state_dir, endpoint, **options):
    options.setdefault("event_flush_interval_ms", 50)
    options.setdefault("close_timeout_ms", 10_000)
    return experiment.Client(datafile=datafile_text, state_dir=str(state_dir), event_endpoint=endpoint, **options)


def tags_delivered(server):
    """{seq tag: times delivered}, counting each delivered event (a duplicate counts twice)."""
    return collections.Counter(e["tags"]["seq"] for e in server.events() if "tags" in e and "seq" in e["tags"])


def assert_each_exactly_once(server, expected):
    assert server.wait_for(lambda: len(server.events()) >= len(expected), timeout_s=30)
    counts = tags_delivered(server)
    uuids = collections.Counter(e["uuid"] for e in server.events())
    assert set(counts) == set(expected), sorted(set(expected) ^ set(counts))[:10]
    assert [t for t, n in counts.items() if n != 1] == []
    assert [u for u, n in uuids.items() if n != 1] == []


def track(client, prefix, count):
    for i in range(count):
        client.track("purchase", "user-%s-%d" % (prefix, i % 20), tags={"seq": "%s-%d" % (prefix, i)})
    return ["%s-%d" % (prefix, i) for i in range(count)]


def wait_exit(pid):
    _, status = os.waitpid(pid, 0)
    assert not os.WIFSIGNALED(status), "child killed by signal %d" % os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def test_child_closes_without_crash_and_each_process_delivers_its_own(datafile_text, tmp_path, server):
    client = make_client(datafile_text, tmp_path, server.url)
    client.decide("user-0", "checkout_flow")
    expected = track(client, "before", 30)
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            client.decide("user-1", "checkout_flow")
            track(client, "child", 40)
            code = 0 if client.close() else 3
        finally:
            os._exit(code)
    expected += track(client, "parent", 30)
    assert wait_exit(pid) == 0
    assert client.close()
    assert_each_exactly_once(server, expected + ["child-%d" % i for i in range(40)])


def test_child_that_only_closes_does_not_crash(datafile_text, tmp_path, server):
    client = make_client(datafile_text, tmp_path, server.url)
    client.decide("user-0", "checkout_flow")
    pid = os.fork()
    if pid == 0:
        client.close()
        os._exit(0)
    assert wait_exit(pid) == 0
    assert client.close()


def test_several_generations_of_forks(datafile_text, tmp_path, server):
    """A child forks again: the grandchild also gets a pipeline of its own."""
    client = make_client(datafile_text, tmp_path, server.url)
    expected = track(client, "root", 10)
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            track(client, "child", 10)
            grandchild = os.fork()
            if grandchild == 0:
                code = 1
                try:
                    track(client, "grandchild", 10)
                    code = 0 if client.close() else 3
                finally:
                    os._exit(code)
            track(client, "child-late", 10)
            code = wait_exit(grandchild) or (0 if client.close() else 3)
        finally:
            os._exit(code)
    assert wait_exit(pid) == 0
    assert client.close()
    expected += ["%s-%d" % (p, i) for p in ("child", "grandchild", "child-late") for i in range(10)]
    assert_each_exactly_once(server, expected)


def test_sticky_bucketing_across_fork(datafile_text, tmp_path, server):
    """The child opens its own SQLite connection and sees the parent's sticky assignments."""
    client = make_client(datafile_text, tmp_path, server.url)
    before = {u: client.decide(u, "checkout_flow").variation_key for u in ("a", "b", "c")}
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            seen = {u: client.decide(u, "checkout_flow").variation_key for u in ("a", "b", "c")}
            os.write(write, repr(seen).encode())
            code = 0 if client.close() else 3
        finally:
            os._exit(code)
    os.close(write)
    seen = os.read(read, 4096).decode()
    assert wait_exit(pid) == 0
    assert seen == repr(before)
    client.close()


def test_forced_variations_persisted_by_parent_and_child(datafile_text, tmp_path, server):
    """The child writes forced variations through a SQLite connection of its own; a later client on the
    state directory reads what both processes wrote."""
    client = make_client(datafile_text, tmp_path, server.url)
    client.set_forced_variation("checkout_test", "parent-user", "treatment")
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            client.set_forced_variation("checkout_test", "child-user", "control")
            code = 0 if client.get_forced_variation("checkout_test", "parent-user") == "treatment" else 4
            client.close()
        finally:
            os._exit(code)
    assert wait_exit(pid) == 0
    client.set_forced_variation("search_test", "parent-user", "neural")
    client.close()
    later = make_client(datafile_text, tmp_path, server.url)
    assert later.get_forced_variation("checkout_test", "parent-user") == "treatment"
    assert later.get_forced_variation("checkout_test", "child-user") == "control"
    assert later.get_forced_variation("search_test", "parent-user") == "neural"
    later.close()


# -- multiprocessing --------------------------------------------------------------------------------

_INHERITED = None


def _track_in_inherited_client(prefix, count):
    track(_INHERITED, prefix, count)
    os._exit(0 if _INHERITED.close() else 3)


def _track_in_own_client(datafile_text, state_dir, endpoint, prefix, count):
    client = make_client(datafile_text, state_dir, endpoint)
    track(client, prefix, count)
    os._exit(0 if client.close() else 3)


def test_multiprocessing_fork_start_method(datafile_text, tmp_path, server):
    global _INHERITED
    _INHERITED = make_client(datafile_text, tmp_path, server.url)
    expected = track(_INHERITED, "parent", 20)
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_track_in_inherited_client, args=("worker%d" % n, 50)) for n in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    assert _INHERITED.close()
    expected += ["worker%d-%d" % (n, i) for n in range(4) for i in range(50)]
    assert_each_exactly_once(server, expected)


def test_multiprocessing_forkserver_start_method(datafile_text, tmp_path, server):
    """Forkserver children are forked from a server process with no client: each opens one on the shared
    state directory."""
    parent = make_client(datafile_text, tmp_path, server.url)
    expected = track(parent, "parent", 20)
    context = multiprocessing.get_context("forkserver")
    workers = [context.Process(target=_track_in_own_client,
                               args=(datafile_text, tmp_path, server.url, "worker%d" % n, 50)) for n in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    assert parent.close()
    expected += ["worker%d-%d" % (n, i) for n in range(4) for i in range(50)]
    assert_each_exactly_once(server, expected)


# -- many processes, one state directory (item 2) -----------------------------------------------------

def test_processes_sharing_a_state_directory_deliver_while_running(datafile_text, tmp_path, server):
    """Each process's events reach the endpoint while it runs (batches by size and interval), not only at
    close; and nothing is delivered twice. Checked before any process closes."""
    client = make_client(datafile_text, tmp_path, server.url, event_batch_size=10)
    release_read, release_write = os.pipe()
    pids = []
    for n in range(4):
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                track(client, "p%d" % n, 300)
                os.read(release_read, 1)  # blocks until the parent has seen every event delivered
                code = 0 if client.close() else 3
            finally:
                os._exit(code)
        pids.append(pid)
    expected = ["p%d-%d" % (n, i) for n in range(4) for i in range(300)]
    assert server.wait_for(lambda: len(tags_delivered(server)) >= len(expected), timeout_s=30), \
        "delivered while running: %d of %d" % (len(tags_delivered(server)), len(expected))
    os.write(release_write, b"x" * 4)
    for pid in pids:
        assert wait_exit(pid) == 0
    assert client.close()
    assert_each_exactly_once(server, expected)


# -- gunicorn --preload ------------------------------------------------------------------------------

GUNICORN_APP = textwrap.dedent("""
    import itertools, json, os
    import experiment

    client = experiment.Client(datafile=open(os.environ["FORK_TEST_DATAFILE"]).read(),
                               state_dir=os.environ["FORK_TEST_STATE_DIR"],
                               event_endpoint=os.environ["FORK_TEST_ENDPOINT"],
                               event_flush_interval_ms=50, close_timeout_ms=10000)

    def app(environ, start_response):
        user = environ.get("QUERY_STRING", "").partition("=")[2] or "anonymous"
        before = client.stats()["queued"]
        decision = client.decide(user, "checkout_flow")
        client.track("purchase", user, tags={"seq": user})
        body = json.dumps({"variation": decision.variation_key, "pid": os.getpid(),
                           "events": client.stats()["queued"] - before}).encode()
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
        return [body]
""")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_gunicorn_preload_four_workers(datafile_text, tmp_path, server):
    pytest.importorskip("gunicorn")
    (tmp_path / "forkapp.py").write_text(GUNICORN_APP)
    datafile = tmp_path / "datafile.json"
    datafile.write_text(datafile_text)
    state = tmp_path / "state"
    state.mkdir()
    port = free_port()
    env = dict(os.environ, FORK_TEST_DATAFILE=str(datafile), FORK_TEST_STATE_DIR=str(state),
               FORK_TEST_ENDPOINT=server.url, PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    process = subprocess.Popen([sys.executable, "-m", "gunicorn", "--preload", "--workers", "4",
                                "--bind", "127.0.0.1:%d" % port, "forkapp:app"], env=env, cwd=str(tmp_path),
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                warmup = json.loads(urllib.request.urlopen("http://127.0.0.1:%d/?user=warmup" % port, timeout=5).read())
                break
            except OSError:
                assert time.monotonic() < deadline and process.poll() is None, process.stdout.read().decode()
                time.sleep(0.1)
        requests, decided, pids = 1, warmup["events"], {warmup["pid"]}
        for i in range(400):
            reply = json.loads(urllib.request.urlopen("http://127.0.0.1:%d/?user=u%d" % (port, i), timeout=10).read())
            requests += 1
            decided += reply["events"]
            pids.add(reply["pid"])
        server.wait_for(lambda: len(server.events()) >= decided, timeout_s=30)
    finally:
        process.send_signal(signal.SIGTERM)
        output = process.communicate(timeout=60)[0].decode()
    events = server.events()
    uuids = collections.Counter(e["uuid"] for e in events)
    duplicates = sum(n - 1 for n in uuids.values())
    print("gunicorn --preload -w 4: requests=%d workers_seen=%d events_decided=%d events_received=%d duplicates=%d"
          % (requests, len(pids), decided, len(events), duplicates))
    assert "Segmentation" not in output and "SIGSEGV" not in output, output
    assert len(pids) >= 2
    assert duplicates == 0
    assert len(events) == decided


PROCESS_SCRIPT = textwrap.dedent("""
    import sys
    import experiment
    datafile, state_dir, endpoint, prefix = sys.argv[1:5]
    client = experiment.Client(datafile=open(datafile).read(), state_dir=state_dir, event_endpoint=endpoint,
                               close_timeout_ms=500)
    for i in range(3000):
        client.track("purchase", "user-%d" % (i % 100), tags={"seq": "%s-%d" % (prefix, i)})
    client.close()
""")


def test_four_processes_one_state_directory_then_a_later_client_delivers_every_event(datafile_text, tmp_path, server):
    """Issue 33.2: 4 processes x 3,000 events on one state directory, close_timeout_ms 500; whatever they
    leave on disk a later client delivers: no event is lost. Duplicates are reported, not failed on: a POST
    the close deadline cancels after the endpoint took it (its answer never read) is sent again by the later
    client, the at-least-once case receivers deduplicate by uuid (seen in about 1 run of 3 here)."""
    datafile = tmp_path / "datafile.json"
    datafile.write_text(datafile_text)
    state = tmp_path / "state"
    state.mkdir()
    processes = [subprocess.Popen([sys.executable, "-c", PROCESS_SCRIPT, str(datafile), str(state), server.url,
                                   "p%d" % n]) for n in range(4)]
    for process in processes:
        assert process.wait(120) == 0
    delivered_by_the_four = len(server.events())
    later = make_client(datafile_text, state, server.url)
    expected = ["p%d-%d" % (n, i) for n in range(4) for i in range(3000)]
    assert server.wait_for(lambda: len(tags_delivered(server)) >= len(expected), timeout_s=60)
    assert later.close()
    counts = tags_delivered(server)
    duplicates = sum(n - 1 for n in counts.values())
    print("4 x 3000 on one state dir: delivered by the four before exit %d, in all %d, duplicates %d"
          % (delivered_by_the_four, len(server.events()), duplicates))
    assert set(counts) == set(expected)
