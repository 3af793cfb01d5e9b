"""Memory stays bounded under a flood of unique user ids, event keys and tags (README "Limits"): a child
process (flood_child.py) drives one client through the real library and reports its resident memory at
checkpoints; after warm-up the curve must be flat (a generous bound: an unbounded per-user structure
would grow by tens of MB over these floods)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any, List

from conftest import DATAFILE_PATH, HERE


def flood(tmp_path: Any, mode: str, users: int, checkpoint: int, capacity: int = 1000) -> List[dict]:
    env = dict(os.environ, EXPERIMENT_EVENT_ENDPOINT="none")
    result = subprocess.run([sys.executable, os.path.join(HERE, "flood_child.py"), DATAFILE_PATH,
                             str(tmp_path / "state"), mode, str(users), str(checkpoint), str(capacity)],
                            capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert lines[-1]["done"] is True
    return lines[:-1]


def test_memory_flat_under_200k_unique_users_keys_and_tags(tmp_path):
    """decide (profile cache), user properties, qualified segments, a unique tag key per track and an
    unknown event key per user, 200,000 users, user_store_capacity 1000."""
    points = flood(tmp_path, "memory", 200_000, 25_000)
    rss = [p["rss_kib"] for p in points]
    assert rss[-1] - rss[1] < 16 * 1024, rss        # after warm-up (50k users): < 16 MiB more at 200k
    assert points[-1]["profiles"]["cached"] <= 1000
    assert points[-1]["events"]["dropped"] > 0       # event_endpoint none: counted, not kept


def test_memory_flat_with_profiles_and_overrides_in_the_state_file(tmp_path):
    """Sticky profiles saved to SQLite and forced variations set then cleared for 30,000 users."""
    points = flood(tmp_path, "state", 30_000, 10_000)
    rss = [p["rss_kib"] for p in points]
    assert rss[-1] - rss[0] < 16 * 1024, rss
    assert points[-1]["profiles"]["cached"] <= 1000 and points[-1]["profiles"]["errors"] == 0


def test_the_measurement_sees_growth(tmp_path):
    """The same flood with a user store large enough to keep every user grows: the flat curves above
    come from the bounds, not from a blind measurement."""
    points = flood(tmp_path, "memory", 60_000, 20_000, capacity=1_000_000)
    rss = [p["rss_kib"] for p in points]
    assert rss[-1] - rss[0] > 8 * 1024, rss


# -- forced state (issue 18, item 7) ----------------------------------------------------------------

def test_memory_flat_with_forced_state_that_stays(tmp_path):
    """A forced decision, a forced variation and a forced membership for each of 40,000 users: they go to
    the state file, memory keeps at most user_store_capacity users' worth."""
    points = flood(tmp_path, "forced", 40_000, 10_000)
    rss = [p["rss_kib"] for p in points]
    assert rss[-1] - rss[0] < 8 * 1024, rss
    assert points[-1]["profiles"]["overrides_cached"] <= 1000, points[-1]
    assert points[-1]["profiles"]["override_errors"] == 0


def test_the_forced_state_measurement_sees_growth(tmp_path):
    """The same flood with a cache large enough for every user grows (as every flood did before the bound):
    the flat curve above comes from the bound."""
    points = flood(tmp_path, "forced", 40_000, 10_000, capacity=1_000_000)
    rss = [p["rss_kib"] for p in points]
    assert rss[-1] - rss[0] > 8 * 1024, rss
    assert points[-1]["profiles"]["overrides_cached"] == 40_000


def test_forced_state_applies_after_eviction_and_after_restart(tmp_path, datafile_text):
    """500 users' forced state through a cache of 50: every user is still forced when decided again (read
    back from the state file), after a restart nothing is loaded until used, and a removal persists."""
    import experiment

    state = str(tmp_path / "state")
    users = ["forced-%d" % i for i in range(500)]

    def client() -> "experiment.Client":
        return experiment.Client(datafile=datafile_text, state_dir=state, user_store_capacity=50,
                                 event_endpoint="none")

    def check(c: "experiment.Client", removed: set) -> None:
        for user in users:
            checkout = c.decide(user, "checkout_flow")
            if user in removed:
                assert checkout.variation_key != "treatment" or checkout.rule_key == "checkout_test", checkout
            else:
                assert checkout.variation_key == "treatment" and checkout.rule_key is None, (user, checkout)
            assert c.decide(user, "search_ranking").variation_key == "neural", user
            assert c.get_forced_variation("search_test", user) == "neural"
        assert c.profile_stats()["overrides_cached"] <= 50

    with client() as c:
        for user in users:
            c.set_forced_decision(user, "checkout_flow", "treatment")
            c.set_forced_variation("search_test", user, "neural")
            c.force_exclude(user, "60004")
            assert c.profile_stats()["overrides_cached"] <= 50
        check(c, set())
        c.remove_forced_decisions(users[0])
        check(c, {users[0]})
    with client() as c:
        assert c.profile_stats()["overrides_cached"] == 0   # loaded lazily, not at start
        check(c, {users[0]})
        assert c.profile_stats()["override_errors"] == 0
