"""Reading and deleting a user's stored sticky-bucketing profile (exp_profile_get / exp_profile_delete;
client.user_profile / client.delete_user_profile) in the real SQLite state file and the host's callbacks."""

from __future__ import annotations

import json
import sqlite3
import time
from typing import Any, Dict, Optional

import pytest

import experiment

U2 = {"country": "NL", "age": 30}
U3 = {"plan": "premium", "score": 0.9}


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


# ------------------------------------------------------------------------------------------------
# A real redis-server shared by two clients (as two servers of a fleet)
# ------------------------------------------------------------------------------------------------

from test_profiles import RedisServer, _redis_store, redis_server  # noqa: E402,F401  (redis_server: a fixture)


def test_redis_profile_read_and_delete_by_another_client(redis_server: RedisServer, datafile_text: str) -> None:
    """A profile one client saved is read by another from the shared store, as redis holds it; the other
    deletes it from redis (gone for every client that reads the store), and a pin written into redis by
    someone else is read and decided by a new client."""
    store = _redis_store(redis_server, ttl_s=3600)
    with experiment.Client(datafile=datafile_text, profile_store=store) as a, \
            experiment.Client(datafile=datafile_text, profile_store=store) as b:
        assert a.user_profile("u2") is None and b.user_profile("u2") is None
        assert a.decide("u2", "checkout_flow", U2, options=["DISABLE_DECISION_EVENT"]).variation_key == "control"
        saved = json.loads(redis_server.cli("GET", "test:u2"))
        assert b.user_profile("u2") == saved == a.user_profile("u2")
        assert saved["user_id"] == "u2" and saved["experiment_bucket_map"]
        assert 3500 < int(redis_server.cli("TTL", "test:u2")) <= 3600
        assert b.delete_user_profile("u2") is True
        assert redis_server.cli("EXISTS", "test:u2") == "0"
        assert a.user_profile("u2") is None  # read from redis, not from a's cache
        assert b.delete_user_profile("u2") is False
        # Bucketed afresh by b (its cache lost the profile with the delete): saved to redis again.
        assert b.decide("u2", "checkout_flow", U2, options=["DISABLE_DECISION_EVENT"]).variation_key == "control"
        assert json.loads(redis_server.cli("GET", "test:u2")) == saved
        assert a.profile_stats()["errors"] == 0 and b.profile_stats()["errors"] == 0
    # Another program pins u2 to the other variation, straight into redis.
    experiment_id = next(iter(saved["experiment_bucket_map"]))
    datafile = json.loads(datafile_text)
    ids = {v["key"]: v["id"] for e in datafile["experiments"] if e["id"] == experiment_id for v in e["variations"]}
    pinned = {"user_id": "u2", "experiment_bucket_map": {experiment_id: {"variation_id": ids["treatment"]}}}
    redis_server.cli("SET", "test:u2", json.dumps(pinned))
    with experiment.Client(datafile=datafile_text, profile_store=store) as c:
        assert c.user_profile("u2") == pinned
        assert c.decide("u2", "checkout_flow", U2, options=["DISABLE_DECISION_EVENT"]).variation_key == "treatment"
        assert c.delete_user_profile("u2") is True
        assert c.decide("u2", "checkout_flow", U2, options=["DISABLE_DECISION_EVENT"]).variation_key == "control"


def test_redis_profile_access_while_redis_is_down(redis_server: RedisServer, datafile_text: str) -> None:
    """With redis gone, reading and deleting a profile raise StoreError (the store failed, not "no profile")
    and the client keeps deciding; once redis is back, both work again."""
    store = _redis_store(redis_server)
    with experiment.Client(datafile=datafile_text, profile_store=store) as c:
        c.decide("u2", "checkout_flow", U2, options=["DISABLE_DECISION_EVENT"])
        redis_server.stop()
        with pytest.raises(experiment.StoreError):
            c.user_profile("u2")
        with pytest.raises(experiment.StoreError):
            c.delete_user_profile("u2")
        assert c.decide("u2", "checkout_flow", U2, options=["DISABLE_DECISION_EVENT"]).variation_key == "control"
        redis_server.start()

        def reads() -> bool:  # the client reconnects at a later command
            try:
                c.user_profile("u2")
                return True
            except experiment.StoreError:
                time.sleep(0.1)
                return False

        deadline = time.monotonic() + 10
        while not reads() and time.monotonic() < deadline:
            pass
        # The restarted redis kept nothing (no persistence): no profile to read or delete; new saves land.
        assert c.user_profile("u2") is None
        assert c.delete_user_profile("u2") is False
        assert c.decide("u3", "checkout_flow", U3, options=["DISABLE_DECISION_EVENT"]).variation_key == "treatment"
        assert c.user_profile("u3")["user_id"] == "u3"
        assert json.loads(redis_server.cli("GET", "test:u3")) == c.user_profile("u3")
