"""Shared fixtures. The suite runs through the REAL libexperiment.so, found like the binding finds it:
EXPERIMENT_LIBRARY, a copy in the package directory, <repo>/.build/release, the system path."""

from __future__ import annotations

import json
import os
import re
import sys
import threading
from typing import Any, List

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
BINDING_ROOT = os.path.dirname(HERE)
REPO_ROOT = os.path.dirname(os.path.dirname(BINDING_ROOT))
DATA_DIR = os.path.join(HERE, "data")
DATAFILE_PATH = os.path.join(DATA_DIR, "basic_datafile.json")
HEADER_PATH = os.path.join(REPO_ROOT, "include", "experiment.h")

# Hermetic runs: clients that install no event dispatcher and name no event_endpoint must not try to reach
# the reference's logx endpoint (tests of the pipeline pass their own 127.0.0.1 server), and sticky profiles,
# overrides and queued events go to a private state directory, never the user's own.
os.environ.setdefault("EXPERIMENT_EVENT_ENDPOINT", "none")
if not os.environ.get("EXPERIMENT_KEEP_STATE_HOME"):
    import tempfile as _tempfile

    os.environ["XDG_STATE_HOME"] = _tempfile.mkdtemp(prefix="libexperiment-test-state-")

if BINDING_ROOT not in sys.path:
    sys.path.insert(0, BINDING_ROOT)

try:
    import experiment  # noqa: E402
except ImportError as exc:  # no library: say so once instead of failing every test
    pytest.exit("cannot import the experiment binding: %s" % exc, returncode=4)


def pytest_report_header(config: Any) -> List[str]:
    return ["libexperiment %s from %s" % (experiment.library_version(), experiment.library_path)]


# Clients the tests start with an sdk_key fetch nothing from the internet (as the Makefile sets it): tests of
# datafile fetching name their own 127.0.0.1 datafile_url_template.
os.environ.setdefault("EXPERIMENT_DATAFILE_URL_TEMPLATE", "none")


@pytest.fixture(autouse=True)
def _own_state_dir(tmp_path_factory: Any, monkeypatch: Any) -> None:
    """Each test's clients default to a state file of their own (sticky assignments never leak between tests)."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))


# ------------------------------------------------------------------------------------------------
# Data
# ------------------------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def datafile_text() -> str:
    with open(DATAFILE_PATH, encoding="utf-8") as f:
        return f.read()


@pytest.fixture()
def datafile_dict(datafile_text: str) -> dict:
    return json.loads(datafile_text)


# ------------------------------------------------------------------------------------------------
# Event recording
# ------------------------------------------------------------------------------------------------

class RecordingDispatcher:
    """An event dispatcher that keeps every event it is handed."""

    def __init__(self) -> None:
        self.events: List[experiment.Event] = []
        self.lock = threading.Lock()

    def dispatch_event(self, event: experiment.Event) -> None:
        with self.lock:
            self.events.append(event)

    def clear(self) -> None:
        with self.lock:
            self.events.clear()

    def impressions(self) -> List[dict]:
        return [e.params for e in self.events if _event_keys(e.params) == ["campaign_activated"]]

    def conversions(self) -> List[dict]:
        return [e.params for e in self.events if _event_keys(e.params) not in ([], ["campaign_activated"])]


def _event_keys(params: dict) -> List[str]:
    keys = []
    for visitor in params.get("visitors", []):
        for snapshot in visitor.get("snapshots", []):
            for event in snapshot.get("events", []):
                keys.append(event.get("key"))
    return keys


@pytest.fixture()
def dispatcher() -> RecordingDispatcher:
    return RecordingDispatcher()


@pytest.fixture()
def client(datafile_text: str, dispatcher: RecordingDispatcher):
    c = experiment.Client(sdk_key="demo-sdk-key", datafile=datafile_text, event_dispatcher=dispatcher)
    yield c
    c.close()


@pytest.fixture()
def idle_client():
    """A client without a datafile (not ready)."""
    c = experiment.Client(sdk_key="not-started", start="none")
    yield c
    c.close()


# ------------------------------------------------------------------------------------------------
# Assertions
# ------------------------------------------------------------------------------------------------

def check_error(exc: BaseException, cls: type, code: int, pattern: str) -> None:
    """Asserts class, code and that the message matches `pattern` (a regex, case-insensitive)."""
    assert isinstance(exc, cls), "expected %s, got %r" % (cls.__name__, exc)
    assert isinstance(exc, experiment.Error)
    assert exc.code == code, "expected code %d, got %d (%r)" % (code, exc.code, exc)
    assert exc.message, "empty error message for %r" % exc
    assert str(exc) == exc.message
    assert re.search(pattern, exc.message, re.IGNORECASE), \
        "message %r does not match %r" % (exc.message, pattern)


def raises(cls: type, code: int, pattern: str, fn: Any, *args: Any, **kwargs: Any) -> BaseException:
    with pytest.raises(cls) as info:
        fn(*args, **kwargs)
    check_error(info.value, cls, code, pattern)
    return info.value


#: the reference SDK's reason for a decision before the client has a datafile (OptimizelyDecisionMessage)
SDK_NOT_READY = "Optimizely SDK not configured properly yet."


def assert_error_decision(decision: Any, flag_key: Any, reason: str) -> None:
    """decide's answer for a data condition, as the reference's: disabled, no variation, one reason."""
    assert (decision.flag_key, decision.enabled, decision.variation_key, decision.rule_key, decision.variables,
            decision.reasons) == (flag_key, False, None, None, {}, [reason])


def nested_json(depth: int, inner: str = "1") -> str:
    return "[" * depth + inner + "]" * depth


# The answers of the reference SDK for the demo datafile (see test_reference.py, which re-derives them).
EXPECTED = {
    ("u2", "checkout_flow"): (True, "control", "checkout_test"),
    ("u1", "checkout_flow"): (False, "off", "81002"),
    ("u1", "search_ranking"): (True, "on", "82002"),
    ("u3", "checkout_flow"): (True, "treatment", "checkout_test"),
}
U2_ATTRS = {"country": "NL", "age": 30}
U3_ATTRS = {"plan": "premium", "score": 0.9}

# what a message about trailing garbage after a JSON document must mention: the fact, or where it is
TRAILING = r"trailing|garbage|extra|after|byte \d+|offset \d+|position \d+"
