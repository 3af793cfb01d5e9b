"""experiment.optimizely sends nothing the program switched off and speaks only through the program's
logger: ODP disabled in the reference's OptimizelySdkSettings means no request to the ODP host, and without a
logger nothing reaches stderr (optimizely-sdk's NoOpLogger). Every request is counted by a local server."""

from __future__ import annotations

import http.server
import json
import os
import sys
import subprocess
import threading
from typing import Any, Iterator, List, Tuple

import pytest

from experiment import optimizely as dropin
from optimizely.helpers.sdk_settings import OptimizelySdkSettings

HERE = os.path.dirname(os.path.abspath(__file__))
ODP_DIR = os.path.join(HERE, "..", "..", "..", "tests", "odp")
sys.path.insert(0, ODP_DIR)
from odp_datafile import odp_datafile  # noqa: E402

DEMO = os.path.join(HERE, "..", "..", "..", "examples", "datafiles", "demo.json")


class CountingServer:
    """Answers every request with ``status`` and keeps (method, path) of each."""

    def __init__(self, status: int = 500) -> None:
        self.requests: List[Tuple[str, str]] = []
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
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
