"""Timeouts at the edges (issue 35 item 1, issue 33 item 3): a huge or infinite timeout waits until ready or
closed (the library saturates its deadlines instead of trapping on now + timeout), NaN and negative seconds
are typed errors, and close() returns within close_timeout_ms against an endpoint that never answers."""

from __future__ import annotations

import json
import math
import socket
import threading
import time

import pytest

import experiment

HUGE_SECONDS = [1e300, 2.0 ** 63, 2 ** 63, 2 ** 64, math.inf, 9.2233720368547e15, 9223372036854775.807,
                (2 ** 63 - 1) / 1000]


@pytest.mark.parametrize("timeout_s", HUGE_SECONDS + [0, 0.0, 1, 0.001])
def test_ready_client_answers_every_timeout(datafile_text, timeout_s):
    with experiment.Client(datafile=datafile_text) as client:
        assert client.wait_ready(timeout_s) is True


@pytest.mark.parametrize("timeout_s", HUGE_SECONDS)
def test_huge_timeout_waits_until_ready(datafile_text, timeout_s):
    client = experiment.Client(sdk_key="not-started", start="none")
    answers = []
    waiter = threading.Thread(target=lambda: answers.append(client.wait_ready(timeout_s)))
    waiter.start()
    client.start(datafile_text)
    waiter.join(30)
    assert answers == [True]
    client.close()


def test_huge_timeout_waits_until_closed():
    client = experiment.Client(sdk_key="not-started", start="none")
    errors = []

    def wait() -> None:
        try:
            client.wait_ready(math.inf)
        except experiment.ClosedError as exc:
            errors.append(exc)

    waiter = threading.Thread(target=wait)
    waiter.start()
    client.close()
    waiter.join(30)
    assert not waiter.is_alive() and len(errors) == 1


@pytest.mark.parametrize("timeout_s", [math.nan, -1, -0.5, -math.inf, -(2 ** 64)])
def test_nan_and_negative_timeouts_are_invalid(idle_client, timeout_s):
    with pytest.raises(experiment.InvalidArgumentError) as caught:
        idle_client.wait_ready(timeout_s)
    assert isinstance(caught.value, ValueError)
    assert idle_client.wait_ready(0) is False  # the client still works


@pytest.mark.parametrize("timeout_s", ["1", b"1", [1], True])
def test_timeout_of_another_type_is_a_type_error(idle_client, timeout_s):
    with pytest.raises(TypeError):
        idle_client.wait_ready(timeout_s)


def test_unready_client_short_timeouts_time_out(idle_client):
    assert idle_client.wait_ready(0) is False
    assert idle_client.wait_ready(0.001) is False


@pytest.mark.parametrize("timeout_ms", [2 ** 63 - 1, 2 ** 63, 2 ** 64, 10 ** 30])
def test_run_when_ready_huge_timeout_waits_until_ready(datafile_text, timeout_ms):
    client = experiment.Client(sdk_key="not-started", start="none")
    answered = threading.Event()
    answers = []
    client.run_when_ready(lambda ready: (answers.append(ready), answered.set()), timeout_ms)
    client.start(datafile_text)
    assert answered.wait(30)
    assert answers == [True]
    client.close()


class SilentServer:
    """Accepts TCP connections and never answers (keeps them open until stopped)."""

    def __init__(self) -> None:
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.accepted = threading.Semaphore(0)
        self.connections = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            self.connections.append(connection)
            self.accepted.release()

    def stop(self) -> None:
        self.listener.close()
        for connection in self.connections:
            connection.close()


@pytest.mark.parametrize("close_timeout_ms", [0, 500, 2000])
def test_close_returns_within_its_timeout_when_the_endpoint_never_answers(datafile_text, tmp_path,
                                                                         close_timeout_ms):
    server = SilentServer()
    try:
        event_key = json.loads(datafile_text)["events"][0]["key"]
        client = experiment.Client(datafile=datafile_text, state_dir=str(tmp_path),
                                   event_endpoint="http://127.0.0.1:%d/events" % server.port,
                                   event_batch_size=1, close_timeout_ms=close_timeout_ms)
        for index in range(5):
            client.track(event_key, "user-%d" % index)
        assert server.accepted.acquire(timeout=30)  # a POST is under way and will never be answered
        started = time.monotonic()
        client.close()
        elapsed = time.monotonic() - started
        # An upper bound with slack for a loaded machine; the overshoot it guards against was ~0.9 s per close.
        assert elapsed < close_timeout_ms / 1000 + 0.5, elapsed
    finally:
        server.stop()
