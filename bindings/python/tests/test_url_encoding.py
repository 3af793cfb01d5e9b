"""Datafile text substituted into URLs is percent-encoded, and control characters in log lines are escaped
(issue 35 item 5): a CMAB rule id like ``3001/../../admin?x=`` stays one path segment, and a CR/LF in a key
cannot forge a log line."""

from __future__ import annotations

import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, List

import pytest

import experiment

HOSTILE_RULE_ID = "3001/../../admin?x=#y z\r\n"


class RecordingServer:
    """Answers every POST with a CMAB prediction and records the raw request paths."""

    def __init__(self) -> None:
        self.paths: List[str] = []
        self.answered = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                server.paths.append(self.path)
                data = json.dumps({"predictions": [{"variation_id": "201"}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str) -> str:
        return "http://127.0.0.1:%d%s" % (self.httpd.server_address[1], path)

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def cmab_datafile(rule_id: str) -> dict:
    return {
        "version": "4", "rollouts": [], "typedAudiences": [], "anonymizeIP": False, "projectId": "1",
        "variables": [], "featureFlags": [{"experimentIds": [rule_id], "rolloutId": "", "variables": [],
                                           "id": "10", "key": "flag_cmab"}],
        "experiments": [{"status": "Running", "audienceConditions": [], "audienceIds": [], "variations": [
            {"variables": [], "id": "201", "key": "a", "featureEnabled": True},
            {"variables": [], "id": "202", "key": "b", "featureEnabled": True}],
            "forcedVariations": {}, "key": "exp_cmab", "layerId": "1000", "trafficAllocation": [],
            "id": rule_id, "cmab": {"attributeIds": ["300"], "trafficAllocation": 10000}}],
        "audiences": [], "groups": [], "attributes": [{"id": "300", "key": "country"}],
        "botFiltering": False, "accountId": "1", "events": [], "revision": "1", "sendFlagDecisions": True,
        "integrations": [],
    }


@pytest.fixture()
def server():
    recording = RecordingServer()
    yield recording
    recording.close()


def test_cmab_rule_id_is_percent_encoded_in_the_prediction_url(server, tmp_path):
    text = json.dumps(cmab_datafile(HOSTILE_RULE_ID))
    with experiment.Client(datafile=text, state_dir=str(tmp_path),
                           cmab_prediction_endpoint=server.url("/predict/{rule_id}")) as client:
        decision = client.decide("user-1", "flag_cmab", {"country": "nl"})
    assert decision.variation_key == "a"
    assert server.paths == ["/predict/3001%2F..%2F..%2Fadmin%3Fx%3D%23y%20z%0D%0A"]


def test_control_characters_in_logged_datafile_text_are_escaped(datafile_text, caplog):
    """A validator warning quotes a stale audience id from the datafile: its CR/LF reach the log escaped."""
    datafile = json.loads(datafile_text)
    forged = "404\r\nlibexperiment [error] forged line\x1b[31m"
    datafile["experiments"][0]["audienceIds"] = [forged]
    logger = logging.getLogger("test.url.escaping")
    with caplog.at_level(logging.DEBUG, logger="test.url.escaping"):
        client = experiment.Client(logger=logger, log_level="debug")
        client.start(json.dumps(datafile))
        client.close()
    lines = [record.getMessage() for record in caplog.records if "forged line" in record.getMessage()]
    assert lines, [record.getMessage() for record in caplog.records]
    for line in lines:
        assert "\r" not in line and "\n" not in line and "\x1b" not in line
        assert "404\\r\\nlibexperiment [error] forged line\\x1b[31m" in line
