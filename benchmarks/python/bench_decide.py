#!/usr/bin/env python3
"""libexperiment's Python binding vs Optimizely's reference SDK (optimizely-sdk), side by side.

In one run, on the same datafile and the same users:

  1. checks that both decide the same (flag key, enabled, variation, rule, variables — types included)
     for every user, and for every flag of the decide-all datafile (AssertionError otherwise);
  2. times a decide of one flag, for ours and for optimizely, each with a speedup row:
       variation key only   ours: client.decide(..., EXCLUDE_VARIABLES).variation_key
                            optimizely: the same option (the binding decodes nothing it is not asked for)
       full Decision        ours: client.decide(...) and every field read (variables parsed)
                            optimizely: user_context.decide(flag)
     Optimizely is timed twice: with a new user context per decide (create_user_context(user, attrs), as
     an app serving requests does) and with one pre-built context per user reused. Decision events are
     disabled (DISABLE_DECISION_EVENT) on both sides, then the whole set is repeated with impression
     events handed to a no-op dispatcher on both sides ("+events");
  3. times decide_all over the 50-flag datafile the same way;
  4. when eppo-server-sdk (a Python SDK over a Rust core) is installed, times its assignment of an
     equivalent flag written in its own configuration format (the same A/B split at 50% traffic, then the
     same audience at 50%) for the same users: another native-core engine, for scale. Its results are
     not compared (different hashing), and its assignment logging is off, like our events.

Each timing is the median (--best: the minimum) over --repeats runs of a loop over all users, measured
with time.perf_counter_ns; the result is µs per call. The speedup is optimizely's time / ours.

Users are the first --users of the 10,000 the C benchmark uses (same ids, same attributes).

--instructions prints, instead of timings, the instructions per call of our three decide rows (events off)
and of the bare loop, counted by valgrind's callgrind: the process runs once with --instruction-calls calls
and once with none, and the difference is divided by the calls. Unlike wall clock on a shared machine, these
counts repeat within a few percent from run to run (PYTHONHASHSEED is fixed for the children).

The binding is loaded from bindings/python (added to sys.path when `experiment` is not importable);
it finds libexperiment.so through EXPERIMENT_LIBRARY or the repository build (.build/release).

Usage: python3 benchmarks/python/bench_decide.py [--datafile F] [--flag K] [--all-datafile F]
           [--users N] [--all-users N] [--repeats R] [--results FILE] [--instructions [--instruction-calls N]]
"""
import argparse
import gc
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

try:
    import experiment
except ImportError:
    sys.path.insert(0, os.path.join(REPO, "bindings", "python"))
    import experiment

if "--instruction-child" not in sys.argv:  # (children counting our instructions need no reference SDK)
    from optimizely import optimizely
    from optimizely.decision.optimizely_decide_option import OptimizelyDecideOption
    from optimizely.helpers.sdk_settings import OptimizelySdkSettings
    from optimizely.logger import NoOpLogger
    from optimizely.version import __version__ as optimizely_version

COUNTRIES = ["NL", "DE", "FR", "US", "GB"]
APP_VERSIONS = ["1.9.3", "2.0.0", "2.4.1", "3.1.0"]


