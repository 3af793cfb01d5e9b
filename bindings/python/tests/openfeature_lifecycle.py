"""The OpenFeature provider's lifecycle in SDK-key mode, against a datafile server on 127.0.0.1, observed only
through openfeature-sdk's own API (api.set_provider, api.add_handler, client.get_provider_status).

Run by tests/test_openfeature_lifecycle.py once per openfeature-sdk version the binding declares (the oldest
and the newest), each from its own install directory on PYTHONPATH:

    PYTHONPATH=<openfeature-sdk dir>:bindings/python python3 bindings/python/tests/openfeature_lifecycle.py

Works with every openfeature-sdk from 0.8 on (set_provider_and_wait, tracking and the threaded initialize
are 0.10's; neither is used). Prints one line per step and "lifecycle: OK" at the end; any failure is an
AssertionError (exit status 1).
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional, Tuple

from openfeature import api
from openfeature.evaluation_context import EvaluationContext
from openfeature.event import EventDetails, ProviderEvent
from openfeature.exception import ErrorCode
from openfeature.provider import ProviderStatus

from experiment.openfeature import PROVIDER_NAME, ExperimentProvider

HERE = os.path.dirname(os.path.abspath(__file__))
DEMO = os.path.join(HERE, "..", "..", "..", "examples", "datafiles", "demo.json")
WAIT_S = 10.0
SDK_KEY = "lifecycle-key"


def datafile(revision: str, banner: str = "Free shipping") -> bytes:
    """The demo datafile with `revision`, and free_shipping's banner_text default set to `banner`."""
    with open(DEMO, encoding="utf-8") as handle:
        d = json.load(handle)
    d["revision"] = revision
    for flag in d["featureFlags"]:
        if flag["key"] == "free_shipping":
            for variable in flag["variables"]:
                if variable["key"] == "banner_text":
                    variable["defaultValue"] = banner
    return json.dumps(d).encode()


