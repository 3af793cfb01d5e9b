"""Uses the installed wheel as an application would (run by tests/install/test_wheel.sh):

    python wheel_smoke.py DATAFILE STATE_DIR

decisions with sticky bucketing in SQLite (the state directory) and, when the test started a redis-server
(WHEEL_TEST_REDIS_PORT), in that real Redis; impressions and a conversion sent by the built-in event pipeline (libcurl) to an HTTP server on
127.0.0.1; then /proc/self/maps must show libcurl, SQLite and hiredis mapped from the wheel's
libexperiment.libs/ and libexperiment.so from the installed package.
"""
import http.server
import json
import os
import sys
import threading

import experiment
from experiment import _native
from experiment import client as client_module

DATAFILE, STATE_DIR = sys.argv[1], sys.argv[2]
EXPERIMENT_ATTRIBUTES = {"plan": "premium", "cart_value": 80, "age": 30}


class Collector(http.server.BaseHTTPRequestHandler):
    batches = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        Collector.batches.append(json.loads(body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


def experiment_users(client, count):
    """Users the A/B test checkout_redesign_ab buckets (impressions and profile saves need one)."""
    found = []
    for n in range(200):
        decision = client.decide("user-%d" % n, "checkout_redesign", EXPERIMENT_ATTRIBUTES)
        if decision.rule_key == "checkout_redesign_ab" and decision.variation_key:
            found.append(("user-%d" % n, decision.variation_key))
            if len(found) == count:
                return found
    raise AssertionError("no user reached checkout_redesign_ab")


def with_sqlite_and_events(datafile):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Collector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    endpoint = "http://127.0.0.1:%d/v1/events" % server.server_address[1]
    try:
        with experiment.Client(datafile=datafile, state_dir=STATE_DIR, event_endpoint=endpoint,
                               event_flush_interval_ms=50) as client:
            users = experiment_users(client, 3)
            for user, _ in users:
                client.track("purchase", user, EXPERIMENT_ATTRIBUTES, {"revenue": 1999})
            assert client.flush(), client.stats()
            stats, profiles = client.stats(), client.profile_stats()
        assert stats["sent"] >= 6 and stats["failed"] == 0, stats
        assert profiles["store"] == "sqlite" and profiles["saves"] >= 3 and profiles["errors"] == 0, profiles
        assert os.path.isfile(os.path.join(STATE_DIR, "state.sqlite"))
        keys = [event["key"] for batch in Collector.batches for visitor in batch["visitors"]
                for snapshot in visitor["snapshots"] for event in snapshot["events"]]
        assert keys.count("purchase") == 3 and keys.count("campaign_activated") >= 3, keys
        # Restarted on the same state file: the sticky assignments come back from SQLite.
        with experiment.Client(datafile=datafile, state_dir=STATE_DIR, event_endpoint="none") as client:
            for user, variation in users:
                assert client.decide(user, "checkout_redesign", EXPERIMENT_ATTRIBUTES).variation_key == variation
            assert client.profile_stats()["lookups"] >= 3
        print("sqlite + events: %d events in %d batches to %s, %d sticky profiles saved and read back"
              % (len(keys), len(Collector.batches), endpoint, profiles["saves"]))
    finally:
        server.shutdown()


def with_redis(datafile):
    port = os.environ.get("WHEEL_TEST_REDIS_PORT")
    if not port:
        print("redis: no redis-server (it is not installed): the hiredis copy was only loaded")
        return
    store = {"redis": {"url": "redis://127.0.0.1:%s/0" % port, "prefix": "wheel:"}}
    with experiment.Client(datafile=datafile, profile_store=store,
                           state_dir=os.path.join(STATE_DIR, "redis"), event_endpoint="none") as client:
        users = experiment_users(client, 2)
        profiles = client.profile_stats()
    assert profiles["store"] == "redis" and profiles["saves"] >= 2 and profiles["errors"] == 0, profiles
    with experiment.Client(datafile=datafile, profile_store=store,
                           state_dir=os.path.join(STATE_DIR, "redis"), event_endpoint="none") as client:
        for user, variation in users:
            assert client.decide(user, "checkout_redesign", EXPERIMENT_ATTRIBUTES).variation_key == variation
        again = client.profile_stats()
    assert again["lookups"] >= 2 and again["errors"] == 0, again
    print("redis: %d sticky profiles saved to redis-server :%s and read back by a new client"
          % (profiles["saves"], port))


def mapped_from():
    """{library file name: directory} of every shared object mapped into this process."""
    found = {}
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            if ".so" in path:
                found[os.path.basename(path)] = os.path.dirname(path)
    return found


def main():
    with open(DATAFILE) as handle:
        datafile = handle.read()
    # The wheel carries the demo datafile the README's quick starts use (package data, not a link).
    assert experiment.demo_datafile() == datafile, "experiment.demo_datafile() differs from the repository's demo.json"
    loaded = _native.lib._name
    package = os.path.dirname(os.path.abspath(experiment.__file__))
    assert loaded == os.path.join(package, "libexperiment.so"), loaded
    assert client_module._speedups is not None, "the wheel's C accelerator did not load"
    with_sqlite_and_events(datafile)
    with_redis(datafile)
    bundled = os.path.join(os.path.dirname(package), "libexperiment.libs")
    maps = mapped_from()

    def places(library):
        return {directory for name, directory in maps.items()
                if name.startswith(library + "-") or name.startswith(library + ".")}
    for library in ("libcurl", "libsqlite3", "libhiredis", "libjson-c", "libnghttp2"):
        assert places(library) == {bundled}, "%s mapped from %s, not only from the wheel" % (library, places(library))
    # OpenSSL: the interpreter's own _ssl module (imported by http.server) maps the system's copy too, under
    # its own name; libcurl's copy links the bundled one.
    for library in ("libssl", "libcrypto"):
        assert bundled in places(library), "%s mapped from %s, not from the wheel" % (library, places(library))
    print("installed wheel: %s (library %s); libcurl, libsqlite3, libhiredis, libjson-c, libnghttp2 mapped from %s only, "
          "its libssl and libcrypto copies too" % (loaded, experiment.library_version(), bundled))


main()
