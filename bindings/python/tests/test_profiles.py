"""Sticky bucketing (user profiles) and Sigma forced memberships, through the real library.

SQLite: a real state file in a temporary state_dir (clients restarted on it). Redis: a real redis-server
started here on a free 127.0.0.1 port (killed and restarted mid-run). Callbacks: Python objects with
lookup/save. Differential: optimizely-sdk 5.7.0 with a dict-backed UserProfileService, from empty and
from pre-filled profiles, must decide and save exactly what we decide and save."""

from __future__ import annotations

import copy
import json
import logging
import os
import random
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional

import pytest

import experiment
from conftest import raises
from datafile_generator import generate_datafile, generate_users

CHECKOUT_ID = "60001"        # checkout_test: control 61001 [0,4000), treatment 61002 [4000,8000), forced_user -> treatment
LEGACY_ID = "60004"          # legacy_ab: audience needs beta == true
USERS = ["user-%d" % i for i in range(60)]
NONE = "none"


def checkout_variations(client: Any, users: List[str], **kw: Any) -> Dict[str, Optional[str]]:
    """The checkout_test variation of each user who got one (the others fall to the rollout: not sticky)."""
    decisions = {u: client.decide(u, "checkout_flow", **kw) for u in users}
    return {u: d.variation_key for u, d in decisions.items() if d.rule_key == "checkout_test"}


def all_to(datafile: dict, experiment_index: int, variation_id: str) -> str:
    """The datafile with every user of one experiment allocated to `variation_id`."""
    changed = copy.deepcopy(datafile)
    changed["experiments"][experiment_index]["trafficAllocation"] = [{"entityId": variation_id, "endOfRange": 10000}]
    return json.dumps(changed)


def stored_profiles(state_dir: str) -> Dict[str, dict]:
    with sqlite3.connect(os.path.join(state_dir, "state.sqlite")) as db:
        return {user: json.loads(text) for user, text in db.execute("SELECT user_id, profile FROM profiles")}


# ------------------------------------------------------------------------------------------------
# SQLite (the default store)
# ------------------------------------------------------------------------------------------------

def test_assignments_survive_a_restart_and_a_traffic_change(tmp_path, datafile_text, datafile_dict):
    state = str(tmp_path)
    with experiment.Client(datafile=datafile_text, state_dir=state) as first:
        before = checkout_variations(first, USERS)
        assert first.profile_stats()["store"] == "sqlite"
    assert {"control", "treatment"} <= set(before.values())
    everyone_treatment = all_to(datafile_dict, 0, "61002")
    with experiment.Client(datafile=everyone_treatment, state_dir=state) as restarted:
        assert checkout_variations(restarted, list(before)) == before
    # Without the profile the new allocation shows: the stickiness came from the state file.
    with experiment.Client(datafile=everyone_treatment, profile_store=NONE) as stateless:
        assert set(checkout_variations(stateless, USERS).values()) == {"treatment"}


def test_state_file_holds_the_documented_profile_schema(tmp_path, datafile_text):
    state = str(tmp_path)
    with experiment.Client(datafile=datafile_text, state_dir=state) as c:
        variation = c.decide("user-7", "checkout_flow").variation_key
    ids = {"control": "61001", "treatment": "61002"}
    assert stored_profiles(state)["user-7"] == {
        "user_id": "user-7", "experiment_bucket_map": {CHECKOUT_ID: {"variation_id": ids[variation]}}}


def test_deleted_variation_rebuckets_and_saves(tmp_path, datafile_text, datafile_dict):
    state = str(tmp_path)
    with experiment.Client(datafile=datafile_text, state_dir=state) as c:
        before = checkout_variations(c, USERS)
    controls = [u for u, v in before.items() if v == "control"]
    assert controls
    without_control = copy.deepcopy(datafile_dict)
    exp = without_control["experiments"][0]
    exp["variations"] = [v for v in exp["variations"] if v["key"] != "control"]
    exp["trafficAllocation"] = [{"entityId": "61002", "endOfRange": 10000}]
    exp["forcedVariations"] = {}
    with experiment.Client(datafile=json.dumps(without_control), state_dir=state) as c:
        after = checkout_variations(c, controls)
    assert set(after.values()) == {"treatment"}
    profiles = stored_profiles(state)
    assert all(profiles[u]["experiment_bucket_map"][CHECKOUT_ID] == {"variation_id": "61002"} for u in controls)


