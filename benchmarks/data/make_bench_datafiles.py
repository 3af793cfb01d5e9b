#!/usr/bin/env python3
"""Generates benchmarks/data/bench_50_flags.json, the datafile of the decide-all benchmark, and on request
the datafiles of the load benchmark (about 10 KB, 1 MB and 10 MB: the same mix of flags, repeated).

A deterministic mix of 50 feature flags that looks like a mid-sized production project:

  flags  0-14  an A/B experiment (half of them audience-targeted) plus a rollout with a targeted rule
  flags 15-34  rollouts only: one or two targeted delivery rules, then an everyone-else percentage
  flags 35-44  experiments in two mutually exclusive groups (5 per group), plus an everyone-else rollout
  flags 45-49  plain on/off kill switches (everyone-else rule at 100%)

Variables of every type (string, integer, double, boolean, json) are spread over the flags. The
attributes are the ones the benchmarks send: country, age, app_version (see users below).

Usage:  python3 benchmarks/data/make_bench_datafiles.py [--check] [--load-sizes DIR]
  --check            also loads both benchmark datafiles in the reference SDK (optimizely-sdk) and verifies
                     that it accepts them.
  --load-sizes DIR   writes load_10k.json, load_1m.json and load_10m.json into DIR (not committed: the
                     load benchmark generates them).
"""
import json
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

DUMMY_CONDITIONS = ('["or", {"match": "exact", "name": "$opt_dummy_attribute", '
                    '"type": "custom_attribute", "value": "$opt_dummy_value"}]')


def cond(name, match, value):
    return {"name": name, "type": "custom_attribute", "match": match, "value": value}


AUDIENCES = [
    ("1001", "Netherlands", ["or", cond("country", "exact", "NL")]),
    ("1002", "DACH or Benelux", ["or", cond("country", "exact", "DE"), cond("country", "exact", "NL"),
                                 cond("country", "exact", "FR")]),
    ("1003", "Adults", ["and", cond("age", "ge", 18)]),
    ("1004", "Under 30", ["and", cond("age", "lt", 30)]),
    ("1005", "App 2.4+", ["and", cond("app_version", "semver_ge", "2.4.0")]),
    ("1006", "EU adults on app 2.x",
     ["and", ["or", cond("country", "exact", "NL"), cond("country", "exact", "DE")],
      cond("age", "ge", 18), cond("app_version", "semver_ge", "2.0.0"),
      cond("app_version", "semver_lt", "3.0.0")]),
    ("1007", "Not US", ["not", cond("country", "exact", "US")]),
    ("1008", "Young or new app", ["or", cond("age", "le", 25), cond("app_version", "semver_gt", "3.0.0")]),
]

VARIABLE_KINDS = [
    ("string", None, lambda r: r.choice(["blue", "green", "red", "grey"])),
    ("integer", None, lambda r: str(r.randint(0, 100))),
    ("double", None, lambda r: "%.2f" % r.uniform(0, 10)),
    ("boolean", None, lambda r: r.choice(["true", "false"])),
    ("string", "json", lambda r: json.dumps({"limit": r.randint(1, 50), "mode": r.choice(["a", "b"])})),
]


class Ids:
    def __init__(self, start):
        self.next = start

    def __call__(self):
        self.next += 1
        return str(self.next)


def make_50_flags():
    return make_flags(50)


