"""Datafile lifecycle through the real library against a real HTTP server on 127.0.0.1 started here:
asynchronous start, readiness, the SQLite cache, bundled fallback, conditional requests, retries, polling,
the cache-TTL mode, bearer tokens, hot swaps (and what is refused), listeners, tags and close.

Time: EXPERIMENT_TEST_SECOND_MS=50 (set before any client starts a manager) makes each second of
polling_interval_s and cache_ttl_s last 50 ms, so the 10 s minimum polls every 0.5 s here.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Optional

import pytest

os.environ.setdefault("EXPERIMENT_TEST_SECOND_MS", "50")
SECOND_MS = int(os.environ["EXPERIMENT_TEST_SECOND_MS"])

import experiment  # noqa: E402
from conftest import SDK_NOT_READY, assert_error_decision, nested_json, raises  # noqa: E402

ERR_NOT_READY = -6
ERR_INVALID_JSON = -2
ERR_INVALID_DATAFILE = -4
ERR_INVALID_UTF8 = -13
ERR_TOO_LARGE = -14
ERR_TOO_DEEP = -15
ERR_TAG_IN_USE = -20
ERR_FETCH_FAILED = -26
ERR_NOT_FOUND = -27


# ------------------------------------------------------------------------------------------------
# A datafile server
# ------------------------------------------------------------------------------------------------

class Answer:
    """How the server answers one path: a body (with an ETag unless told otherwise), or a status."""

    def __init__(self, body: bytes = b"", status: int = 200, etag: Optional[str] = "auto",
                 last_modified: Optional[str] = None, delay_s: float = 0.0) -> None:
        self.body = body
        self.status = status
        self.etag = ('"%x"' % (hash(body) & 0xFFFFFFFF)) if etag == "auto" else etag
        self.last_modified = last_modified
        self.delay_s = delay_s


class DatafileServer:
    """A threaded HTTP server: per path, a queue of one-shot answers, then a standing answer. Honors
    If-None-Match / If-Modified-Since with 304, can demand a bearer token, records every request."""

    def __init__(self) -> None:
        self.standing: Dict[str, Answer] = {}
        self.queued: Dict[str, List[Answer]] = {}
        self.requests: List[Dict[str, Any]] = []
        self.token: Optional[str] = None
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                headers = {k.lower(): v for k, v in self.headers.items()}
                with server.lock:
                    server.requests.append({"path": self.path, "headers": headers})
                    queue = server.queued.get(self.path)
                    answer = queue.pop(0) if queue else server.standing.get(self.path)
                    token = server.token
                if answer is None:
                    return self._send(404, b"no such datafile")
                if answer.delay_s:
                    time.sleep(answer.delay_s)
                if token is not None and headers.get("authorization") != "Bearer " + token:
                    return self._send(401, b"unauthorized")
                if answer.status != 200:
                    return self._send(answer.status, b"server error")
                if answer.etag and headers.get("if-none-match") == answer.etag:
                    return self._send(304, b"")
                if answer.last_modified and headers.get("if-modified-since") == answer.last_modified:
                    return self._send(304, b"")
                extra = {}
                if answer.etag:
                    extra["ETag"] = answer.etag
                if answer.last_modified:
                    extra["Last-Modified"] = answer.last_modified
                self._send(200, answer.body, extra)

            def _send(self, status: int, body: bytes, extra: Optional[Dict[str, str]] = None) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    if status != 304:
                        self.send_header("Content-Length", str(len(body)))
                    for name, value in (extra or {}).items():
                        self.send_header(name, value)
                    self.end_headers()
                    if status != 304:
                        self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
                    pass

            def log_message(self, *_args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def template(self) -> str:
        return "http://127.0.0.1:%d/datafiles/{sdk_key}.json" % self.port

    def serve(self, sdk_key: str, answer: Answer) -> None:
        with self.lock:
            self.standing["/datafiles/%s.json" % sdk_key] = answer

    def queue(self, sdk_key: str, *answers: Answer) -> None:
        with self.lock:
            self.queued.setdefault("/datafiles/%s.json" % sdk_key, []).extend(answers)

    def count(self, sdk_key: str) -> int:
        with self.lock:
            return sum(1 for r in self.requests if r["path"] == "/datafiles/%s.json" % sdk_key)

    def last_headers(self) -> Dict[str, str]:
        with self.lock:
            return self.requests[-1]["headers"]

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture()
def server():
    s = DatafileServer()
    yield s
    s.stop()


@pytest.fixture()
def revision(datafile_text: str) -> Callable[..., bytes]:
    """revision("7") -> the demo datafile as bytes with that revision (and optionally another project)."""
    def make(rev: str, project_id: Optional[str] = None, padding: int = 0) -> bytes:
        d = json.loads(datafile_text)
        d["revision"] = rev
        if project_id is not None:
            d["projectId"] = project_id
        text = json.dumps(d)
        if padding:  # an unknown top-level member pads the document (readers ignore unknown members)
            text = text[:-1] + ', "padding": "' + "x" * padding + '"}'
        return text.encode("utf-8")
    return make


_keys = iter(range(1_000_000))


def new_key() -> str:
    """SDK keys are unique per test: the cache is per key, and so are the server's paths."""
    return "key-%d-%d" % (os.getpid(), next(_keys))


