"""A real event endpoint on 127.0.0.1 for the event pipeline tests: a threaded HTTP server that records
every batch it acknowledges and can misbehave on purpose (fail a share of requests, stall past the
client's timeout, refuse some payloads with 400, stall the payloads holding a marker, go down and come
back on the same port), and records how many requests it was serving at once."""

from __future__ import annotations

import http.server
import json
import random
import socket
import struct
import threading
import time
from typing import Any, Callable, Dict, List, Optional


class EventServer:
    def __init__(self, port: int = 0) -> None:
        self.lock = threading.Lock()
        #: every request body received, acknowledged or not, with the status answered
        self.requests: List[Dict[str, Any]] = []
        #: acknowledged (2xx) batches, parsed
        self.batches: List[dict] = []
        #: share of requests answered 500 (decided by a seeded generator: deterministic per run)
        self.failure_rate = 0.0
        #: share of requests that stall `stall_s` before answering 200 (past the client's timeout)
        self.stall_rate = 0.0
        self.stall_s = 0.0
        #: a body containing this text is refused with 400
        self.poison_marker: Optional[str] = None
        #: a body containing this text stalls `stall_s` before its 200
        self.stall_marker: Optional[str] = None
        #: every request waits this long before its answer (so concurrent requests overlap)
        self.delay_s = 0.0
        #: every request body as it arrived, before any stall or answer
        self.started: List[bytes] = []
        #: requests being answered now, and the most at once
        self.in_flight = 0
        self.max_in_flight = 0
        #: this many next requests get their connection reset after half the body was read
        self.resets = 0
        #: answers 200 without recording (a benchmark sink): counts visitors only
        self.count_only = False
        self.visitor_count = 0
        self.random = random.Random(1234)
        self._server: Optional[http.server.ThreadingHTTPServer] = None
        self._thread: Optional[threading.Thread] = None
        self.port = port
        self.start()

    @property
    def url(self) -> str:
        return "http://127.0.0.1:%d/v1/events" % self.port

    def start(self) -> None:
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                if owner._take_reset():
                    self.rfile.read(length // 2)
                    # SO_LINGER 0: close() sends a TCP reset instead of a clean end.
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    self.connection.close()
                    self.close_connection = True
                    with owner.lock:
                        owner.requests.append({"status": "reset", "body": b"", "content_type": None})
                    return
                body = self.rfile.read(length)
                status = owner._answer(body, self.headers.get("Content-Type"))
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *_args: Any) -> None:
                pass

        http.server.ThreadingHTTPServer.allow_reuse_address = True
        server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        server.daemon_threads = True
        self.port = server.server_address[1]
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Goes down: the port refuses connections until start()."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def _take_reset(self) -> bool:
        with self.lock:
            if self.resets > 0:
                self.resets -= 1
                return True
            return False

    def _answer(self, body: bytes, content_type: Optional[str]) -> int:
        with self.lock:
            self.started.append(body)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return self._answer_one(body, content_type)
        finally:
            with self.lock:
                self.in_flight -= 1

    def _answer_one(self, body: bytes, content_type: Optional[str]) -> int:
        if self.delay_s:
            time.sleep(self.delay_s)
        if self.count_only:
            with self.lock:
                self.visitor_count += body.count(b'"visitor_id"')
            return 200
        with self.lock:
            roll = self.random.random()
        if self.poison_marker is not None and self.poison_marker.encode() in body:
            status = 400
        elif self.stall_marker is not None and self.stall_marker.encode() in body:
            time.sleep(self.stall_s)
            status = 200
        elif roll < self.failure_rate:
            status = 500
        elif roll < self.failure_rate + self.stall_rate:
            time.sleep(self.stall_s)
            status = 200
        else:
            status = 204
        with self.lock:
            self.requests.append({"status": status, "body": body, "content_type": content_type})
            if 200 <= status < 300:
                self.batches.append(json.loads(body))
        return status

    # -- what arrived ------------------------------------------------------------------------------

    def events(self) -> List[dict]:
        """Every event of every acknowledged batch, with its visitor id, in arrival order."""
        with self.lock:
            batches = list(self.batches)
        out = []
        for batch in batches:
            for visitor in batch["visitors"]:
                for snapshot in visitor["snapshots"]:
                    for event in snapshot["events"]:
                        out.append(dict(event, visitor_id=visitor["visitor_id"]))
        return out

    def wait_for(self, predicate: Callable[[], bool], timeout_s: float = 20.0) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if predicate():
                return True
            time.sleep(0.02)
        return predicate()


def closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on (connections are refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