def user_attributes(i):
    """User i of the benchmarks. Keep in sync with build_users() in benchmarks/c/bench_decide.c."""
    return {"country": COUNTRIES[i % 5], "age": 16 + (i * 7) % 60, "app_version": APP_VERSIONS[(i // 5) % 4]}


def eppo_equivalent_flag(flag_key):
    """Eppo's universal flag configuration for a flag like bench_ab_rollout.json's: an A/B test on 50% of
    users (25% control, 25% treatment), then "on" for 50% of EU adults on app 2.x, else the default."""
    def shards(salt, start, end):
        return {"salt": salt, "ranges": [{"start": start, "end": end}]}
    eu_adults_on_2x = [{"attribute": "country", "operator": "ONE_OF", "value": ["NL", "DE", "FR"]},
                       {"attribute": "age", "operator": "GTE", "value": 18},
                       {"attribute": "app_version", "operator": "GTE", "value": "2.0.0"}]
    return {"format": "SERVER", "createdAt": "2026-01-01T00:00:00Z", "environment": {"name": "bench"}, "flags": {
        flag_key: {"key": flag_key, "enabled": True, "variationType": "STRING", "totalShards": 10000,
                   "variations": {k: {"key": k, "value": k} for k in ("control", "treatment", "on")},
                   "allocations": [
                       {"key": "ab", "doLog": False, "rules": [], "splits": [
                           {"variationKey": "control", "shards": [shards("ab-traffic", 0, 5000), shards("ab-split", 0, 5000)]},
                           {"variationKey": "treatment", "shards": [shards("ab-traffic", 0, 5000), shards("ab-split", 5000, 10000)]}]},
                       {"key": "rollout", "doLog": False, "rules": [{"conditions": eu_adults_on_2x}], "splits": [
                           {"variationKey": "on", "shards": [shards("rollout-traffic", 0, 5000)]}]}]}}}


def make_eppo(flag_key):
    """An eppo-server-sdk client on the equivalent flag, offline; None when the package is not installed."""
    try:
        import eppo_client
        from eppo_client import Configuration
        from eppo_client.assignment_logger import AssignmentLogger
        from eppo_client.config import Config
    except ImportError:
        return None

    class NoLog(AssignmentLogger):
        def log_assignment(self, event):
            pass

    flags = json.dumps(eppo_equivalent_flag(flag_key)).encode()
    eppo_client.init(Config(api_key="offline-benchmark", base_url="http://127.0.0.1:9", assignment_logger=NoLog(),
                            poll_interval_seconds=None, initial_configuration=Configuration(flags_configuration=flags)))
    return eppo_client.get_instance()


def make_users(count):
    return [("user-%d" % i, user_attributes(i)) for i in range(count)]


class CountingDispatcher:
    """An event dispatcher for both SDKs: counts events instead of sending them."""

    def __init__(self):
        self.count = 0

    def dispatch_event(self, event):
        self.count += 1


def make_reference(datafile_text, dispatcher):
    client = optimizely.Optimizely(datafile=datafile_text, event_dispatcher=dispatcher, logger=NoOpLogger(),
                                   settings=OptimizelySdkSettings(odp_disabled=True))
    if not client.is_valid:
        sys.exit("optimizely-sdk rejects the datafile")
    return client


def make_ours(datafile_text, dispatcher):
    # Like the reference here (no user profile service): stateless decisions.
    return experiment.Client(sdk_key="bench", datafile=datafile_text, event_dispatcher=dispatcher, profile_store="none")


# ------------------------------------------------------------------------------------------------
# Equality
# ------------------------------------------------------------------------------------------------

def canonical(flag_key, enabled, variation_key, rule_key, variables):
    # json.dumps keeps types apart that == would not: 1 vs 1.0 vs True.
    return json.dumps({"flag_key": flag_key, "enabled": enabled, "variation_key": variation_key,
                       "rule_key": rule_key, "variables": variables}, sort_keys=True)


def ours_canonical(d):
    return canonical(d.flag_key, d.enabled, d.variation_key, d.rule_key, d.variables)


def reference_canonical(d):
    return canonical(d.flag_key, d.enabled, d.variation_key, d.rule_key, d.variables)


def check_equal(ours, reference, users, flag_key, all_flags=False):
    mismatches = []
    for user_id, attributes in users:
        context = reference.create_user_context(user_id, attributes)
        if all_flags:
            theirs = {k: reference_canonical(d) for k, d in context.decide_all(NO_EVENT_REF).items()}
            mine = {k: ours_canonical(d) for k, d in ours.decide_all(user_id, attributes, NO_EVENT_OURS).items()}
        else:
            theirs = reference_canonical(context.decide(flag_key, NO_EVENT_REF))
            mine = ours_canonical(ours.decide(user_id, flag_key, attributes, NO_EVENT_OURS))
        if mine != theirs:
            mismatches.append((user_id, attributes, mine, theirs))
    for user_id, attributes, mine, theirs in mismatches[:5]:
        print("MISMATCH %s %s\n  ours:       %s\n  optimizely: %s" % (user_id, attributes, mine, theirs),
              file=sys.stderr)
    assert not mismatches, "%d of %d users decided differently from optimizely-sdk" % (len(mismatches), len(users))


NO_EVENT_OURS = ("DISABLE_DECISION_EVENT",)
NO_EVENT_REF = [OptimizelyDecideOption.DISABLE_DECISION_EVENT] if "OptimizelyDecideOption" in globals() else None


# ------------------------------------------------------------------------------------------------
# Timing
# ------------------------------------------------------------------------------------------------

def time_per_call_us(loop, calls, repeats, best=False):
    """Median (with best: minimum) over `repeats` runs of loop() (which makes `calls` calls), in µs per call."""
    loop()  # warm-up
    samples = []
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter_ns()
        loop()
        samples.append((time.perf_counter_ns() - start) / calls / 1000.0)
    return min(samples) if best else statistics.median(samples)


def ours_decide_loop(ours, users, flag_key, options, read_all):
    decide = ours.decide
    if read_all:
        def loop():
            for user_id, attributes in users:
                d = decide(user_id, flag_key, attributes, options)
                (d.flag_key, d.enabled, d.variation_key, d.rule_key, d.variables, d.reasons)
    else:
        def loop():
            for user_id, attributes in users:
                decide(user_id, flag_key, attributes, options).variation_key
    return loop


def ours_variation_key_loop(ours, users, flag_key, options):
    variation_key = ours.variation_key

    def loop():
        for user_id, attributes in users:
            variation_key(user_id, flag_key, attributes, options)
    return loop


def reference_decide_loops(reference, users, flag_key, options):
    """(a new user context per call, as an app handling requests would; one pre-built context per user)."""
    create = reference.create_user_context
    contexts = [create(u, a) for u, a in users]

    def per_user():
        for user_id, attributes in users:
            create(user_id, attributes).decide(flag_key, options).variation_key

    def reused():
        for context in contexts:
            context.decide(flag_key, options).variation_key

    return per_user, reused


def decide_all_loops(ours, reference, users, ours_options, reference_options):
    create = reference.create_user_context
    contexts = [create(u, a) for u, a in users]

    def ours_all():
        decide_all = ours.decide_all
        for user_id, attributes in users:
            decide_all(user_id, attributes, ours_options)

    def reference_per_user():
        for user_id, attributes in users:
            create(user_id, attributes).decide_all(reference_options)

    def reference_reused():
        for context in contexts:
            context.decide_all(reference_options)

    return ours_all, reference_per_user, reference_reused


# ------------------------------------------------------------------------------------------------
# Instruction counts (--instructions)
# ------------------------------------------------------------------------------------------------

INSTRUCTION_ROWS = [
    ("ours-variation_key", "ours: client.variation_key() (a str)"),
    ("ours-key", "ours: variation key only (EXCLUDE_VARIABLES)"),
    ("ours-full", "ours: full Decision, every field read"),
    ("loop", "the loop alone (included in the rows above)"),
]


def instruction_child(args, row, calls):
    """Runs `calls` calls of one row (events off), for a parent counting instructions."""
    with open(args.datafile) as f:
        ours = make_ours(f.read(), CountingDispatcher())
    users = make_users(min(args.users, 10000))
    work = (users * (calls // len(users) + 1))[:calls]
    key_options = NO_EVENT_OURS + ("EXCLUDE_VARIABLES",)
    loops = {
        "ours-variation_key": ours_variation_key_loop(ours, work, args.flag, NO_EVENT_OURS),
        "ours-key": ours_decide_loop(ours, work, args.flag, key_options, False),
        "ours-full": ours_decide_loop(ours, work, args.flag, NO_EVENT_OURS, True),
        "loop": lambda: [None for _user_id, _attributes in work],
    }
    for loop in loops.values():  # the same warm-up whatever the row, so it cancels out
        ours_variation_key_loop(ours, users[:50], args.flag, NO_EVENT_OURS)()
        ours_decide_loop(ours, users[:50], args.flag, NO_EVENT_OURS, True)()
    loops[row]()
    ours.close()


def count_instructions(args):
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        sys.exit("--instructions needs valgrind")
    env = dict(os.environ, PYTHONHASHSEED="0")
    print("Python: instructions per call (callgrind; %d calls minus none; %s, events off)"
          % (args.instruction_calls, args.flag))
    print("binding's C accelerator: %s" % ("on" if experiment.client._speedups is not None else "off"))
    for row, title in INSTRUCTION_ROWS:
        totals = []
        for calls in (0, args.instruction_calls):
            command = [valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
                       os.path.abspath(__file__), "--datafile", args.datafile, "--flag", args.flag,
                       "--users", str(args.users), "--instruction-child", row, str(calls)]
            result = subprocess.run(command, env=env, capture_output=True, text=True)
            found = re.search(r"Collected : (\d+)", result.stderr)
            if result.returncode != 0 or not found:
                sys.exit("callgrind run failed:\n%s" % result.stderr[-2000:])
            totals.append(int(found.group(1)))
        per_call = (totals[1] - totals[0]) / args.instruction_calls
        print("%-35s %-46s %10.0f" % ("decide:" + row, title, per_call))
        if args.results:
            with open(args.results, "a") as results:
                results.write("py-instructions\tdecide:%s\t%s\t%.0f\t\t\n" % (row, title, per_call))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datafile", default=os.path.join(REPO, "benchmarks/data/bench_ab_rollout.json"))
    parser.add_argument("--flag", default="checkout_flow")
    parser.add_argument("--all-datafile", default=os.path.join(REPO, "benchmarks/data/bench_50_flags.json"))
    parser.add_argument("--users", type=int, default=2000, help="users for decide (max 10000)")
    parser.add_argument("--all-users", type=int, default=200, help="users for decide_all")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--results", help="append TSV rows to this file")
    parser.add_argument("--best", action="store_true",
                        help="report the fastest of the repeats (timeit's convention; less moved by a busy machine) "
                             "instead of the median, for every row alike")
    parser.add_argument("--instructions", action="store_true",
                        help="count instructions per call with callgrind instead of timing")
    parser.add_argument("--instruction-calls", type=int, default=20000)
    parser.add_argument("--instruction-child", nargs=2, metavar=("ROW", "CALLS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.instruction_child:
        return instruction_child(args, args.instruction_child[0], int(args.instruction_child[1]))
    if args.instructions:
        return count_instructions(args)

    users = make_users(min(args.users, 10000))
    all_users = make_users(min(args.all_users, 10000))
    with open(args.datafile) as f:
        datafile = f.read()
    with open(args.all_datafile) as f:
        all_datafile = f.read()

    ours_events, reference_events = CountingDispatcher(), CountingDispatcher()
    ours = make_ours(datafile, ours_events)
    reference = make_reference(datafile, reference_events)
    ours_all = make_ours(all_datafile, CountingDispatcher())
    reference_all = make_reference(all_datafile, CountingDispatcher())

    # 1. Same decisions, or no numbers at all.
    check_equal(ours, reference, users, args.flag)
    check_equal(ours_all, reference_all, all_users, None, all_flags=True)
    print("decisions equal to optimizely-sdk %s: %d users x %s, %d users x decide_all (%d flags)"
          % (optimizely_version, len(users), args.flag,
             len(all_users), len(json.loads(all_datafile)["featureFlags"])))

    rows = []  # (name, title, µs per call, optimizely µs with a new context, with a reused context)

    def timed(loop, calls):
        return time_per_call_us(loop, calls, args.repeats, args.best)

    def run(label, ours_options, reference_options):
        """Four ways to decide args.flag for every user, timed; rows with speedups vs optimizely."""
        n = len(users)
        # "variation key only": a caller that needs no variables says so (EXCLUDE_VARIABLES), on both sides.
        ours_key_options = tuple(ours_options) + ("EXCLUDE_VARIABLES",)
        ref_key_options = list(reference_options) + [OptimizelyDecideOption.EXCLUDE_VARIABLES]
        t_key = timed(ours_decide_loop(ours, users, args.flag, ours_key_options, False), n)
        t_vkey = timed(ours_variation_key_loop(ours, users, args.flag, ours_options), n)
        t_full = timed(ours_decide_loop(ours, users, args.flag, ours_options, True), n)
        new_key, reuse_key = (timed(loop, n) for loop in
                              reference_decide_loops(reference, users, args.flag, ref_key_options))
        new_full, reuse_full = (timed(loop, n) for loop in
                                reference_decide_loops(reference, users, args.flag, reference_options))
        rows.append(("decide%s:ours-key" % label, "ours: variation key only (EXCLUDE_VARIABLES)", t_key,
                     new_key, reuse_key))
        rows.append(("decide%s:ours-variation_key" % label, "ours: client.variation_key() (a str)", t_vkey,
                     new_key, reuse_key))
        rows.append(("decide%s:ours-full" % label, "ours: full Decision, every field read", t_full,
                     new_full, reuse_full))
        rows.append(("decide%s:optimizely-key" % label, "optimizely: new context, EXCLUDE_VARIABLES", new_key,
                     None, None))
        rows.append(("decide%s:optimizely-key-reuse" % label, "optimizely: reused context, EXCLUDE_VARIABLES",
                     reuse_key, None, None))
        rows.append(("decide%s:optimizely" % label, "optimizely: new context per decide", new_full,
                     None, None))
        rows.append(("decide%s:optimizely-reuse" % label, "optimizely: reused context", reuse_full,
                     None, None))

    run("", NO_EVENT_OURS, NO_EVENT_REF)
    before = (ours_events.count, reference_events.count)
    run("+events", (), [])
    sent = (ours_events.count - before[0], reference_events.count - before[1])
    assert sent[0] > 0 and sent[1] > 0, "impression events expected on both sides, got %s" % (sent,)

    eppo = make_eppo(args.flag)
    if eppo is not None:
        import eppo_client
        assign = eppo.get_string_assignment

        def eppo_loop():
            for user_id, attributes in users:
                assign(args.flag, user_id, attributes, "off")
        assigned = {assign(args.flag, u, a, "off") for u, a in users}
        assert assigned >= {"control", "treatment", "on", "off"}, "eppo equivalent flag: got %s" % assigned
        t_eppo = timed(eppo_loop, len(users))
        rows.append(("decide:eppo-%s" % eppo_client.__version__, "eppo-server-sdk (Rust core): string assignment",
                     t_eppo, None, None))
    else:
        print("eppo-server-sdk not installed: no native-core comparison row (pip install eppo-server-sdk)")

    ours_loop, ref_new, ref_reuse = decide_all_loops(ours_all, reference_all, all_users, NO_EVENT_OURS,
                                                     NO_EVENT_REF)
    t_all, t_new, t_reuse = (timed(loop, len(all_users)) for loop in (ours_loop, ref_new, ref_reuse))
    rows.append(("decide_all:ours", "ours: decide_all (50 flags)", t_all, t_new, t_reuse))
    rows.append(("decide_all:optimizely", "optimizely: new context per decide_all", t_new, None, None))
    rows.append(("decide_all:optimizely-reuse", "optimizely: reused context", t_reuse,
                 None, None))

    print("\nPython: µs per call, %s of %d repeats (decide: %d users x %s; decide_all: %d users)"
          % ("best" if args.best else "median", args.repeats, len(users), args.flag, len(all_users)))
    print("events off = DISABLE_DECISION_EVENT on both sides; +events = impressions to a no-op dispatcher")
    print("binding's C accelerator: %s" % ("on" if experiment.client._speedups is not None
                                          else "off (not built, or EXPERIMENT_NO_SPEEDUPS set)"))
    print("speedup = optimizely µs / ours µs, against a new user context per call / a reused one")
    print("%-35s %-46s %10s %14s %16s" % ("row", "what", "µs/call", "speedup (new)", "speedup (reuse)"))
    results = open(args.results, "a") if args.results else None
    for name, title, t, t_new, t_reuse in rows:
        s_new = "%.1fx" % (t_new / t) if t_new else ""
        s_reuse = "%.1fx" % (t_reuse / t) if t_reuse else ""
        print("%-35s %-46s %10.2f %14s %16s" % (name, title, t, s_new, s_reuse))
        if results:
            results.write("py\t%s\t%s\t%.3f\t%s\t%s\n" % (name, title, t, s_new, s_reuse))
    if results:
        results.close()
    ours.close()
    ours_all.close()
    reference.close()
    reference_all.close()


if __name__ == "__main__":
    main()