def make_client(server: DatafileServer, state_dir: Any, sdk_key: str, **options: Any) -> experiment.Client:
    options.setdefault("polling_interval_s", 0)
    options.setdefault("retry_count", 0)
    options.setdefault("request_timeout_ms", 2000)
    options.setdefault("start", "async")
    return experiment.Client(sdk_key=sdk_key, datafile_url_template=server.template(), state_dir=str(state_dir),
                             **options)


class Listener:
    def __init__(self) -> None:
        self.payloads: List[dict] = []
        self.lock = threading.Lock()
        self.event = threading.Event()

    def __call__(self, payload: dict) -> None:
        with self.lock:
            self.payloads.append(payload)
        self.event.set()

    def revisions(self) -> List[str]:
        with self.lock:
            return [p["revision"] for p in self.payloads]


def wait_for(predicate: Callable[[], bool], timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


def cached_revision(state_dir: Any, sdk_key: str) -> Optional[str]:
    with sqlite3.connect(os.path.join(str(state_dir), "state.sqlite")) as db:
        row = db.execute("SELECT revision FROM datafile_cache WHERE sdk_key = ?", (sdk_key,)).fetchone()
    return row[0] if row else None


# ------------------------------------------------------------------------------------------------
# Asynchronous start, readiness, cache, fallback
# ------------------------------------------------------------------------------------------------

def test_async_start_fetches_from_the_template_url_and_calls_back_once(server, revision, tmp_path):
    key = new_key()
    server.serve(key, Answer(revision("1")))
    outcomes: List[Any] = []
    with make_client(server, tmp_path, key, on_ready=outcomes.append) as client:
        assert client.wait_ready(5)
        assert wait_for(lambda: len(outcomes) == 1)
        assert outcomes == [None]
        assert client.config["revision"] == "1"
        assert client.decide("u2", "checkout_flow", {"country": "NL", "age": 30}).variation_key == "control"
        status = client.datafile_status()
        assert status["source"] == "fetch" and status["ready"] and status["fetches"] == 1
        assert server.requests[0]["path"] == "/datafiles/%s.json" % key
        assert cached_revision(tmp_path, key) == "1"
    assert len(outcomes) == 1


def test_calls_before_ready_raise_not_ready_and_wait_ready_times_out(server, revision, tmp_path):
    key = new_key()
    server.serve(key, Answer(revision("1"), delay_s=0.6))
    with make_client(server, tmp_path, key) as client:
        assert_error_decision(client.decide("u1", "checkout_flow"), "checkout_flow", SDK_NOT_READY)
        assert client.ready is False
        assert client.wait_ready(0.05) is False
        assert client.wait_ready(0) is False
        assert client.wait_ready(5) is True
        assert client.decide("u1", "checkout_flow").flag_key == "checkout_flow"


def test_next_start_uses_the_cached_datafile_when_the_server_is_down(server, revision, tmp_path):
    key = new_key()
    server.serve(key, Answer(revision("5")))
    with make_client(server, tmp_path, key) as first:
        assert first.wait_ready(5)
    assert cached_revision(tmp_path, key) == "5"
    server.stop()
    outcomes: List[Any] = []
    with make_client(server, tmp_path, key, datafile=revision("bundled"), on_ready=outcomes.append) as second:
        assert second.wait_ready(5)
        assert second.config["revision"] == "5"
        assert second.datafile_status()["source"] == "cache"
        assert wait_for(lambda: outcomes == [None])
    server.httpd = _Restartable()  # the fixture's stop() must not fail


class _Restartable:
    def shutdown(self) -> None:
        pass

    def server_close(self) -> None:
        pass


def test_unchanged_datafile_at_start_is_taken_from_the_cache_after_a_304(server, revision, tmp_path):
    key = new_key()
    server.serve(key, Answer(revision("8")))
    with make_client(server, tmp_path, key) as first:
        assert first.wait_ready(5)
    with make_client(server, tmp_path, key) as second:
        assert second.wait_ready(5)
        assert server.last_headers().get("if-none-match") == server.standing["/datafiles/%s.json" % key].etag
        assert second.config["revision"] == "8"
        assert second.datafile_status()["source"] == "cache"


def test_bundled_fallback_when_fetch_fails_and_nothing_is_cached(server, revision, tmp_path):
    key = new_key()
    server.serve(key, Answer(status=500))
    outcomes: List[Any] = []
    with make_client(server, tmp_path, key, datafile=revision("bundled"), on_ready=outcomes.append) as client:
        assert client.wait_ready(5)
        assert client.config["revision"] == "bundled"
        assert client.datafile_status()["source"] == "bundled"
        assert wait_for(lambda: outcomes == [None])
        assert cached_revision(tmp_path, key) is None  # only fetched datafiles are cached


def test_fetch_timeout_falls_back_without_waiting_for_the_server(server, revision, tmp_path):
    key = new_key()
    server.serve(key, Answer(revision("slow"), delay_s=3))
    with make_client(server, tmp_path, key, request_timeout_ms=200, datafile=revision("bundled")) as client:
        assert client.wait_ready(2.5)
        assert client.config["revision"] == "bundled"
        assert "timed out" in client.datafile_status()["last_error"].lower() or \
            "timeout" in client.datafile_status()["last_error"].lower()


def test_start_with_nothing_to_use_reports_the_failure(server, tmp_path):
    key = new_key()
    server.serve(key, Answer(status=500))
    outcomes: List[Any] = []
    with make_client(server, tmp_path, key, on_ready=outcomes.append) as client:
        started = time.monotonic()
        assert client.wait_ready(10) is False  # answered when the start gave up, not after 10 s
        assert time.monotonic() - started < 8
        assert "HTTP 500" in client.datafile_status()["last_error"]
        assert client.datafile_status()["last_error_code"] == ERR_FETCH_FAILED
        from experiment._native import lib
        assert lib.exp_client_wait_ready(client._h, 1000) == ERR_FETCH_FAILED  # the C call names the reason
        assert wait_for(lambda: len(outcomes) == 1)
        assert isinstance(outcomes[0], experiment.FetchFailedError)
        assert_error_decision(client.decide("u1", "checkout_flow"), "checkout_flow", SDK_NOT_READY)
        # A later successful fetch still makes the client ready.
        server.serve(key, Answer(b"", status=200, etag=None))  # an empty body: rejected
        with pytest.raises(experiment.InvalidJSONError):
            client.refresh()
        assert client.ready is False


def test_start_async_errors(server, datafile_text, tmp_path):
    with experiment.Client(state_dir=str(tmp_path)) as no_key:
        raises(experiment.InvalidOptionError, -3, r"sdk_key", no_key.start_async)
    with make_client(server, tmp_path, new_key(), start="none") as client:
        with pytest.raises(TypeError):
            client.start_async(on_ready=42)
        raises(experiment.NotReadyError, ERR_NOT_READY, r"start_async", client.refresh)
        client.start_async(fallback=datafile_text)
        raises(experiment.InvalidArgumentError, -1, r"already", client.start_async)
        assert client.wait_ready(5)


# ------------------------------------------------------------------------------------------------
# Refresh, conditional requests, retries, token, polling, TTL
# ------------------------------------------------------------------------------------------------

def test_conditional_requests_answered_304_change_nothing(server, revision, tmp_path):
    key = new_key()
    server.serve(key, Answer(revision("1"), last_modified="Sun, 22 Nov 2026 01:00:00 GMT"))
    listener = Listener()
    with make_client(server, tmp_path, key, start="none") as client:
        client.add_listener("config_update", listener)
        client.start_async()
        assert client.wait_ready(5)
        client.refresh()
        headers = server.last_headers()
        assert headers["if-none-match"] == server.standing["/datafiles/%s.json" % key].etag
        assert headers["if-modified-since"] == "Sun, 22 Nov 2026 01:00:00 GMT"
        status = client.datafile_status()
        assert status["not_modified"] == 1 and status["updates"] == 1
        # wait_ready returns once the start's listeners have run (as the reference sets its ready event
        # after notifying), and the refresh notifies before it returns: a 304 notifies nothing.
        assert listener.revisions() == ["1"], listener.revisions()


def test_wait_ready_returns_after_the_first_datafiles_listeners_ran(server, revision, tmp_path):
    key = new_key()
    server.serve(key, Answer(revision("1")))
    entered = threading.Event()
    released = threading.Event()
    seen = []

    def slow_listener(payload):
        entered.set()
        released.wait(5)
        seen.append(payload["revision"])

    with make_client(server, tmp_path, key, start="none") as client:
        client.add_listener("config_update", slow_listener)
        client.start_async()
        assert entered.wait(5)
        # The datafile is in use, but its listener has not finished: not ready yet.
        assert not client.wait_ready(0.2)
        released.set()
        assert client.wait_ready(5)
        assert seen == ["1"]


def test_last_modified_alone_is_sent_back(server, revision, tmp_path):
    key = new_key()
    server.serve(key, Answer(revision("1"), etag=None, last_modified="Mon, 23 Nov 2026 02:00:00 GMT"))
    with make_client(server, tmp_path, key) as client:
        assert client.wait_ready(5)
        client.refresh()
        assert "if-none-match" not in server.last_headers()
        assert server.last_headers()["if-modified-since"] == "Mon, 23 Nov 2026 02:00:00 GMT"
        assert client.datafile_status()["not_modified"] == 1


def test_retries_with_backoff_then_success(server, revision, tmp_path):
    key = new_key()
    server.serve(key, Answer(revision("1")))
    with make_client(server, tmp_path, key, retry_count=3) as client:
        assert client.wait_ready(5)
        before = server.count(key)
        server.queue(key, Answer(status=500), Answer(status=503))
        server.serve(key, Answer(revision("2")))
        started = time.monotonic()
        client.refresh()
        elapsed = time.monotonic() - started
        assert server.count(key) - before == 3
        assert client.config["revision"] == "2"
        assert elapsed >= 0.55  # back-off 200 ms + 400 ms happened (a lower bound, not a speed assertion)


def test_retry_count_bounds_the_attempts(server, revision, tmp_path):
    key = new_key()
    server.serve(key, Answer(revision("1")))
    with make_client(server, tmp_path, key, retry_count=1) as client:
        assert client.wait_ready(5)
        before = server.count(key)
        server.serve(key, Answer(status=500))
        raises(experiment.FetchFailedError, ERR_FETCH_FAILED, r"HTTP 500.*2 attempts", client.refresh)
        assert server.count(key) - before == 2
        assert client.config["revision"] == "1"
        server.serve(key, Answer(status=404))  # not retried: a missing datafile does not come back by retrying
        before = server.count(key)
        raises(experiment.FetchFailedError, ERR_FETCH_FAILED, r"HTTP 404", client.refresh)
        assert server.count(key) - before == 1


def test_access_token_is_sent_as_bearer_and_never_logged(server, revision, tmp_path, caplog):
    key = new_key()
    token = "s3cret-token-abcdefgh-123456"
    server.token = token
    server.serve(key, Answer(revision("1")))
    logger = logging.getLogger("test.datafile.token")
    with caplog.at_level(logging.DEBUG, logger="test.datafile.token"):
        with make_client(server, tmp_path, key, datafile_access_token=token, log_level="debug",
                         logger=logger) as client:
            assert client.wait_ready(5)
            assert server.last_headers()["authorization"] == "Bearer " + token
        anonymous_key = new_key()
        server.serve(anonymous_key, Answer(revision("1")))
        with make_client(server, tmp_path, anonymous_key, log_level="debug", logger=logger) as anonymous:
            assert anonymous.wait_ready(5) is False
            assert "HTTP 401" in anonymous.datafile_status()["last_error"]
    assert caplog.records, "expected debug/info messages"
    assert all(token not in r.getMessage() for r in caplog.records)
    assert all(key not in r.getMessage() for r in caplog.records)  # the SDK key is redacted too


def test_polling_picks_up_each_new_revision_once(server, revision, tmp_path):
    key = new_key()
    server.serve(key, Answer(revision("1")))
    listener = Listener()
    with make_client(server, tmp_path, key, polling_interval_s=10, start="none") as client:
        client.add_listener("config_update", listener)
        client.start_async()
        assert client.wait_ready(5)
        assert client.datafile_status()["polling_interval_ms"] == 10 * SECOND_MS
        server.serve(key, Answer(revision("2")))
        assert wait_for(lambda: client.config["revision"] == "2")
        assert wait_for(lambda: cached_revision(tmp_path, key) == "2")
        # The same revision again under a new ETag is swapped in quietly: no second notification.
        server.serve(key, Answer(revision("2") + b" ", etag='"other"'))
        assert wait_for(lambda: server.last_headers().get("if-none-match") == '"other"', 5)
        server.serve(key, Answer(revision("3")))
        assert wait_for(lambda: client.config["revision"] == "3")
        # Listeners hear of a swap right after it (outside the manager's lock): wait for the third.
        assert wait_for(lambda: len(listener.revisions()) >= 3)
        time.sleep(3 * 10 * SECOND_MS / 1000)  # three more polls: 304s, no further notification
        payloads = list(listener.payloads)
    assert [p["revision"] for p in payloads] == ["1", "2", "3"]
    assert [p["source"] for p in payloads] == ["fetch", "fetch", "fetch"]
    assert payloads[1]["previous_revision"] == "1" and payloads[1]["project_id"] == "20001"
    assert payloads[1]["sdk_key"] == key


def test_polling_interval_under_ten_seconds_is_raised_with_a_warning(server, revision, tmp_path, caplog):
    key = new_key()
    server.serve(key, Answer(revision("1")))
    with caplog.at_level(logging.WARNING, logger="experiment"):
        with make_client(server, tmp_path, key, polling_interval_s=3) as client:
            assert client.wait_ready(5)
            assert client.datafile_status()["polling_interval_ms"] == 10 * SECOND_MS
    assert any("polling_interval_s 3" in r.getMessage() for r in caplog.records)


def test_no_polling_when_interval_is_zero(server, revision, tmp_path):
    key = new_key()
    server.serve(key, Answer(revision("1")))
    with make_client(server, tmp_path, key, polling_interval_s=0) as client:
        assert client.wait_ready(5)
        assert client.datafile_status()["polling_interval_ms"] is None
        time.sleep(30 * SECOND_MS / 1000)
        assert server.count(key) == 1


def test_cache_ttl_mode_refreshes_on_use_not_on_a_timer(server, revision, tmp_path):
    key = new_key()
    server.serve(key, Answer(revision("1")))
    with make_client(server, tmp_path, key, cache_ttl_s=10) as client:
        assert client.wait_ready(5)
        assert client.datafile_status()["cache_ttl_ms"] == 10 * SECOND_MS
        server.serve(key, Answer(revision("2")))
        time.sleep(25 * SECOND_MS / 1000)  # well past the TTL, and nobody used the client
        assert server.count(key) == 1
        assert client.config["revision"] == "1"
        # A decision on the stale datafile answers at once (from revision 1) and wakes a refresh.
        client.decide("u1", "checkout_flow")
        assert wait_for(lambda: client.config["revision"] == "2")
        assert server.count(key) == 2


# ------------------------------------------------------------------------------------------------
# Hot swap refusals and datafile server faults
# ------------------------------------------------------------------------------------------------

def test_another_projects_datafile_is_rejected(server, revision, tmp_path):
    key = new_key()
    server.serve(key, Answer(revision("1")))
    with make_client(server, tmp_path, key) as client:
        assert client.wait_ready(5)
        server.serve(key, Answer(revision("2", project_id="99999")))
        raises(experiment.InvalidDatafileError, ERR_INVALID_DATAFILE, r"project 99999.*20001", client.refresh)
        assert client.config["revision"] == "1"
        assert client.datafile_status()["rejected"] == 1
        assert cached_revision(tmp_path, key) == "1"


FAULTS = [
    ("malformed", lambda rev: b'{"version": "4", "revision": ', experiment.InvalidJSONError, ERR_INVALID_JSON,
     r"datafile"),
    ("truncated", lambda rev: rev("2")[: len(rev("2")) // 2], experiment.InvalidJSONError, ERR_INVALID_JSON,
     r"truncated|end|unexpected|incomplete"),
    ("deep", lambda rev: nested_json(10_000).encode(), experiment.TooDeepError, ERR_TOO_DEEP, r"deep|depth|nest"),
    ("invalid_utf8", lambda rev: rev("2").replace(b'"revision": "2"', b'"revision": "\xff\xfe"'),
     experiment.InvalidUTF8Error, ERR_INVALID_UTF8, r"UTF-8"),
    ("not_a_datafile", lambda rev: b'{"hello": "world"}', experiment.Error, None, r"version|datafile"),
    ("too_large", lambda rev: b"[" + b"1," * (33 << 20) + b"1]", experiment.FetchFailedError, ERR_FETCH_FAILED,
     r"larger than"),
]


@pytest.mark.parametrize("name,body,cls,code,pattern", FAULTS, ids=[f[0] for f in FAULTS])
def test_datafile_server_faults_keep_the_last_good_config(server, revision, tmp_path, name, body, cls, code,
                                                          pattern):
    key = new_key()
    server.serve(key, Answer(revision("1")))
    messages: List[str] = []

    class Capture(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            messages.append(record.getMessage())

    logger = logging.getLogger("test.datafile.faults." + name)
    logger.addHandler(Capture())
    listener = Listener()
    with make_client(server, tmp_path, key, logger=logger, start="none") as client:
        client.add_listener("config_update", listener)
        client.start_async()
        assert client.wait_ready(5)
        server.serve(key, Answer(body(revision)))
        error = raises(cls, code if code is not None else -4, pattern, client.refresh) if code is not None else None
        if code is None:
            with pytest.raises(cls):
                client.refresh()
        assert client.config["revision"] == "1"
        assert client.decide("u2", "checkout_flow", {"country": "NL", "age": 30}).variation_key == "control"
        status = client.datafile_status()
        assert status["ready"] and status["revision"] == "1"
        assert status["last_error"] and status["last_error_code"] < 0
        if error is not None:
            assert status["last_error_code"] == code
        assert cached_revision(tmp_path, key) == "1"
        # wait_ready returns once the start's listeners have run; the failed refresh notifies nothing.
        assert listener.revisions() == ["1"], listener.revisions()
    assert any("datafile" in m for m in messages), messages  # reported through the log callback


def test_a_50_mb_datafile_is_accepted(server, revision, tmp_path):
    key = new_key()
    server.serve(key, Answer(revision("1")))
    with make_client(server, tmp_path, key, request_timeout_ms=30_000) as client:
        assert client.wait_ready(5)
        big = revision("big", padding=50 << 20)
        assert len(big) > 50 << 20
        server.serve(key, Answer(big))
        client.refresh()
        assert client.config["revision"] == "big"
        assert client.decide("u2", "checkout_flow", {"country": "NL", "age": 30}).variation_key == "control"
        assert cached_revision(tmp_path, key) == "big"


# ------------------------------------------------------------------------------------------------
# Listeners on synchronous starts, tags, close
# ------------------------------------------------------------------------------------------------

def test_sync_start_notifies_only_on_a_new_revision(revision):
    listener = Listener()
    with experiment.Client() as client:
        client.add_listener("config_update", listener)
        client.start(revision("1"))
        client.start(revision("1"))
        with pytest.raises(experiment.InvalidJSONError):
            client.start(b"{bad")
        client.start(revision("2"))
        assert listener.revisions() == ["1", "2"]
        assert [p["source"] for p in listener.payloads] == ["start", "start"]
        assert listener.payloads[0]["previous_revision"] is None


def test_tags_name_one_open_client_each(datafile_text):
    with experiment.Client(datafile=datafile_text, tag="checkout") as first:
        raises(experiment.TagInUseError, ERR_TAG_IN_USE, r"checkout", experiment.Client, tag="checkout")
        assert experiment.Client.find("checkout") is first
        raises(experiment.NotFoundError, ERR_NOT_FOUND, r"nobody", experiment.Client.find, "nobody")
        with experiment.Client(tag="search") as second:
            assert experiment.Client.find("search") is second
    raises(experiment.NotFoundError, ERR_NOT_FOUND, r"checkout", experiment.Client.find, "checkout")
    with experiment.Client(datafile=datafile_text, tag="checkout") as again:
        assert experiment.Client.find("checkout") is again


def test_find_from_c_returns_a_borrowed_handle(datafile_text):
    from experiment._native import lib
    from ctypes import byref, c_void_p
    raw = c_void_p()
    assert lib.exp_client_create(b'{"tag": "from-c"}', byref(raw)) == 0
    try:
        assert lib.exp_client_start(raw, datafile_text.encode(), len(datafile_text.encode())) == 0
        found = experiment.Client.find("from-c")
        assert found.config["revision"] == json.loads(datafile_text)["revision"]
        found.close()  # detaches the borrowed wrapper only
        out = c_void_p()
        assert lib.exp_client_find(b"from-c", byref(out)) == 0 and out.value == raw.value
    finally:
        lib.exp_client_free(raw)
    raises(experiment.NotFoundError, ERR_NOT_FOUND, r"from-c", experiment.Client.find, "from-c")


def test_close_is_prompt_and_idempotent(server, revision, tmp_path, capsys):
    key = new_key()
    server.serve(key, Answer(revision("1")))
    client = make_client(server, tmp_path, key, polling_interval_s=10, tag="closing")
    assert client.wait_ready(5)
    time.sleep(0.05)
    started = time.perf_counter()
    client.close()
    elapsed_ms = (time.perf_counter() - started) * 1000
    client.close()
    with capsys.disabled():
        print("\n  close() of an idle polling client took %.2f ms" % elapsed_ms)
    assert elapsed_ms < 1000  # generous bound against a loaded CI machine; the report gives the real figure
    raises(experiment.NotFoundError, ERR_NOT_FOUND, r"closing", experiment.Client.find, "closing")


def test_close_wakes_a_waiting_thread_and_cancels_a_stalled_fetch(server, revision, tmp_path, capsys):
    key = new_key()
    server.serve(key, Answer(revision("1"), delay_s=5))
    client = make_client(server, tmp_path, key, request_timeout_ms=10_000)
    from experiment._native import lib
    handle = client._h  # the C handle, so the wait runs while the Python object is closed
    results: List[int] = []
    waiter = threading.Thread(target=lambda: results.append(lib.exp_client_wait_ready(handle, 10_000)))
    waiter.start()
    time.sleep(0.2)
    started = time.perf_counter()
    client.close()  # the fetch is stalled on the server: curl's progress check cancels it
    elapsed_ms = (time.perf_counter() - started) * 1000
    waiter.join(5)
    assert results == [-17]  # EXP_ERR_CLOSED, well before the 10 s timeout
    with capsys.disabled():
        print("\n  close() during a stalled fetch took %.0f ms" % elapsed_ms)
    assert elapsed_ms < 4000  # far below the server's 5 s stall and the 10 s request timeout


# ------------------------------------------------------------------------------------------------
# The datafile text in use (keep_datafile, exp_client_datafile_json)
# ------------------------------------------------------------------------------------------------

def test_datafile_json_is_the_text_in_use_as_polls_replace_it(server, revision, tmp_path):
    key = new_key()
    first, second = revision("1", padding=3), revision("2")
    server.serve(key, Answer(second, delay_s=0.3))
    with make_client(server, tmp_path, key, keep_datafile=True, polling_interval_s=10, start=None,
                     datafile=first) as c:  # started at once from `first`, then kept fresh
        assert c.datafile_json == first.decode()  # the given datafile, byte for byte, before the fetch
        assert wait_for(lambda: c.config["revision"] == "2")
        assert c.datafile_json == second.decode()
        server.serve(key, Answer(b'{"version": "4", "revision": "3", broken'))  # rejected: "2" stays
        assert wait_for(lambda: c.datafile_status()["rejected"] >= 1)
        assert c.datafile_json == second.decode() and c.config["revision"] == "2"
        c.start(first)  # a datafile given later replaces it too
        assert c.datafile_json == first.decode()
    with pytest.raises(experiment.ClosedError):
        c.datafile_json


def test_datafile_json_errors(datafile_text):
    with experiment.Client(datafile=datafile_text) as plain:
        raises(experiment.NotFoundError, ERR_NOT_FOUND, "keep_datafile", lambda: plain.datafile_json)
    with experiment.Client(keep_datafile=True) as idle:
        raises(experiment.NotReadyError, ERR_NOT_READY, "no datafile", lambda: idle.datafile_json)
        with pytest.raises(experiment.InvalidOptionError):
            experiment.Client(keep_datafile="yes")


def test_datafile_json_read_during_swaps_is_always_one_whole_text(datafile_text):
    """Readers on several threads while another thread swaps two datafiles in turn: each read is one of
    the two texts, whole (the text and the config are swapped together under the client's lock)."""
    texts = [datafile_text, json.dumps(dict(json.loads(datafile_text), revision="99"))]
    seen: List[str] = []
    stop = threading.Event()
    with experiment.Client(datafile=texts[0], keep_datafile=True) as c:
        def read() -> None:
            while not stop.is_set():
                seen.append(c.datafile_json)

        readers = [threading.Thread(target=read) for _ in range(3)]
        for thread in readers:
            thread.start()
        for index in range(200):
            c.start(texts[index % 2])
        stop.set()
        for thread in readers:
            thread.join()
    assert seen and set(seen) <= set(texts)