def test_saved_variation_skips_audience_and_whitelist_still_wins(tmp_path, datafile_text, datafile_dict):
    state = str(tmp_path)
    # Pre-fill profiles the way another process (or an earlier version) would have left them.
    with experiment.Client(datafile=datafile_text, state_dir=state):
        pass
    with sqlite3.connect(os.path.join(state, "state.sqlite")) as db:
        for user in ("forced_user", "plain-user"):
            profile = {"user_id": user, "experiment_bucket_map": {CHECKOUT_ID: {"variation_id": "61001"}},
                       "extra": "ignored"}
            db.execute("INSERT INTO profiles (user_id, profile) VALUES (?, ?)", (user, json.dumps(profile)))
    with experiment.Client(datafile=all_to(datafile_dict, 0, "61002"), state_dir=state) as c:
        assert c.decide("plain-user", "checkout_flow").variation_key == "control"      # from the profile
        assert c.decide("forced_user", "checkout_flow").variation_key == "treatment"   # whitelist first
        reasons = c.decide("plain-user", "checkout_flow", options=["INCLUDE_REASONS"]).reasons
        assert any("from user profile" in r for r in reasons), reasons
        c.set_forced_variation("checkout_test", "plain-user", "treatment")            # forced variation first
        assert c.decide("plain-user", "checkout_flow").variation_key == "treatment"


def test_ignore_user_profile_service_neither_reads_nor_writes(tmp_path, datafile_text, datafile_dict):
    state = str(tmp_path)
    with experiment.Client(datafile=datafile_text, state_dir=state) as c:
        before = checkout_variations(c, USERS)
    with experiment.Client(datafile=all_to(datafile_dict, 0, "61002"), state_dir=state) as c:
        ignoring = checkout_variations(c, USERS, options=["IGNORE_USER_PROFILE_SERVICE"])
        assert set(ignoring.values()) == {"treatment"} and len(ignoring) == len(USERS)
        assert c.profile_stats()["lookups"] == 0 and c.profile_stats()["saves"] == 0
        assert checkout_variations(c, list(before)) == before
    with experiment.Client(datafile=datafile_text, state_dir=state,
                           default_decide_options=["IGNORE_USER_PROFILE_SERVICE"]) as c:
        c.decide_all("brand-new-user")
        assert c.profile_stats()["lookups"] == 0
    assert "brand-new-user" not in stored_profiles(state)


def test_rollout_rules_are_not_sticky(tmp_path, datafile_text):
    state = str(tmp_path)
    with experiment.Client(datafile=datafile_text, state_dir=state) as c:
        d = c.decide("u1", "checkout_flow")
        assert d.rule_key != "checkout_test"          # u1 falls outside the experiment's traffic
    assert "u1" not in stored_profiles(state)


def test_get_variation_activate_and_trigger_are_sticky(tmp_path, datafile_text, datafile_dict):
    state = str(tmp_path)
    with experiment.Client(datafile=datafile_text, state_dir=state) as c:
        triggered = {u: c.trigger_experiment(u, CHECKOUT_ID) for u in USERS[:30]
                     if c.get_variation("checkout_test", u) is not None}
    assert set(triggered.values()) == {"61001", "61002"}
    with experiment.Client(datafile=all_to(datafile_dict, 0, "61002"), state_dir=state) as c:
        assert {u: c.trigger_experiment(u, CHECKOUT_ID) for u in triggered} == triggered
        ids = {"control": "61001", "treatment": "61002"}
        assert {u: ids[c.activate("checkout_test", u)] for u in triggered} == triggered


def test_two_clients_on_one_state_file_share_assignments(tmp_path, datafile_text, datafile_dict):
    state = str(tmp_path)
    with experiment.Client(datafile=datafile_text, state_dir=state) as a, \
            experiment.Client(datafile=all_to(datafile_dict, 0, "61002"), state_dir=state) as b:
        first = checkout_variations(a, USERS)
        assert checkout_variations(b, list(first)) == first


