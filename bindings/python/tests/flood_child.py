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


def main() -> None:
    datafile_path, state_dir, total, checkpoint = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    with open(datafile_path) as f:
        datafile = f.read()
    client = experiment.Client(datafile=datafile, state_dir=state_dir, event_endpoint="none",
                               user_store_capacity=1000, log_level="error")
    unknown_refused = 0
    for i in range(total):
        user = "flood-user-%d" % i
        client.decide(user, "checkout_flow")                      # sticky profile: cache + state file
        client.set_user_property(user, "plan", "p%d" % i)       # user properties: LRU of user_store_capacity
        client.set_qualified_segments(user, ["segment-%d" % i])  # qualified segments: LRU
        client.set_forced_variation("checkout_test", user, "control")   # an override set ...
        client.set_forced_variation("checkout_test", user, None)        # ... and cleared: nothing stays
        client.track("purchase", user, tags={"tag-%d" % i: i})  # a unique tag key each time
        try:
            client.track("unknown-event-%d" % i, user)             # unknown event keys are refused
        except experiment.UnknownEventError:
            unknown_refused += 1
        if (i + 1) % checkpoint == 0:
            print(json.dumps({"users": i + 1, "rss_kib": rss_kib(),
                              "profiles": client.profile_stats(), "events": client.stats()}), flush=True)
    client.close()
    print(json.dumps({"done": True, "unknown_refused": unknown_refused}), flush=True)


if __name__ == "__main__":
    main()
