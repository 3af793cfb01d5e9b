"""EXP_NOTIFY_DATAFILE_FETCH ("datafile_fetch" listeners): one notification per datafile fetch, after the
config_update it may cause, saying how the fetch ended. Fetches come from a file:// URL whose file the test
replaces or removes, triggered with Client.refresh (synchronous, so the notifications have arrived when it
returns)."""
from __future__ import annotations

import json
import os
import threading
from typing import Any, Dict, List, Tuple

import pytest

import experiment

HERE = os.path.dirname(os.path.abspath(__file__))
DEMO = os.path.join(HERE, "..", "..", "..", "examples", "datafiles", "demo.json")


def demo(revision: str) -> str:
    with open(DEMO, encoding="utf-8") as handle:
        d = json.load(handle)
    d["revision"] = revision
    return json.dumps(d)


def test_each_fetch_outcome_is_notified(tmp_path: Any) -> None:
    served = tmp_path / "served"
    served.mkdir()
    datafile = served / "fetch-key.json"
    datafile.write_text(demo("1"))
    heard: List[Tuple[str, Dict[str, Any]]] = []
    fetched = threading.Event()

    def on_fetch(payload: Dict[str, Any]) -> None:
        heard.append(("datafile_fetch", payload))
        fetched.set()
    with experiment.Client(sdk_key="fetch-key", datafile_url_template="file://%s/{sdk_key}.json" % served,
                           polling_interval_s=0, retry_count=0, state_dir=str(tmp_path / "state"),
                           profile_store="none", event_endpoint="none", start="none") as client:
        client.add_listener("config_update", lambda payload: heard.append(("config_update", payload)))
        client.add_listener("datafile_fetch", on_fetch)
        client.start_async()
        assert client.wait_ready(10)
        # the start's own fetch: its notifications follow readiness (listeners run after the swap)
        assert fetched.wait(10)
        assert [kind for kind, _ in heard] == ["config_update", "datafile_fetch"], heard
        assert heard[0][1]["revision"] == "1" and heard[0][1]["source"] == "fetch"
        assert heard[1][1]["outcome"] == "updated"

        def refresh() -> List[Tuple[str, Dict[str, Any]]]:
            del heard[:]
            try:
                client.refresh()
            except experiment.Error:
                pass
            return list(heard)

        datafile.write_text(demo("2"))
        events = refresh()
        assert [kind for kind, _ in events] == ["config_update", "datafile_fetch"], events
        assert events[1][1] == {"outcome": "updated", "ready": True, "revision": "2", "error_code": None,
                                "error": None}

        events = refresh()  # the same bytes: nothing new to compile
        assert events == [("datafile_fetch", {"outcome": "not_modified", "ready": True, "revision": "2",
                                              "error_code": None, "error": None})]

        datafile.write_text("{not json")
        events = refresh()
        assert [kind for kind, _ in events] == ["datafile_fetch"]
        payload = events[0][1]
        assert payload["outcome"] == "rejected" and payload["revision"] == "2" and payload["ready"] is True
        assert payload["error_code"] == experiment.InvalidJSONError.default_code and payload["error"]

        datafile.unlink()
        events = refresh()
        payload = events[0][1]
        assert payload["outcome"] == "failed" and payload["revision"] == "2"
        assert payload["error_code"] == experiment.FetchFailedError.default_code and payload["error"]
        assert client.config["revision"] == "2"  # the last good datafile stays in use


def test_unknown_listener_kind_is_refused() -> None:
    with experiment.Client() as client:
        with pytest.raises(experiment.InvalidArgumentError):
            client.add_listener(7, lambda payload: None)
        listener_id = client.add_listener(5, lambda payload: None)  # EXP_NOTIFY_DATAFILE_FETCH by number
        client.remove_listener(listener_id)