_WORKER = """
import json, sys
import experiment
state, order = sys.argv[1], sys.argv[2]
users = ["user-%d" % i for i in range(300)]
if order == "reverse":
    users.reverse()
with open(sys.argv[3]) as f:
    text = f.read()
with experiment.Client(datafile=text, state_dir=state) as c:
    got = {u: c.decide(u, "checkout_flow").variation_key for u in users}
    print(json.dumps({"decisions": got, "stats": c.profile_stats()}))
"""


def test_two_processes_share_one_state_file(tmp_path, datafile_text):
    state, datafile = str(tmp_path / "state"), tmp_path / "datafile.json"
    datafile.write_text(datafile_text)
    env = dict(os.environ)
    workers = [subprocess.Popen([sys.executable, "-c", _WORKER, state, order, str(datafile)], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for order in ("forward", "reverse")]
    outputs = [w.communicate(timeout=120) for w in workers]
    assert [w.returncode for w in workers] == [0, 0], [err for _, err in outputs]
    results = [json.loads(out) for out, _ in outputs]
    assert results[0]["decisions"] == results[1]["decisions"]
    assert [r["stats"]["errors"] for r in results] == [0, 0]      # no "database is locked" under WAL
    in_experiment = {u for u, v in results[0]["decisions"].items() if v in ("control", "treatment")}
    assert set(stored_profiles(state)) == in_experiment


@pytest.mark.parametrize("kind", ["sqlite", "callbacks"])
def test_many_threads_agree_on_assignments(tmp_path, datafile_text, kind):
    import threading
    store: Any = DictProfiles() if kind == "callbacks" else "sqlite"
    lock = threading.Lock()
    if kind == "callbacks":     # the library calls the store from every deciding thread at once
        inner_lookup, inner_save = store.lookup, store.save

        def lookup(user_id: str) -> Optional[dict]:
            with lock:
                return inner_lookup(user_id)

        def save(profile: dict) -> None:
            with lock:
                inner_save(profile)
        store.lookup, store.save = lookup, save
    seen: Dict[int, Dict[str, str]] = {}
    with experiment.Client(datafile=datafile_text, state_dir=str(tmp_path), profile_store=store,
                           user_store_capacity=50) as c:    # a small cache: lookups keep reaching the store

        def work(t: int) -> None:
            seen[t] = checkout_variations(c, USERS * 3)

        threads = [threading.Thread(target=work, args=(t,)) for t in range(6)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert c.profile_stats()["errors"] == 0
    assert all(seen[t] == seen[0] for t in seen) and len(seen) == 6


def test_decide_all_looks_up_once_and_saves_once(tmp_path, datafile_text):
    with experiment.Client(datafile=datafile_text, state_dir=str(tmp_path)) as c:
        c.decide_all("u3", {"plan": "premium", "score": 0.9})
        stats = c.profile_stats()
        assert (stats["lookups"], stats["saves"]) == (1, 1)
        c.decide_all("u3", {"plan": "premium", "score": 0.9})   # nothing new: looked up (cached), not saved
        stats = c.profile_stats()
        assert (stats["lookups"], stats["cache_hits"], stats["saves"]) == (2, 1, 1)


def test_unusable_state_dir_still_decides(tmp_path, datafile_text, capfd):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    with experiment.Client(datafile=datafile_text, state_dir=str(blocker / "state")) as c:
        assert c.decide("u2", "checkout_flow", {"country": "NL", "age": 30}).variation_key == "control"
        assert c.profile_stats()["store"] == "none"
        c.set_forced_variation("checkout_test", "qa", "treatment")      # kept in memory
        assert c.decide("qa", "checkout_flow").variation_key == "treatment"
    # Said while the client is created, before a host logger can be installed: the default goes to stderr.
    assert "kept in memory only" in capfd.readouterr().err


def test_profile_store_option_errors():
    for bad, pattern in [("mysql", "profile_store"), ({"redis": {}}, "url is required"),
                         ({"redis": {"url": "http://x"}}, "redis://"),
                         ({"redis": {"url": "redis://127.0.0.1:1/0", "ttl": 5}}, "unknown key"),
                         ({"redis": {"url": "redis://127.0.0.1:99999/0"}}, "port")]:
        raises(experiment.InvalidOptionError, -3, pattern, experiment.Client, profile_store=bad)
    with pytest.raises(TypeError, match="lookup"):
        experiment.Client(profile_store=object())


# ------------------------------------------------------------------------------------------------
# Persisted forced variations and Sigma forced memberships
# ------------------------------------------------------------------------------------------------

def test_forced_variation_survives_a_restart(tmp_path, datafile_text):
    state = str(tmp_path)
    with experiment.Client(datafile=datafile_text, state_dir=state, profile_store=NONE) as c:
        c.set_forced_variation("checkout_test", "qa", "control")
        c.set_forced_variation("checkout_test", "gone", "treatment")
        c.set_forced_variation("checkout_test", "gone", None)
    with experiment.Client(datafile=datafile_text, state_dir=state, profile_store=NONE) as c:
        assert c.get_forced_variation("checkout_test", "qa") == "control"
        assert c.decide("qa", "checkout_flow").variation_key == "control"
        assert c.get_forced_variation("checkout_test", "gone") is None


def test_force_include_exclude_and_exclude_all(tmp_path, datafile_text):
    state = str(tmp_path)
    with experiment.Client(datafile=datafile_text, state_dir=state) as c:
        c.force_include("forced_user", CHECKOUT_ID, 0)                # beats the datafile's whitelist
        assert c.decide("forced_user", "checkout_flow").variation_key == "control"
        c.force_include("outsider", LEGACY_ID, 1)                     # audience (beta) ignored
        assert c.get_variation("legacy_ab", "outsider") == "green"
        c.force_include("anyone", LEGACY_ID)                          # bucketed variation, audience ignored
        assert c.get_variation("legacy_ab", "anyone") in ("blue", "green")
        c.force_exclude("u2", CHECKOUT_ID)                            # out: falls through to the rollout
        d = c.decide("u2", "checkout_flow", {"country": "NL", "age": 30})
        assert d.rule_key != "checkout_test"
        raises(experiment.NotTargetedError, -11, "audience", c.trigger_experiment, "u2", CHECKOUT_ID)
        c.force_exclude_all("ceo")
        assert c.get_variation("checkout_test", "ceo") is None
        assert c.get_variation("legacy_ab", "ceo", {"beta": True}) is None
    with experiment.Client(datafile=datafile_text, state_dir=state) as c:     # all of it persisted
        assert c.decide("forced_user", "checkout_flow").variation_key == "control"
        assert c.get_variation("legacy_ab", "outsider") == "green"
        assert c.get_variation("checkout_test", "ceo") is None
        assert c.decide("u2", "checkout_flow", {"country": "NL", "age": 30}).rule_key != "checkout_test"
        c.force_clear("u2", CHECKOUT_ID)
        c.force_clear("ceo")
        c.force_clear("forced_user")
    with experiment.Client(datafile=datafile_text, state_dir=state) as c:
        assert c.decide("u2", "checkout_flow", {"country": "NL", "age": 30}).rule_key == "checkout_test"
        assert c.get_variation("legacy_ab", "ceo", {"beta": True}) in ("blue", "green")
        assert c.decide("forced_user", "checkout_flow").variation_key == "treatment"


def test_force_errors(datafile_text):
    with experiment.Client(datafile=datafile_text, profile_store=NONE) as c:
        raises(experiment.UnknownExperimentError, -8, "99999", c.force_include, "u", "99999")
        raises(experiment.UnknownVariationError, -10, "group index 5", c.force_include, "u", CHECKOUT_ID, 5)
        raises(experiment.InvalidArgumentError, -1, "group_index", c.force_include, "u", CHECKOUT_ID, -2)
        raises(experiment.UnknownExperimentError, -8, "nope", c.force_exclude, "u", "nope")
        assert c.decide("u2", "checkout_flow", {"country": "NL", "age": 30}).variation_key == "control"


# ------------------------------------------------------------------------------------------------
# Host callbacks
# ------------------------------------------------------------------------------------------------

class DictProfiles:
    """A user profile service over a dict, counting calls (the shape optimizely-sdk expects too)."""

    def __init__(self, profiles: Optional[Dict[str, dict]] = None) -> None:
        self.profiles = copy.deepcopy(profiles or {})
        self.lookups: List[str] = []
        self.saves: List[dict] = []

    def lookup(self, user_id: str) -> Optional[dict]:
        self.lookups.append(user_id)
        found = self.profiles.get(user_id)
        return copy.deepcopy(found) if found is not None else None

    def save(self, profile: dict) -> None:
        self.saves.append(copy.deepcopy(profile))
        self.profiles[profile["user_id"]] = copy.deepcopy(profile)


def test_sigma_summaries_show_saved_assignments_and_save_nothing(datafile_text, datafile_dict):
    store = DictProfiles()
    with experiment.Client(datafile=datafile_text, profile_store=store) as c:
        first = checkout_variations(c, USERS[:20])
        c.start(all_to(datafile_dict, 0, "61002"))          # fresh bucketing would now say "treatment"
        saves = len(store.saves)
        for user, variation in first.items():
            assert c.get_experiment(user, "checkout_test").variation_key == variation
            assert [e["variation_key"] for e in c.user_experiments_json(user)
                    if e["key"] == "checkout_test"] == [variation]
        newcomer = next(u for u in ("new-%d" % i for i in range(100))
                        if c.get_experiment(u, "checkout_test") is not None)
        assert len(store.saves) == saves                    # summaries are read-only
        assert c.decide(newcomer, "checkout_flow").variation_key == "treatment"
        assert len(store.saves) == saves + 1


class BrokenProfiles:
    def __init__(self, mode: str) -> None:
        self.mode = mode

    def lookup(self, user_id: str) -> Any:
        if self.mode == "raise":
            raise RuntimeError("database down")
        return ["not", "a", "profile"]

    def save(self, profile: dict) -> None:
        raise RuntimeError("database down")


def test_callbacks_read_and_write_profiles(datafile_text, datafile_dict):
    store = DictProfiles({"u9": {"user_id": "u9", "experiment_bucket_map": {CHECKOUT_ID: {"variation_id": "61001"}}}})
    with experiment.Client(datafile=all_to(datafile_dict, 0, "61002"), profile_store=store) as c:
        assert c.decide("u9", "checkout_flow").variation_key == "control"
        assert c.decide("fresh", "checkout_flow").variation_key == "treatment"
        c.decide_all("fresh2")
        assert c.profile_stats()["store"] == "callbacks"
    # Each save reads the store again first (another server may have saved the user meanwhile).
    assert store.lookups == ["u9", "fresh", "fresh", "fresh2", "fresh2"]
    assert store.saves == [
        {"user_id": "fresh", "experiment_bucket_map": {CHECKOUT_ID: {"variation_id": "61002"}}},
        {"user_id": "fresh2", "experiment_bucket_map": {CHECKOUT_ID: {"variation_id": "61002"}}},
    ]


def test_servers_with_stale_caches_keep_each_others_assignments(datafile_text, datafile_dict):
    store = DictProfiles()
    user = next(u for u in USERS if experiment.Client(datafile=datafile_text, profile_store=NONE)
                .get_variation("checkout_test", u) == "control")
    everyone_treatment = all_to(datafile_dict, 0, "61002")
    with experiment.Client(datafile=datafile_text, profile_store=store) as a, \
            experiment.Client(datafile=everyone_treatment, profile_store=store) as b:
        for server in (a, b):      # both cache the user's (empty) profile
            assert server.get_variation("legacy_ab", user, {"beta": False}) is None
        assert a.get_variation("checkout_test", user) == "control"              # a saves checkout_test
        # b has not seen a's save (stale cache) and buckets by its own allocation; saving, it finds a's
        # assignment in the store: the first saved assignment holds, and b follows it from then on.
        assert b.get_variation("checkout_test", user) == "treatment"
        assert store.profiles[user]["experiment_bucket_map"] == {CHECKOUT_ID: {"variation_id": "61001"}}
        assert b.get_variation("checkout_test", user) == "control"
        assert b.get_variation("legacy_ab", user, {"beta": True}) is not None   # b saves legacy_ab...
        assert set(store.profiles[user]["experiment_bucket_map"]) == {CHECKOUT_ID, LEGACY_ID}   # ...keeping a's


@pytest.mark.parametrize("mode", ["raise", "garbage"])
def test_failing_callbacks_never_fail_a_decision(datafile_text, mode, caplog):
    with caplog.at_level(logging.WARNING, logger="experiment"):
        with experiment.Client(datafile=datafile_text, profile_store=BrokenProfiles(mode)) as c:
            for _ in range(3):
                assert c.decide("u2", "checkout_flow", {"country": "NL", "age": 30}).variation_key == "control"
            assert c.trigger_experiment("u2", CHECKOUT_ID) == "61001"
            assert c.profile_stats()["errors"] >= 4
    assert any("profile store" in r.getMessage() for r in caplog.records)


def test_failing_save_is_counted_and_the_process_stays_sticky(datafile_text, datafile_dict):
    class LookupOnly(DictProfiles):
        def save(self, profile: dict) -> None:
            raise RuntimeError("read-only replica")

    with experiment.Client(datafile=datafile_text, profile_store=LookupOnly()) as c:
        first = checkout_variations(c, USERS[:10])
        c.start(all_to(datafile_dict, 0, "61002"))
        assert checkout_variations(c, list(first)) == first      # the bounded cache still holds them
        assert c.profile_stats()["errors"] == len(first)


# ------------------------------------------------------------------------------------------------
# Redis
# ------------------------------------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    def __init__(self, port: int, *extra_args: str) -> None:
        self.port = port
        self.extra_args = extra_args
        self.process: Optional[subprocess.Popen] = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             *self.extra_args],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                if self.cli("PING") == "PONG":
                    return
            except subprocess.CalledProcessError:
                pass
            time.sleep(0.05)
        raise RuntimeError("redis-server did not start on port %d" % self.port)

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None

    def cli(self, *args: str) -> str:
        return subprocess.run(["redis-cli", "-p", str(self.port), *args], check=True, capture_output=True,
                              text=True, timeout=10).stdout.strip()


def _started_redis(*extra_args: str) -> RedisServer:
    # A missing server fails the test: make test-deps installs redis-server.
    assert shutil.which("redis-server") and shutil.which("redis-cli"), "redis-server is not installed"
    server = RedisServer(_free_port(), *extra_args)
    server.start()
    return server


@pytest.fixture()
def redis_server():
    server = _started_redis()
    yield server
    server.stop()


@pytest.fixture()
def redis_server_without_getex():
    """A server that refuses GETEX as Redis before 6.2 does."""
    server = _started_redis("--rename-command", "GETEX", "")
    yield server
    server.stop()


def _redis_store(server: RedisServer, **extra: Any) -> dict:
    return {"redis": dict({"url": "redis://127.0.0.1:%d/0" % server.port, "prefix": "test:"}, **extra)}


def test_two_servers_on_one_redis_agree(redis_server, datafile_text, datafile_dict):
    store = _redis_store(redis_server, ttl_s=3600)
    shifted = all_to(datafile_dict, 0, "61002")
    with experiment.Client(datafile=datafile_text, profile_store=store) as a, \
            experiment.Client(datafile=shifted, profile_store=store) as b:
        first = checkout_variations(a, USERS)
        assert checkout_variations(b, list(first)) == first
        assert {u: b.trigger_experiment(u, CHECKOUT_ID) for u in first} == \
            {u: {"control": "61001", "treatment": "61002"}[v] for u, v in first.items()}
        assert a.profile_stats()["store"] == "redis" and a.profile_stats()["errors"] == 0
    user = next(u for u, v in first.items() if v == "control")
    assert json.loads(redis_server.cli("GET", "test:" + user)) == {
        "user_id": user, "experiment_bucket_map": {CHECKOUT_ID: {"variation_id": "61001"}}}
    assert 3500 < int(redis_server.cli("TTL", "test:" + user)) <= 3600


def test_redis_lookup_refreshes_the_expiry_of_a_returning_user(redis_server, datafile_text):
    store = _redis_store(redis_server, ttl_s=3600)
    with experiment.Client(datafile=datafile_text, profile_store=store) as c:
        first = checkout_variations(c, USERS[:20])
    user = next(iter(first))
    redis_server.cli("EXPIRE", "test:" + user, "60")       # as if the profile had been saved long ago
    with experiment.Client(datafile=datafile_text, profile_store=store) as c:   # a fresh cache: a real lookup
        assert checkout_variations(c, [user]) == {user: first[user]}
        assert c.profile_stats()["errors"] == 0
    assert 3500 < int(redis_server.cli("TTL", "test:" + user)) <= 3600


def test_redis_before_getex_still_serves_lookups(redis_server_without_getex, datafile_text, caplog):
    server = redis_server_without_getex
    store = _redis_store(server, ttl_s=3600)
    with experiment.Client(datafile=datafile_text, profile_store=store) as c:
        first = checkout_variations(c, USERS[:20])
    with caplog.at_level(logging.INFO, logger="experiment"):
        with experiment.Client(datafile=datafile_text, profile_store=store, log_level="info") as c:
            assert checkout_variations(c, list(first)) == first
            assert c.profile_stats()["errors"] == 0
    assert any("no GETEX" in r.getMessage() for r in caplog.records)


def test_redis_without_ttl_leaves_profiles_persistent(redis_server, datafile_text):
    with experiment.Client(datafile=datafile_text, profile_store=_redis_store(redis_server)) as c:
        first = checkout_variations(c, USERS[:3])
    with experiment.Client(datafile=datafile_text, profile_store=_redis_store(redis_server)) as c:
        assert checkout_variations(c, list(first)) == first
    assert {redis_server.cli("TTL", "test:" + u) for u in first} == {"-1"}


def test_redis_restart_mid_run_never_fails_a_decision(redis_server, datafile_text):
    with experiment.Client(datafile=datafile_text, profile_store=_redis_store(redis_server)) as c:
        checkout_variations(c, USERS[:20])
        redis_server.stop()
        started = time.monotonic()
        outage = checkout_variations(c, ["outage-%d" % i for i in range(20)])
        assert outage and all(v in ("control", "treatment") for v in outage.values())
        assert time.monotonic() - started < 10          # bounded by timeouts, not hanging
        errors = c.profile_stats()["errors"]
        assert errors > 0
        redis_server.start()
        deadline = time.monotonic() + 10
        while redis_server.cli("EXISTS", "test:after") != "1" and time.monotonic() < deadline:
            c.decide("after", "checkout_flow", options=["IGNORE_USER_PROFILE_SERVICE"])
            c.decide_all("after-%d" % int(time.monotonic() * 1000))
            c.decide("after", "checkout_flow")
            time.sleep(0.1)
        assert redis_server.cli("EXISTS", "test:after") == "1", "no reconnect after redis came back"


REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def test_c_host_survives_redis_going_away(redis_server, tmp_path, datafile_text):
    """A C program (default SIGPIPE action, unlike Python) decides through Redis while the server is killed
    and restarted: no call fails and the process is not killed by SIGPIPE."""
    cc = shutil.which(os.environ.get("CC", "cc"))
    assert cc is not None, "no C compiler"
    libdir = os.path.dirname(os.path.realpath(experiment.library_path))
    program = str(tmp_path / "redis_outage")
    subprocess.run([cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-O2", "-I", os.path.join(REPO_ROOT, "include"),
                    os.path.join(REPO_ROOT, "tests", "profiles", "redis_outage.c"), "-o", program,
                    "-L" + libdir, "-l:" + os.path.basename(experiment.library_path), "-Wl,-rpath," + libdir],
                   check=True)
    datafile = tmp_path / "datafile.json"
    datafile.write_text(datafile_text)
    url = "redis://127.0.0.1:%d/0" % redis_server.port
    host = subprocess.Popen([program, str(datafile), url, "4"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    time.sleep(1.0)
    redis_server.stop()
    time.sleep(1.0)
    redis_server.start()
    out, err = host.communicate(timeout=60)
    assert host.returncode == 0, (host.returncode, err)
    stats = json.loads(out)
    assert stats["store"] == "redis" and stats["errors"] > 0 and stats["saves"] > 0
    assert redis_server.cli("DBSIZE") != "0"          # written again after the restart


def test_unreachable_redis_at_create(datafile_text):
    port = _free_port()     # nothing listens here
    with experiment.Client(datafile=datafile_text,
                           profile_store={"redis": {"url": "redis://127.0.0.1:%d/0" % port, "timeout_ms": 100}}) as c:
        assert c.decide("u2", "checkout_flow", {"country": "NL", "age": 30}).variation_key == "control"
        assert c.profile_stats()["errors"] >= 1


# ------------------------------------------------------------------------------------------------
# Differential: optimizely-sdk 5.7.0 with the same user profile service
# ------------------------------------------------------------------------------------------------

from optimizely import optimizely as optimizely_mod  # noqa: E402
from optimizely.helpers.sdk_settings import OptimizelySdkSettings  # noqa: E402
from optimizely.logger import NoOpLogger  # noqa: E402

DIFF_SEEDS = list(range(int(os.environ.get("PROFILE_DIFF_SEEDS", "12"))))
DIFF_USERS = int(os.environ.get("PROFILE_DIFF_USERS", "120"))


def _reference(datafile_text: str, store: DictProfiles) -> Any:
    ref = optimizely_mod.Optimizely(datafile=datafile_text, logger=NoOpLogger(), user_profile_service=store,
                                    settings=OptimizelySdkSettings(odp_disabled=True))
    assert ref.is_valid
    return ref


def _prefill(df: dict, users: List[str], rng: random.Random) -> Dict[str, dict]:
    """Profiles naming real experiments with real, deleted or foreign variation ids, and unknown experiments."""
    experiments = list(df.get("experiments", []))
    for group in df.get("groups", []):
        experiments += group.get("experiments", [])
    all_variation_ids = [v["id"] for e in experiments for v in e.get("variations", [])] or ["none"]
    profiles: Dict[str, dict] = {}
    for user in users:
        bucket_map: Dict[str, dict] = {}
        for e in rng.sample(experiments, min(len(experiments), rng.randint(0, 4))):
            choice = rng.random()
            if choice < 0.7 and e.get("variations"):
                bucket_map[e["id"]] = {"variation_id": rng.choice(e["variations"])["id"]}
            elif choice < 0.85:
                bucket_map[e["id"]] = {"variation_id": rng.choice(all_variation_ids)}
            else:
                bucket_map[e["id"]] = {"variation_id": "deleted-%d" % rng.randrange(100)}
        if rng.random() < 0.2:
            bucket_map["no-such-experiment"] = {"variation_id": "x"}
        profiles[user] = {"user_id": user, "experiment_bucket_map": bucket_map}
    return profiles


def _summary(decisions: Dict[str, Any]) -> Dict[str, tuple]:
    # Reasons in general are compared by test_differential.py; here the sticky one must match word for word.
    return {k: (d.enabled, d.variation_key, d.rule_key, [r for r in d.reasons if "from user profile" in r])
            for k, d in decisions.items()}


@pytest.mark.parametrize("prefilled", [False, True], ids=["empty", "prefilled"])
@pytest.mark.parametrize("seed", DIFF_SEEDS)
def test_sticky_decisions_equal_the_reference(seed, prefilled):
    df = generate_datafile(seed)
    text = json.dumps(df)
    users = [(u, a) for u, a in generate_users(seed, df, DIFF_USERS)]
    ids = sorted({u for u, _ in users})
    initial = _prefill(df, ids, random.Random("profiles-%d" % seed)) if prefilled else {}
    ref_store, our_store = DictProfiles(initial), DictProfiles(initial)
    ref = _reference(text, ref_store)
    mismatches = []
    with experiment.Client(datafile=text, profile_store=our_store) as ours:
        experiment_keys = ours.config["experiments"]
        rng = random.Random("ops-%d" % seed)
        for user, attrs in users:
            op = rng.random()
            options = ["DISABLE_DECISION_EVENT"] + (["IGNORE_USER_PROFILE_SERVICE"] if rng.random() < 0.1 else [])
            if rng.random() < 0.3:
                options.append("INCLUDE_REASONS")     # the reasons must match too (sticky ones included)
            if op < 0.15 and experiment_keys:
                key = rng.choice(experiment_keys)      # legacy get_variation: sticky through the same store
                expected = ref.get_variation(key, user, dict(attrs))
                got = ours.get_variation(key, user, attrs)
            elif op < 0.6:
                expected = _summary(ref.create_user_context(user, dict(attrs)).decide_all(options))
                got = _summary(ours.decide_all(user, attrs, options))
            else:
                flags = [f["key"] for f in df.get("featureFlags", [])]
                keys = rng.sample(flags, min(len(flags), 2))
                expected = _summary(ref.create_user_context(user, dict(attrs)).decide_for_keys(keys, options))
                got = _summary(ours.decide_for_keys(user, keys, attrs, options))
            if expected != got:
                mismatches.append((user, attrs, expected, got))
    ref.close()
    assert mismatches == [], mismatches[:3]
    # The same profiles were saved, entry for entry (the reference also re-saves unchanged profiles of
    # users whose lookup found nothing usable; compare the final state, which is what sticks).
    assert our_store.profiles == ref_store.profiles
