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
