"""Reading and deleting a user's stored sticky-bucketing profile (exp_profile_get / exp_profile_delete;
client.user_profile / client.delete_user_profile) in the real SQLite state file and the host's callbacks."""

from __future__ import annotations

import json
import sqlite3
from typing import Any, Dict, Optional

import pytest

import experiment

U2 = {"country": "NL", "age": 30}


def test_sqlite_profile_read_and_delete(datafile_text, tmp_path):
    with experiment.Client(datafile=datafile_text, state_dir=str(tmp_path)) as c:
        assert c.user_profile("u2") is None
        decision = c.decide("u2", "checkout_flow", U2, options=["DISABLE_DECISION_EVENT"])
        assert decision.variation_key == "control"
        profile = c.user_profile("u2")
        assert profile is not None and profile["user_id"] == "u2"
        assert {v["variation_id"] for v in profile["experiment_bucket_map"].values()}
        # What the state file holds, read by SQLite itself.
        with sqlite3.connect(str(tmp_path / "state.sqlite")) as db:
            (stored,) = db.execute("SELECT profile FROM profiles WHERE user_id = 'u2'").fetchone()
        assert json.loads(stored) == profile
        assert c.delete_user_profile("u2") is True
        assert c.delete_user_profile("u2") is False
        assert c.user_profile("u2") is None
        with sqlite3.connect(str(tmp_path / "state.sqlite")) as db:
            assert db.execute("SELECT COUNT(*) FROM profiles WHERE user_id = 'u2'").fetchone() == (0,)


def test_a_deleted_profile_is_bucketed_afresh(datafile_text, tmp_path):
    """The profile pins a variation the datafile's traffic would no longer give; deleting it un-pins."""
    with experiment.Client(datafile=datafile_text, state_dir=str(tmp_path)) as c:
        c.decide("u2", "checkout_flow", U2, options=["DISABLE_DECISION_EVENT"])
        profile = c.user_profile("u2")
        experiment_id = next(iter(profile["experiment_bucket_map"]))
    # Another process rewrites the stored profile to the other variation.
    datafile = json.loads(datafile_text)
    ids = {v["key"]: v["id"] for e in datafile["experiments"] if e["id"] == experiment_id for v in e["variations"]}
    pinned = {"user_id": "u2", "experiment_bucket_map": {experiment_id: {"variation_id": ids["treatment"]}}}
    with sqlite3.connect(str(tmp_path / "state.sqlite")) as db:
        db.execute("UPDATE profiles SET profile = ? WHERE user_id = 'u2'", (json.dumps(pinned),))
    with experiment.Client(datafile=datafile_text, state_dir=str(tmp_path)) as c:
        assert c.user_profile("u2") == pinned
        assert c.decide("u2", "checkout_flow", U2, options=["DISABLE_DECISION_EVENT"]).variation_key == "treatment"
        assert c.delete_user_profile("u2")
        assert c.decide("u2", "checkout_flow", U2, options=["DISABLE_DECISION_EVENT"]).variation_key == "control"


class DictStore:
    def __init__(self) -> None:
        self.profiles: Dict[str, Any] = {}

    def lookup(self, user_id: str) -> Optional[dict]:
        return self.profiles.get(user_id)

    def save(self, profile: dict) -> None:
        self.profiles[profile["user_id"]] = profile


def test_callbacks_store_reads_but_cannot_delete(datafile_text):
    store = DictStore()
    with experiment.Client(datafile=datafile_text, profile_store=store) as c:
        c.decide("u2", "checkout_flow", U2, options=["DISABLE_DECISION_EVENT"])
        assert c.user_profile("u2") == store.profiles["u2"]
        with pytest.raises(experiment.InvalidArgumentError):
            c.delete_user_profile("u2")


def test_no_profile_store(datafile_text):
    with experiment.Client(datafile=datafile_text, profile_store="none") as c:
        with pytest.raises(experiment.Error) as info:
            c.user_profile("u2")
        assert "profile store" in str(info.value)
        with pytest.raises(experiment.UnsupportedTypeError):
            c.user_profile(42)
    with pytest.raises(experiment.ClosedError):
        c.user_profile("u2")
