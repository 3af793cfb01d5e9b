"""A tiny local stand-in for the ODP APIs, for tests and the C example: answers the segments GraphQL
query at /v3/graphql and accepts event batches at /v3/events, recording every request.

Run standalone: ``python3 tests/odp/odp_server.py [--url-file F] [--record F] [--qualify USER=SEG,...]`` prints
``http://127.0.0.1:<port>`` (a free port) and serves until killed. Users (the ``userId`` variable): ``invalid-*`` get ODP's invalid-identifier error,
``error-500`` an HTTP 500, ``malformed`` a body that is not JSON; every other user qualifies for the
segments in ``ODPServer.qualified`` (default: every segment whose name starts with ``seg``)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional, Set

API_KEY = "test-api-key"


class ODPServer:
    def __init__(self, api_key: str = API_KEY, record_path: Optional[str] = None) -> None:
        self.api_key = api_key
        self.record = open(record_path, "a") if record_path else None
        self.requests: List[Dict[str, Any]] = []
        self.qualified: Dict[str, Set[str]] = {}
        self.events_status = 202
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length)
                record = {"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                          "body": body}
                with server.lock:
                    server.requests.append(record)
                    if server.record:  # written before answering: a client that saw the answer finds it
                        server.record.write(json.dumps({"path": self.path, "body": body.decode("utf-8")}) + "\n")
                        server.record.flush()
                if record["headers"].get("x-api-key") != server.api_key:
                    return self.answer(401, b'{"title":"Unauthorized"}')
                if self.path == "/v3/graphql":
                    return self.answer(*server.graphql(body))
                if self.path == "/v3/events":
                    return self.answer(server.events_status, b'{"title":"Accepted","status":202}')
                self.answer(404, b"{}")

            def answer(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = "http://127.0.0.1:%d" % self.port
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def start(self) -> "ODPServer":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def graphql(self, body: bytes) -> tuple:
        try:
            variables = json.loads(body)["variables"]
            user, audiences = variables["userId"], variables["audiences"]
        except (ValueError, KeyError, TypeError):
            return 400, b'{"errors":[{"message":"bad query","extensions":{"classification":"ValidationError"}}]}'
        if user.startswith("invalid"):
            return 200, json.dumps({
                "errors": [{"message": "Exception while fetching data (/customer) : could not resolve _fs_user_id = "
                            + user, "locations": [{"line": 2, "column": 3}], "path": ["customer"],
                            "extensions": {"code": "INVALID_IDENTIFIER_EXCEPTION",
                                           "classification": "DataFetchingException"}}],
                "data": {"customer": None}}).encode()
        if user == "error-500":
            return 500, b"{}"
        if user == "malformed":
            return 200, b"<html>not json"
        qualified = self.qualified.get(user)
        if qualified is None:
            qualified = {name for name in audiences if name.startswith("seg")}
        edges = [{"node": {"name": name, "state": "qualified" if name in qualified else "not_qualified"}}
                 for name in audiences]
        return 200, json.dumps({"data": {"customer": {"audiences": {"edges": edges}}}}).encode()

    def of_path(self, path: str) -> List[Dict[str, Any]]:
        with self.lock:
            return [r for r in self.requests if r["path"] == path]

    def events(self) -> List[Dict[str, Any]]:
        """Every event of every batch received, in order."""
        return [event for r in self.of_path("/v3/events") for event in json.loads(r["body"])]


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url-file", help="write the URL to this file once listening")
    parser.add_argument("--record", help="append every request as a JSON line to this file")
    parser.add_argument("--qualify", action="append", default=[], metavar="USER=SEG,SEG",
                        help="the segments USER qualifies for (default: those starting with 'seg')")
    args = parser.parse_args(argv)
    server = ODPServer(record_path=args.record)
    for entry in args.qualify:
        user, _, segments = entry.partition("=")
        server.qualified[user] = {s for s in segments.split(",") if s}
    if args.url_file:
        with open(args.url_file + ".tmp", "w") as out:
            out.write(server.url)
        os.replace(args.url_file + ".tmp", args.url_file)
    print(server.url, flush=True)
    try:
        server.httpd.serve_forever(poll_interval=0.05)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