class DatafileServer:
    """Serves one body at /datafiles/<SDK_KEY>.json with an ETag (304 on a match), or fails with 500."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.body: Optional[bytes] = None    # None: 500
        self.requests = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                with server.lock:
                    server.requests += 1
                    body = server.body
                if body is None or self.path != "/datafiles/%s.json" % SDK_KEY:
                    self.send_response(500 if body is None else 404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                etag = '"%x"' % (hash(body) & 0xFFFFFFFF)
                if self.headers.get("If-None-Match") == etag:
                    self.send_response(304)
                    self.send_header("ETag", etag)
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("ETag", etag)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def template(self) -> str:
        return "http://127.0.0.1:%d/datafiles/{sdk_key}.json" % self.httpd.server_address[1]

    def serve(self, body: Optional[bytes]) -> None:
        with self.lock:
            self.body = body

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class Events:
    """Every provider event of this provider, in order, through api.add_handler (the SDK's event API)."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.seen: List[Tuple[ProviderEvent, EventDetails]] = []
        for event in ProviderEvent:
            api.add_handler(event, self._handler(event))

    def _handler(self, event: ProviderEvent) -> Any:
        def handle(details: EventDetails) -> None:
            if details.provider_name != PROVIDER_NAME:
                return  # e.g. the no-op provider's
            with self.cond:
                self.seen.append((event, details))
                self.cond.notify_all()
        return handle

    def wait_for(self, event: ProviderEvent, after: int, what: str) -> Tuple[int, EventDetails]:
        """The first `event` at index >= `after` (its index and details), waiting for it."""
        def find() -> Optional[Tuple[int, EventDetails]]:
            for index in range(after, len(self.seen)):
                if self.seen[index][0] is event:
                    return index, self.seen[index][1]
            return None
        with self.cond:
            found = self.cond.wait_for(find, WAIT_S)
            assert found, "%s: no %s after event %d; events: %s" % (what, event.value, after, self.names())
            return found

    def names(self) -> List[str]:
        return [event.value.replace("PROVIDER_", "") for event, _ in self.seen]

    def count(self) -> int:
        with self.cond:
            return len(self.seen)


def banner(flags: Any) -> Any:
    return flags.get_string_details("free_shipping.banner_text", "default",
                                    EvaluationContext(targeting_key="user-1", attributes={"country": "NL"}))


def served(flags: Any, provider: ExperimentProvider) -> str:
    """The revision the provider evaluates with, checking that an evaluation through the SDK works."""
    details = banner(flags)
    assert details.error_code is None and details.value != "default", details
    return str(provider.client.config["revision"])


def wait_status(flags: Any, status: ProviderStatus, what: str) -> None:
    """The SDK's status for the provider reaches `status` (events may be delivered on the SDK's threads)."""
    cond = threading.Condition()
    with cond:
        cond.wait_for(lambda: flags.get_provider_status() == status, WAIT_S)
    assert flags.get_provider_status() == status, "%s: SDK status %s, expected %s" % (
        what, flags.get_provider_status(), status)


def step(text: str) -> None:
    print("  " + text, flush=True)


def main() -> None:
    import openfeature.version as ofv  # type: ignore[import-not-found,unused-ignore]
    print("openfeature-sdk %s" % getattr(ofv, "__version__", "?"))
    state = tempfile.mkdtemp(prefix="of-lifecycle.")
    server = DatafileServer()
    options: Dict[str, Any] = dict(
        sdk_key=SDK_KEY, datafile_url_template=server.template, polling_interval_s=10, retry_count=0,
        request_timeout_ms=2000, state_dir=state, event_endpoint="none", profile_store="none",
        default_decide_options=["DISABLE_DECISION_EVENT"])
    try:
        api.shutdown()
        events = Events()
        flags = api.get_client()

        # 1. Nothing to serve: the server fails, no cache, no bundled datafile -> ERROR, evaluations answer
        #    PROVIDER_NOT_READY with the default value.
        provider = ExperimentProvider(**options)
        api.set_provider(provider)
        index, error = events.wait_for(ProviderEvent.PROVIDER_ERROR, 0, "no datafile")
        wait_status(flags, ProviderStatus.ERROR, "no datafile")
        assert provider.status == ProviderStatus.ERROR
        details = banner(flags)
        assert details.value == "default" and details.error_code == ErrorCode.PROVIDER_NOT_READY, details
        step("no datafile anywhere: ERROR (%s)" % error.message)

        # 2. Polling brings the first datafile: READY, then CONFIGURATION_CHANGED; evaluations work.
        server.serve(datafile("1", "Rev one"))
        index, ready = events.wait_for(ProviderEvent.PROVIDER_READY, index + 1, "first datafile")
        assert ready.metadata == {"revision": "1"}, ready
        index, changed = events.wait_for(ProviderEvent.PROVIDER_CONFIGURATION_CHANGED, index + 1, "first datafile")
        assert changed.metadata == {"revision": "1"} and "free_shipping" in (changed.flags_changed or []), changed
        wait_status(flags, ProviderStatus.READY, "first datafile")
        assert served(flags, provider) == "1"
        step("datafile fetched by a poll: READY, CONFIGURATION_CHANGED (revision 1)")

        # 3. The server fails: the last good datafile is served, STALE.
        server.serve(None)
        index, stale = events.wait_for(ProviderEvent.PROVIDER_STALE, index + 1, "server failing")
        wait_status(flags, ProviderStatus.STALE, "server failing")
        assert provider.status == ProviderStatus.STALE
        assert served(flags, provider) == "1"
        step("server failing: STALE (%s), still serving revision 1" % stale.message)

        # 4. A new revision by polling: READY again, then CONFIGURATION_CHANGED.
        server.serve(datafile("2", "Rev two"))
        index, ready = events.wait_for(ProviderEvent.PROVIDER_READY, index + 1, "revision 2")
        assert ready.metadata == {"revision": "2"}, ready
        index, changed = events.wait_for(ProviderEvent.PROVIDER_CONFIGURATION_CHANGED, index + 1, "revision 2")
        assert changed.metadata == {"revision": "2"}, changed
        wait_status(flags, ProviderStatus.READY, "revision 2")
        assert served(flags, provider) == "2"
        step("new revision by a poll: READY, CONFIGURATION_CHANGED (revision 2)")

        # 5. A datafile the library rejects: STALE with PARSE_ERROR; then a refresh with the same good
        #    revision (nothing changed) makes it READY without CONFIGURATION_CHANGED.
        server.serve(b"{not json")
        index, stale = events.wait_for(ProviderEvent.PROVIDER_STALE, index + 1, "rejected datafile")
        assert stale.error_code == ErrorCode.PARSE_ERROR, stale
        wait_status(flags, ProviderStatus.STALE, "rejected datafile")
        assert served(flags, provider) == "2"
        server.serve(datafile("2", "Rev two"))
        index, ready = events.wait_for(ProviderEvent.PROVIDER_READY, index + 1, "same revision again")
        wait_status(flags, ProviderStatus.READY, "same revision again")
        assert [e for e, _ in events.seen[index:]].count(ProviderEvent.PROVIDER_CONFIGURATION_CHANGED) == 0
        step("rejected datafile: STALE (PARSE_ERROR); good one again: READY, no CONFIGURATION_CHANGED")

        # 6. A revision brought by something else than a poll (Client.start on the provider's client).
        provider.client.start(datafile("3", "Rev three"))
        index, changed = events.wait_for(ProviderEvent.PROVIDER_CONFIGURATION_CHANGED, index + 1, "Client.start")
        assert changed.metadata == {"revision": "3"} and served(flags, provider) == "3"
        step("revision from Client.start: CONFIGURATION_CHANGED (revision 3)")
        api.shutdown()

        # 7. A new provider on the same state directory while the server fails: READY from the cache (the
        #    last fetched datafile, revision 2), then STALE on the next failed poll.
        server.serve(None)
        events = Events()
        flags = api.get_client()
        cached = ExperimentProvider(ready_timeout_s=WAIT_S, **options)
        api.set_provider(cached)
        index, ready = events.wait_for(ProviderEvent.PROVIDER_READY, 0, "from the cache")
        # The failed fetch may follow at once (how soon depends on the machine's load): READY comes first,
        # then STALE, and the cached revision is served throughout.
        index, _ = events.wait_for(ProviderEvent.PROVIDER_STALE, index + 1, "cache, server failing")
        wait_status(flags, ProviderStatus.STALE, "cache, server failing")
        assert served(flags, cached) == "2"
        assert ProviderEvent.PROVIDER_ERROR not in [e for e, _ in events.seen], events.names()
        step("from the cache with the server failing: READY, then STALE on the next poll")
        api.shutdown()

        # 8. SDK key with a bundled datafile, another key (no cache), server failing: READY from the bundle,
        #    STALE after the failed fetch.
        events = Events()
        flags = api.get_client()
        bundled_options = dict(options, sdk_key="other-key", state_dir=tempfile.mkdtemp(prefix="of-bundle."))
        bundled = ExperimentProvider(datafile=datafile("9", "Bundled"), ready_timeout_s=WAIT_S, **bundled_options)
        api.set_provider(bundled)
        ready_index, _ = events.wait_for(ProviderEvent.PROVIDER_READY, 0, "bundled")
        # The start's background fetch of "other-key" fails at once: the bundle stays in place, first READY,
        # then (as in step 3) STALE once that update has failed -- how soon depends on the machine's load.
        events.wait_for(ProviderEvent.PROVIDER_STALE, ready_index + 1, "bundled, fetch failed")
        wait_status(flags, ProviderStatus.STALE, "bundled, fetch failed")
        assert served(flags, bundled) == "9"
        assert ProviderEvent.PROVIDER_ERROR not in [e for e, _ in events.seen], events.names()
        step("bundled datafile with the server failing: READY, then STALE, never ERROR")
        api.shutdown()
        print("lifecycle: OK (%d datafile requests)" % server.requests)
    finally:
        server.close()


if __name__ == "__main__":
    try:
        main()
    except AssertionError as failure:
        print("lifecycle: FAILED: %s" % failure)
        sys.exit(1)