def make_flags(count):
    """`count` flags; every block of 50 repeats the mix described above (with its own two groups)."""
    rng = random.Random(20240521)
    new_id = Ids(100000)
    audience_ids = [a[0] for a in AUDIENCES]
    flags, rollouts, experiments, groups = [], [], [], []
    group_slots = {}
    variable_gen = {}  # variable id -> value generator of its type

    def variables_for(flag_index):
        out = []
        for v in range(1 + flag_index % 3):
            kind, sub, gen = VARIABLE_KINDS[(flag_index + v) % len(VARIABLE_KINDS)]
            var = {"id": new_id(), "key": "var_%d" % v, "type": kind, "defaultValue": gen(rng)}
            if sub:
                var["subType"] = sub
            out.append(var)
        return out

    def variation(key, enabled, variables):
        return {"id": new_id(), "key": key, "featureEnabled": enabled,
                "variables": [{"id": v["id"], "value": variable_gen[v["id"]](rng)} for v in variables]}

    def rule(key, layer_id, audiences, variations, percent):
        # Traffic split evenly over the variations, covering `percent` of users.
        end, allocation = 0, []
        share = percent * 100 // len(variations)
        for i, var in enumerate(variations):
            end = percent * 100 if i == len(variations) - 1 else end + share
            allocation.append({"entityId": var["id"], "endOfRange": end})
        conditions = ["or"] + audiences if audiences else []
        return {"id": new_id(), "key": key, "layerId": layer_id, "status": "Running",
                "audienceIds": list(audiences), "audienceConditions": conditions, "forcedVariations": {},
                "variations": variations, "trafficAllocation": allocation}

    for number in range(count):
        index = number % 50
        key = "flag_%02d" % number
        flag_id = new_id()
        variables = variables_for(index)
        for v in variables:
            kind = [k for k in VARIABLE_KINDS if k[0] == v["type"] and k[1] == v.get("subType")][0]
            variable_gen[v["id"]] = kind[2]
        rollout_id = new_id()
        rollout_rules = []
        experiment_ids = []

        if index < 15:
            audiences = [rng.choice(audience_ids)] if index % 2 == 0 else []
            exp = rule(key + "_ab", new_id(), audiences,
                       [variation("control", True, variables), variation("treatment", True, variables)],
                       rng.choice([20, 50, 100]))
            experiments.append(exp)
            experiment_ids.append(exp["id"])
            rollout_rules.append(rule(key + "_targeted", rollout_id, [rng.choice(audience_ids)],
                                      [variation("on", True, variables)], 50))
        elif index < 35:
            for r in range(1 + index % 2):
                rollout_rules.append(rule("%s_rule_%d" % (key, r), rollout_id, [rng.choice(audience_ids)],
                                          [variation("on", True, variables)], rng.choice([10, 50, 100])))
        elif index < 45:
            audiences = [rng.choice(audience_ids)] if index % 3 == 0 else []
            exp = rule(key + "_grouped", new_id(), audiences,
                       [variation("a", True, variables), variation("b", True, variables)], 100)
            group_slots.setdefault(2 * (number // 50) + index % 2, []).append(exp)
            experiment_ids.append(exp["id"])

        everyone_percent = 100 if index >= 45 else rng.choice([0, 25, 50, 100])
        everyone = rule("default-rollout-%s-%s" % (rollout_id, flag_id), rollout_id, [],
                        [variation("everyone_on" if index >= 45 else "off", index >= 45, variables)],
                        everyone_percent)
        rollout_rules.append(everyone)
        rollouts.append({"id": rollout_id, "experiments": rollout_rules})
        flags.append({"id": flag_id, "key": key, "rolloutId": rollout_id, "experimentIds": experiment_ids,
                      "variables": variables})

    for slot, members in sorted(group_slots.items()):
        share = 10000 // len(members)
        allocation = [{"entityId": e["id"], "endOfRange": 10000 if i == len(members) - 1 else (i + 1) * share}
                      for i, e in enumerate(members)]
        groups.append({"id": "9%04d" % slot, "policy": "random", "trafficAllocation": allocation,
                       "experiments": members})

    return {
        "version": "4",
        "accountId": "10000001",
        "projectId": "10000050",
        "environmentKey": "production",
        "sdkKey": "Bench50Flags",
        "revision": "1",
        "anonymizeIP": True,
        "botFiltering": False,
        "sendFlagDecisions": True,
        "integrations": [],
        "attributes": [{"id": "11", "key": "country"}, {"id": "12", "key": "age"},
                       {"id": "13", "key": "app_version"}],
        "events": [{"id": "21", "key": "purchase", "experimentIds": [e["id"] for e in experiments]}],
        "audiences": [{"id": i, "name": n, "conditions": DUMMY_CONDITIONS} for i, n, _ in AUDIENCES],
        "typedAudiences": [{"id": i, "name": n, "conditions": c} for i, n, c in AUDIENCES],
        "experiments": experiments,
        "groups": groups,
        "featureFlags": flags,
        "rollouts": rollouts,
    }


def check_with_reference(paths):
    from optimizely import optimizely

    class NoDispatch:
        def dispatch_event(self, event):
            pass

    for path in paths:
        with open(path) as f:
            client = optimizely.Optimizely(datafile=f.read(), event_dispatcher=NoDispatch())
        if not client.is_valid:
            sys.exit("reference SDK rejects %s" % path)
        decisions = client.create_user_context("user-1", {"country": "NL", "age": 30}).decide_all()
        enabled = sum(1 for d in decisions.values() if d.enabled)
        print("%s: accepted by optimizely-sdk (%d flags, %d enabled for user-1)"
              % (os.path.relpath(path), len(decisions), enabled))


LOAD_SIZES = [("load_10k.json", 4), ("load_1m.json", 480), ("load_10m.json", 4800)]


def write_load_datafiles(directory):
    for name, flag_count in LOAD_SIZES:
        path = os.path.join(directory, name)
        with open(path, "w") as f:
            json.dump(make_flags(flag_count), f, indent=1)
            f.write("\n")
        print("wrote %s (%d flags, %d bytes)" % (path, flag_count, os.path.getsize(path)))


def main():
    if "--load-sizes" in sys.argv[1:]:
        write_load_datafiles(sys.argv[sys.argv.index("--load-sizes") + 1])
        return
    out = os.path.join(HERE, "bench_50_flags.json")
    with open(out, "w") as f:
        json.dump(make_50_flags(), f, indent=1)
        f.write("\n")
    print("wrote", os.path.relpath(out))
    if "--check" in sys.argv[1:]:
        check_with_reference([out, os.path.join(HERE, "bench_ab_rollout.json")])


if __name__ == "__main__":
    main()
