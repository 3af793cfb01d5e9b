"""Run by test_bounds.py in a child process: floods one client with unique user ids, event keys and tags,
and prints the process's resident memory (VmRSS, KiB) at checkpoints as JSON lines."""

from __future__ import annotations

import json
import sys

import experiment


def rss_kib() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


class NoStore:
    """A host profile store that keeps nothing: the flood exercises the library's profile cache only."""

    def lookup(self, user_id: str) -> None:
        return None

    def save(self, profile: dict) -> None:
        pass


def main() -> None:
    """argv: datafile, state_dir, mode ("memory": in-memory stores, cheap calls; "state": profiles and
    overrides written to the state file; "forced": forced decisions, variations and memberships that stay), users, checkpoint interval, optional user_store_capacity."""
    datafile_path, state_dir, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    total, checkpoint = int(sys.argv[4]), int(sys.argv[5])
    capacity = int(sys.argv[6]) if len(sys.argv) > 6 else 1000
    with open(datafile_path) as f:
        datafile = f.read()
    store = NoStore() if mode == "memory" else "sqlite"
    client = experiment.Client(datafile=datafile, state_dir=state_dir, event_endpoint="none",
                               user_store_capacity=capacity, log_level="error", profile_store=store)
    unknown_refused = 0
    for i in range(total):
        user = "flood-user-%d" % i
        client.decide(user, "checkout_flow")                      # sticky profile cache (LRU)
        if mode == "memory":
            client.set_user_property(user, "plan", "p%d" % i)       # user properties: LRU
            client.set_qualified_segments(user, ["segment-%d" % i])  # qualified segments: LRU
            client.track("purchase", user, tags={"tag-%d" % i: i})  # a unique tag key each time
            try:
                client.track("unknown-event-%d" % i, user)             # unknown event keys are refused
            except experiment.UnknownEventError:
                unknown_refused += 1
        elif mode == "forced":
            # Forced state that stays: a forced decision, a forced variation and a forced membership each.
            client.set_forced_decision(user, "checkout_flow", "treatment")
            client.set_forced_variation("search_test", user, "neural")
            client.force_exclude(user, "60004")
        else:
            client.set_forced_variation("checkout_test", user, "control")   # an override set ...
            client.set_forced_variation("checkout_test", user, None)        # ... and cleared: nothing stays
        if (i + 1) % checkpoint == 0:
            print(json.dumps({"users": i + 1, "rss_kib": rss_kib(),
                              "profiles": client.profile_stats(), "events": client.stats()}), flush=True)
    client.close()
    print(json.dumps({"done": True, "unknown_refused": unknown_refused}), flush=True)


if __name__ == "__main__":
    main()
