"""Differential tests: our library must decide exactly like Optimizely's reference Python SDK.

For many seeded random datafiles (datafile_generator.py) and users drawn to hit their conditions, the
same calls go to the reference (`optimizely-sdk`) and to our `experiment.Client`, and everything they
return or dispatch must be equal:

* decide for every flag (flag_key, enabled, variation_key, rule_key, variables -- deep equality with
  types, so 1, 1.0 and True differ), with assorted decide options;
* decide_all with and without ENABLED_FLAGS_ONLY and EXCLUDE_VARIABLES (keys, order and decisions);
* decide_for_keys (our binding's JSON path) with unknown and repeated keys (keys compared as a set: the
  reference lists unknown keys first, an artifact of its implementation);
* activate for every experiment (grouped, paused, ...), get_variation for every experiment for every
  other user, both for every delivery rule for every 8th user;
* the events both sides dispatch -- impressions of decide / decide_all / activate, conversions of track
  with revenue / value / other tags: the same number, in the same order, with equal url, http_verb and
  params (ignoring each snapshot event's uuid and timestamp and the top-level client_name and
  client_version, whose presence is still checked);
* reasons (INCLUDE_REASONS), message for message and in order: every decide asked for them (by its
  options, the client's default options, or -- for every other user -- added to our side, since the
  reference is always asked), every decide_all and decide_for_keys whose options ask for them;
* set_forced_variation, forced decisions (flag-level and rule-level, valid and invalid keys), whitelists;
* clients created with default_decide_options;
* holdouts: global and local (includedRules), excludeTargetedDeliveries (the holdout's impression besides
  the decision's own), holdouts that are not running, holdout audiences, enabled holdout variations.

Run (from the repository root, after `make lib`):
    EXPERIMENT_LIBRARY=$PWD/.build/release/libexperiment.so PYTHONPATH=bindings/python \\
        python3 -m pytest bindings/python/tests/test_differential.py -q -s

Environment:
    DIFF_SCALE       multiplies the number of datafiles (default 1 -> 30 datafiles x 300 users)
    DIFF_USERS       users per datafile (default 300)
    DIFF_SEED_BASE   first seed (default 0)
    DIFF_DUMP        a directory: every mismatch is also written there as JSON (seed-N.json)

A failure names the seed, the user, the call and both results, grouped by kind ("signature");
`generate_datafile(seed)` and `generate_users(seed, df, n)` rebuild the inputs.  test_coverage asserts that the compared decisions really exercised every feature the
generator aims at (group experiments, everyone-else rules, whitelists, "fr" experiments, typecast
failures, revenue events, forced decisions, ...), so the suite cannot pass vacuously.
"""

from __future__ import annotations

import collections
import copy
import json
import logging
import math
import os
import random
import sys
import time
from typing import Any, Dict, List, Optional, Tuple

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from datafile_generator import generate_datafile, generate_users  # noqa: E402

from optimizely import optimizely as optimizely_mod  # noqa: E402
from optimizely.event.event_processor import ForwardingEventProcessor  # noqa: E402
from optimizely.helpers.sdk_settings import OptimizelySdkSettings  # noqa: E402
from optimizely.optimizely_user_context import OptimizelyUserContext  # noqa: E402

try:
    import experiment  # our binding
    _IMPORT_ERROR: Optional[BaseException] = None
except Exception as exc:  # pragma: no cover - reported by every differential test
    experiment = None
    _IMPORT_ERROR = exc

SCALE = float(os.environ.get("DIFF_SCALE", "1"))
N_DATAFILES = max(1, int(round(30 * SCALE)))
N_USERS = int(os.environ.get("DIFF_USERS", "300"))
SEED_BASE = int(os.environ.get("DIFF_SEED_BASE", "0"))
SEEDS = list(range(SEED_BASE, SEED_BASE + N_DATAFILES))
DUMP_DIR = os.environ.get("DIFF_DUMP")
MAX_REPORTED = 12          # signatures with an example shown per datafile

EFO = "ENABLED_FLAGS_ONLY"
EXV = "EXCLUDE_VARIABLES"
DDE = "DISABLE_DECISION_EVENT"
DECIDE_OPTION_SETS = [[EXV], [DDE], ["INCLUDE_REASONS"], [EFO], ["IGNORE_USER_PROFILE_SERVICE"], [EXV, DDE]]
IR = "INCLUDE_REASONS"
DECIDE_ALL_OPTION_SETS = [[], [EFO], [EXV], [EFO, EXV], [DDE], [IR], [EFO, IR]]

# Counters shared by the tests of this module (filled by the differential runs, read by test_coverage).
STATS: collections.Counter = collections.Counter()
COVERAGE: collections.Counter = collections.Counter()


# ---------------------------------------------------------------------------------------------------
# Recording dispatchers and normalization
# ---------------------------------------------------------------------------------------------------

class RecordingDispatcher:
    """An event dispatcher that keeps what it is given (both sides use one)."""

    def __init__(self) -> None:
        self.events: List[Any] = []

    def dispatch_event(self, event: Any) -> None:
        self.events.append(event)


def _field(obj: Any, name: str) -> Any:
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)


def normalize_event(event: Any) -> Tuple[dict, List[str]]:
    """(comparable form, problems): drops snapshot events' uuid/timestamp and the client name/version
    after checking they are there.  Copies only what it changes; the event itself is left alone."""
    problems: List[str] = []
    params = _field(event, "params")
    if isinstance(params, (bytes, str)):
        params = json.loads(params)
    if isinstance(params, dict):
        params = dict(params)
        for k in ("client_name", "client_version"):
            if not isinstance(params.pop(k, None), str):
                problems.append(f"params.{k} missing or not a string")
        visitors = []
        for visitor in params.get("visitors", None) or []:
            if not isinstance(visitor, dict):
                visitors.append(visitor)
                continue
            visitor = dict(visitor)
            snapshots = []
            for snapshot in visitor.get("snapshots", None) or []:
                if not isinstance(snapshot, dict):
                    snapshots.append(snapshot)
                    continue
                snapshot = dict(snapshot)
                events = []
                for ev in snapshot.get("events", None) or []:
                    if isinstance(ev, dict):
                        ev = dict(ev)
                        if not isinstance(ev.pop("uuid", None), str):
                            problems.append("snapshot event uuid missing or not a string")
                        ts = ev.pop("timestamp", None)
                        if not isinstance(ts, int) or isinstance(ts, bool) or ts < 10 ** 12:
                            problems.append(f"snapshot event timestamp missing or not epoch ms: {ts!r}")
                    events.append(ev)
                if "events" in snapshot:
                    snapshot["events"] = events
                snapshots.append(snapshot)
            if "snapshots" in visitor:
                visitor["snapshots"] = snapshots
            visitors.append(visitor)
        if "visitors" in params:
            params["visitors"] = visitors
    return {"url": _field(event, "url"), "http_verb": _field(event, "http_verb"), "params": params}, problems


def _canonical(value: Any) -> Optional[str]:
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError):
        return None


def typed_diff(a: Any, b: Any, path: str = "") -> Optional[str]:
    """None when a and b are equal with equal types all the way down (1, 1.0 and True all differ);
    otherwise the path of the first difference."""
    ca = _canonical(a)
    if ca is not None and ca == _canonical(b):
        return None             # fast path: JSON text tells 1, 1.0 and true apart
    return _typed_diff(a, b, path)


def _typed_diff(a: Any, b: Any, path: str = "") -> Optional[str]:
    if type(a) is not type(b):
        return f"{path or '.'}: {type(a).__name__} {a!r} != {type(b).__name__} {b!r}"
    if isinstance(a, dict):
        if list(a.keys()) != list(b.keys()):
            if set(a.keys()) != set(b.keys()):
                return (f"{path or '.'}: keys differ: only reference {sorted(set(a) - set(b))}, "
                        f"only ours {sorted(set(b) - set(a))}")
        for k in a:
            d = _typed_diff(a[k], b[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path or '.'}: length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            d = _typed_diff(x, y, f"{path}[{i}]")
            if d:
                return d
        return None
    if isinstance(a, float) and math.isnan(a) and math.isnan(b):
        return None
    if a != b:
        return f"{path or '.'}: {a!r} != {b!r}"
    return None


def _signature(op: str, diff: str) -> str:
    """A mismatch's class: the operation and the differing path with indices and keys generalized."""
    path = diff.split(":", 1)[0]
    out: List[str] = []
    for part in path.replace("[", ".[").split("."):
        if part.startswith("["):
            out.append("[*]")
        elif out and out[-1] in ("tags", "variables"):
            out.append("<key>")             # one signature for every tag / variable name
        elif part.startswith(("flag_", "var_", "exp_", "grp_")):
            out.append("<key>")
        else:
            out.append(part)
    return f"{op} {'.'.join(out)}"


# ---------------------------------------------------------------------------------------------------
# The two sides
# ---------------------------------------------------------------------------------------------------

_SILENT = logging.getLogger("test_differential.reference")
_SILENT.addHandler(logging.NullHandler())
_SILENT.propagate = False
_SILENT.setLevel(logging.CRITICAL + 10)


def make_reference(datafile_text: str, dispatcher: RecordingDispatcher,
                   default_decide_options: Optional[List[str]] = None) -> optimizely_mod.Optimizely:
    # ForwardingEventProcessor dispatches synchronously on the calling thread: one event per impression
    # or conversion, in call order.  ODP off: no background threads, no identify calls.
    client = optimizely_mod.Optimizely(
        datafile=datafile_text,
        logger=_SILENT,
        event_processor=ForwardingEventProcessor(dispatcher, logger=_SILENT),
        settings=OptimizelySdkSettings(odp_disabled=True),
        default_decide_options=list(default_decide_options or []),
    )
    assert client.is_valid and client.config_manager.get_config() is not None, "reference rejected datafile"
    return client


def make_ours(datafile_text: str, dispatcher: RecordingDispatcher,
              default_decide_options: Optional[List[str]] = None) -> Any:
    # The reference runs without a user profile service: so do we (sticky tests are in test_profiles.py).
    kwargs: Dict[str, Any] = {"datafile": datafile_text, "event_dispatcher": dispatcher, "profile_store": "none"}
    if default_decide_options:
        kwargs["default_decide_options"] = list(default_decide_options)
    return experiment.Client(**kwargs)


def _flush(client: Any) -> None:
    flush = getattr(client, "flush", None)
    if callable(flush):
        flush()


def ref_decision(d: Any, reasons: bool = False) -> dict:
    decision = {"flag_key": d.flag_key, "enabled": d.enabled, "variation_key": d.variation_key,
                "rule_key": d.rule_key, "variables": d.variables}
    if reasons:
        decision["reasons"] = list(d.reasons)
    return decision


def our_decision(d: Any, reasons: bool = False) -> dict:
    keys = ("flag_key", "enabled", "variation_key", "rule_key", "variables") + (("reasons",) if reasons else ())
    decision = {k: _field(d, k) for k in keys}
    if reasons and decision["reasons"] is not None:
        decision["reasons"] = list(decision["reasons"])
    return decision


class Model:
    """What the datafile says, for classifying the reference's decisions (coverage)."""

    def __init__(self, df: dict):
        self.df = df
        self.flags = [f["key"] for f in df["featureFlags"]]
        self.flag_by_key = {f["key"]: f for f in df["featureFlags"]}
        self.rollouts = {r["id"]: r for r in df["rollouts"]}
        self.exps: Dict[str, dict] = {}
        self.exp_by_id: Dict[str, dict] = {}
        self.random_group_exp_keys = set()
        for e in df["experiments"]:
            self.exps[e["key"]] = e
        for g in df["groups"]:
            for e in g["experiments"]:
                self.exps[e["key"]] = e
                if g["policy"] == "random":
                    self.random_group_exp_keys.add(e["key"])
        for e in self.exps.values():
            self.exp_by_id[e["id"]] = e
        self.rule_keys: List[str] = []
        self.everyone_else_keys = set()
        self.delivery_rules: Dict[str, dict] = {}
        for r in df["rollouts"]:
            for i, rule in enumerate(r["experiments"]):
                self.rule_keys.append(rule["key"])
                self.delivery_rules[rule["key"]] = rule
                if i == len(r["experiments"]) - 1:
                    self.everyone_else_keys.add(rule["key"])
        self.experiment_keys = list(self.exps)
        self.events = [e["key"] for e in df["events"]]
        # flag key -> every rule key (experiments then delivery rules) and every variation key
        self.flag_rules: Dict[str, List[str]] = {}
        self.flag_variation_keys: Dict[str, List[str]] = {}
        self.fr_everyone_else: Dict[str, str] = {}     # fr experiment key -> appended variation key
        for f in df["featureFlags"]:
            rules = [self.exp_by_id[i] for i in f["experimentIds"]]
            rollout = self.rollouts.get(f["rolloutId"]) if f["rolloutId"] else None
            ee_var = None
            if rollout and rollout["experiments"] and rollout["experiments"][-1]["variations"]:
                ee_var = rollout["experiments"][-1]["variations"][0]["key"]
            for e in rules:
                if e.get("type") == "fr" and ee_var is not None:
                    self.fr_everyone_else[e["key"]] = ee_var
            if rollout:
                rules = rules + rollout["experiments"]
            self.flag_rules[f["key"]] = [r["key"] for r in rules]
            keys: List[str] = []
            for r in rules:
                for v in r["variations"]:
                    if v["key"] not in keys:
                        keys.append(v["key"])
            self.flag_variation_keys[f["key"]] = keys
        self.variables = {f["key"]: {v["key"]: v for v in f["variables"]} for f in df["featureFlags"]}
        self.global_holdout_keys = {h["key"] for h in df.get("holdouts", [])}
        self.local_holdout_keys = {h["key"] for h in df.get("localHoldouts", [])}
        self.enabled_holdout_variations = {v["key"] for h in df.get("holdouts", []) + df.get("localHoldouts", [])
                                           for v in h["variations"] if v.get("featureEnabled")}
        for h in df.get("holdouts", []) + df.get("localHoldouts", []):
            if h["status"] != "Running":
                COVERAGE["holdout not running"] += 1

    def classify(self, user_id: str, attrs: dict, flag: str, d: dict, forced: Optional[list]) -> None:
        """Counts which feature produced a reference decision."""
        rule, var = d["rule_key"], d["variation_key"]
        COVERAGE["decisions"] += 1
        if var is None:
            COVERAGE["no variation"] += 1
        elif not d["enabled"]:
            COVERAGE["variation but disabled"] += 1
        if rule in self.random_group_exp_keys and var is not None:
            COVERAGE["group experiment"] += 1
        if rule in self.exps and var is not None and rule not in self.random_group_exp_keys:
            COVERAGE["flag experiment"] += 1
        if rule in self.global_holdout_keys and var is not None:
            COVERAGE["global holdout"] += 1
        if rule in self.local_holdout_keys and var is not None:
            COVERAGE["local holdout"] += 1
        if var in self.enabled_holdout_variations and d["variables"]:
            COVERAGE["enabled holdout variation with variables"] += 1
        if rule in self.everyone_else_keys:
            COVERAGE["everyone-else rule"] += 1
        elif rule in self.delivery_rules:
            COVERAGE["targeted delivery rule"] += 1
        if forced:
            if any(v == var and (r is None and rule is None or r == rule) for r, v in forced):
                COVERAGE["forced decision applied"] += 1
        else:
            exp = self.exps.get(rule)
            if exp and exp.get("forcedVariations", {}).get(user_id) == var:
                COVERAGE["whitelist"] += 1
            if rule in self.fr_everyone_else and var == self.fr_everyone_else[rule] and \
                    var not in [v["key"] for v in exp["variations"]]:
                COVERAGE["fr appended everyone-else variation"] += 1
        if isinstance(attrs.get("$opt_bucketing_id"), str) and var is not None:
            COVERAGE["string $opt_bucketing_id"] += 1
        for key, value in (d["variables"] or {}).items():
            spec = self.variables[flag].get(key)
            if spec is None:
                continue
            t = spec["type"]
            if value is None and (t in ("integer", "double") or
                                  (t == "json" or spec.get("subType") == "json")):
                COVERAGE[f"typecast failure -> None ({'json' if t in ('json', 'string') else t})"] += 1
            elif t in ("integer", "double", "boolean", "string") and spec.get("subType") != "json":
                COVERAGE[f"variable {t}"] += 1
            else:
                COVERAGE["variable json"] += 1


REASON_COVERAGE = [
    ('Checking "Everyone Else" rule now', "delivery rule matched but not bucketed -> everyone else"),
    ("Bucketed into an empty traffic range", "empty traffic range"),
    ("is in no experiment.", "group: user in no experiment"),
    ("of group", "group: bucketed into the group"),
    ("is not in experiment", "group: user in another experiment"),
    ('Evaluating audiences for experiment "holdout', "holdout audiences evaluated"),
    ("Evaluating audiences for experiment", "experiment audiences evaluated"),
    ("Evaluating audiences for rule Everyone Else", "everyone-else audiences evaluated"),
    ("Evaluating audiences for rule", "delivery rule audiences evaluated"),
    ("collectively evaluated to FALSE", "audiences evaluated to FALSE"),
    ("Bucketing ID attribute is not a string", "non-string $opt_bucketing_id ignored"),
    ("is not running.", "experiment not running"),
    ("does not meet conditions to be in experiment", "experiment audience not met"),
    ("does not meet audience conditions for targeting rule", "delivery rule audience not met"),
    ("Invalid variation is mapped to flag", "invalid forced decision ignored"),
    ("is mapped to flag", "forced decision"),
    ("in the forced variation map", "forced variation (set_forced_variation)"),
    ("is forced in variation", "whitelisted"),
    ("excludes targeted deliveries", "holdout excludes targeted deliveries"),
    ("does not meet the conditions for holdout", "holdout audience not met"),
    ("is not bucketed into any variation for holdout", "holdout: not bucketed"),
]


def classify_reasons(reasons: List[str]) -> None:
    seen = set()
    for reason in reasons:
        for needle, name in REASON_COVERAGE:
            if needle in reason and name not in seen:
                seen.add(name)
                COVERAGE[f"reason: {name}"] += 1


# ---------------------------------------------------------------------------------------------------
# The driver: one datafile, many users, both sides
# ---------------------------------------------------------------------------------------------------

class Differ:
    def __init__(self, seed: int, n_users: int, reference_only: bool = False):
        self.seed = seed
        self.n_users = n_users
        self.df = generate_datafile(seed)
        self.text = json.dumps(self.df)
        self.model = Model(self.df)
        self.reference_only = reference_only
        rng = random.Random(f"client-options-{seed}")
        self.default_options: List[str] = []
        if seed % 5 == 4:
            self.default_options = rng.choice([[EXV], [DDE], [EFO], [EFO, EXV], ["INCLUDE_REASONS"]])
        self.ref_rec = RecordingDispatcher()
        self.ref = make_reference(self.text, self.ref_rec, self.default_options)
        self.our_rec = RecordingDispatcher()
        self.ours = None if reference_only else make_ours(self.text, self.our_rec, self.default_options)
        self.ref_seen = 0
        self.our_seen = 0
        self.mismatches: List[dict] = []
        self.signatures: Dict[str, int] = collections.Counter()
        self.user_id = ""
        self.attrs: dict = {}
        # Every other user, our decide is asked for reasons even when its options do not ask
        # (the reference always is), so that reasons are compared on many decisions.
        self.reasons_always = False

    # -- bookkeeping ----------------------------------------------------------------------------

    def mismatch(self, op: str, diff: str, reference: Any, ours: Any, **context: Any) -> None:
        sig = _signature(op, diff)
        self.signatures[sig] += 1
        STATS["mismatches"] += 1
        if self.signatures[sig] <= 3 and len(self.mismatches) < 400:
            self.mismatches.append({"signature": sig, "seed": self.seed, "op": op, "diff": diff,
                                    "user_id": self.user_id, "attributes": self.attrs,
                                    "reference": reference, "ours": ours, **context})

    def call_ours(self, fn, *args, **kwargs) -> Tuple[Any, Optional[BaseException]]:
        try:
            return fn(*args, **kwargs), None
        except Exception as exc:  # noqa: BLE001 - every exception is a result to compare
            return None, exc

    def check_events(self, op: str, **context: Any) -> None:
        """The events dispatched since the last check must be the same on both sides."""
        ref_new = self.ref_rec.events[self.ref_seen:]
        self.ref_seen = len(self.ref_rec.events)
        for ev in ref_new:
            p = ev.params
            for v in p.get("visitors", []):
                for s in v["snapshots"]:
                    for e in s["events"]:
                        if e["key"] == "campaign_activated":
                            COVERAGE["impression event"] += 1
                            if s.get("decisions") and s["decisions"][0]["metadata"]["rule_type"] == "holdout":
                                COVERAGE["holdout impression"] += 1
                                if op == "decide" and len(ref_new) == 2 and ev is ref_new[0]:
                                    COVERAGE["holdout impression beside the decision's own"] += 1
                            if s.get("decisions") and s["decisions"][0]["metadata"]["rule_type"] == "rollout":
                                COVERAGE["rollout impression (sendFlagDecisions)"] += 1
                        else:
                            COVERAGE["conversion event"] += 1
                        if "revenue" in e:
                            COVERAGE["conversion with revenue"] += 1
                        if "value" in e:
                            COVERAGE["conversion with value"] += 1
                        if e.get("tags"):
                            COVERAGE["conversion with tags"] += 1
        if self.ours is None:
            return
        _flush(self.ours)
        our_new = self.our_rec.events[self.our_seen:]
        self.our_seen = len(self.our_rec.events)
        STATS["events compared"] += len(ref_new)
        if len(ref_new) != len(our_new):
            self.mismatch(f"{op} event count", f"count: {len(ref_new)} != {len(our_new)}",
                          [normalize_event(e)[0] for e in ref_new], [normalize_event(e)[0] for e in our_new],
                          **context)
            return
        for i, (r, o) in enumerate(zip(ref_new, our_new)):
            rn, _ = normalize_event(r)
            on, problems = normalize_event(o)
            if problems:
                self.mismatch(f"{op} event", "event fields: " + "; ".join(sorted(set(problems))), rn, on,
                              **context)
            d = typed_diff(rn, on, "event")
            if d:
                self.mismatch(f"{op} event", d, rn, on, event_index=i, **context)

    # -- operations -------------------------------------------------------------------------------

    def asks_reasons(self, options: List[str]) -> bool:
        return IR in options or IR in self.default_options

    def decide(self, flag: str, options: List[str], forced: Optional[list] = None, uc: Any = None, op: str = "decide") -> None:
        uc = uc or self.ref.create_user_context(self.user_id, self.attrs)
        # the reference always explains itself (its reasons also feed COVERAGE)
        rd = uc.decide(flag, list(options) + ([] if IR in options else [IR]))
        our_options = list(options) + ([IR] if self.reasons_always and IR not in options else [])
        compare_reasons = self.asks_reasons(our_options)
        r = ref_decision(rd, reasons=compare_reasons)
        self.model.classify(self.user_id, self.attrs, flag, r, forced)
        classify_reasons(rd.reasons)
        STATS["decisions compared"] += 0 if self.ours is None else 1
        if self.ours is not None:
            STATS["reasons compared"] += 1 if compare_reasons else 0
            o, exc = self.call_ours(self.ours.decide, self.user_id, flag, dict(self.attrs), options=our_options)
            if exc is not None:
                self.mismatch(op, f"exception: {type(exc).__name__}: {exc}", r, None, flag=flag,
                              options=our_options)
            else:
                ours = our_decision(o, reasons=compare_reasons)
                d = typed_diff(r, ours, "decision")
                if d:
                    self.mismatch(op, d, r, ours, flag=flag, options=our_options)
        self.check_events(op, flag=flag, options=options)

    def decide_all(self, options: List[str], forced: Optional[list] = None, uc: Any = None, op: str = "decide_all") -> None:
        uc = uc or self.ref.create_user_context(self.user_id, self.attrs)
        rd = uc.decide_all(list(options))
        compare_reasons = self.asks_reasons(options)
        r = {k: ref_decision(v, reasons=compare_reasons) for k, v in rd.items()}
        for k, v in r.items():
            self.model.classify(self.user_id, self.attrs, k, v, forced)
        if self.ours is not None:
            STATS["decisions compared"] += len(r)
            STATS["reasons compared"] += len(r) if compare_reasons else 0
            o, exc = self.call_ours(self.ours.decide_all, self.user_id, dict(self.attrs), options=list(options))
            if exc is not None:
                self.mismatch(op, f"exception: {type(exc).__name__}: {exc}", r, None, options=options)
            else:
                ours = {k: our_decision(v, reasons=compare_reasons) for k, v in dict(o).items()}
                if list(r) != list(ours):
                    self.mismatch(op, f"decide_all keys: {list(r)} != {list(ours)}", list(r), list(ours),
                                  options=options)
                for k in r:
                    if k in ours:
                        d = typed_diff(r[k], ours[k], "decision")
                        if d:
                            self.mismatch(op, d, r[k], ours[k], flag=k, options=options)
        self.check_events(op, options=options)

    def decide_for_keys(self, keys: List[str], options: List[str]) -> None:
        op = "decide_for_keys"
        uc = self.ref.create_user_context(self.user_id, self.attrs)
        compare_reasons = self.asks_reasons(options)
        r = {k: ref_decision(v, reasons=compare_reasons)
             for k, v in uc.decide_for_keys(list(keys), list(options)).items()}
        if self.ours is not None:
            STATS["decisions compared"] += len(r)
            STATS["reasons compared"] += len(r) if compare_reasons else 0
            o, exc = self.call_ours(self.ours.decide_for_keys, self.user_id, list(keys), dict(self.attrs),
                                    options=list(options))
            if exc is not None:
                self.mismatch(op, f"exception: {type(exc).__name__}: {exc}", r, None, keys=keys, options=options)
            else:
                ours = {k: our_decision(v, reasons=compare_reasons) for k, v in dict(o).items()}
                # (as sets: the reference puts unknown keys first, an artifact of its implementation)
                if set(r) != set(ours):
                    self.mismatch(op, f"decide_for_keys keys: {sorted(r)} != {sorted(ours)}", list(r), list(ours),
                                  keys=keys, options=options)
                for k in r:
                    if k in ours:
                        d = typed_diff(r[k], ours[k], "decision")
                        if d:
                            self.mismatch(op, d, r[k], ours[k], flag=k, keys=keys, options=options)
        self.check_events(op, keys=keys, options=options)

    def get_variation(self, exp_key: str, activate: bool, op: Optional[str] = None) -> None:
        op = op or ("activate" if activate else "get_variation")
        fn_ref = self.ref.activate if activate else self.ref.get_variation
        r = fn_ref(exp_key, self.user_id, dict(self.attrs))
        if r is not None:
            COVERAGE[f"{op} -> variation"] += 1
            e = self.model.exps.get(exp_key) or self.model.delivery_rules.get(exp_key)
            if e and e.get("forcedVariations", {}).get(self.user_id) == r:
                COVERAGE["whitelist (get_variation)"] += 1
        if self.ours is not None:
            STATS["variations compared"] += 1
            fn = self.ours.activate if activate else self.ours.get_variation
            o, exc = self.call_ours(fn, exp_key, self.user_id, dict(self.attrs))
            if exc is not None:
                self.mismatch(op, f"exception: {type(exc).__name__}: {exc}", r, None, experiment=exp_key)
            elif typed_diff(r, o):
                self.mismatch(op, f"variation: {r!r} != {o!r}", r, o, experiment=exp_key)
        self.check_events(op, experiment=exp_key)

    def track(self, event_key: str, tags: Optional[dict]) -> None:
        self.ref.track(event_key, self.user_id, dict(self.attrs), copy.deepcopy(tags))
        if self.ours is not None:
            STATS["tracks compared"] += 1
            _, exc = self.call_ours(self.ours.track, event_key, self.user_id, dict(self.attrs),
                                    copy.deepcopy(tags))
            known = event_key in self.model.events
            if exc is not None and (known or not isinstance(exc, getattr(experiment, "Error", ()))):
                self.mismatch("track", f"exception: {type(exc).__name__}: {exc}", None, None,
                              event=event_key, tags=tags)
        self.check_events("track", event=event_key, tags=tags)

    def set_forced_variation(self, exp_key: str, variation: Optional[str]) -> None:
        r = self.ref.set_forced_variation(exp_key, self.user_id, variation)
        if self.ours is not None:
            o, exc = self.call_ours(self.ours.set_forced_variation, exp_key, self.user_id, variation)
            ok = exc is None and o is not False
            if r != ok:
                self.mismatch("set_forced_variation", f"accepted: {r} != {ok} ({exc!r})", r, o,
                              experiment=exp_key, variation=variation)

    def set_forced_decision(self, uc: Any, flag: str, rule: Optional[str], variation: Optional[str]) -> None:
        ctx = OptimizelyUserContext.OptimizelyDecisionContext(flag, rule)
        if variation is None:
            uc.remove_forced_decision(ctx)
        else:
            uc.set_forced_decision(ctx, OptimizelyUserContext.OptimizelyForcedDecision(variation))
        if self.ours is not None:
            _, exc = self.call_ours(self.ours.set_forced_decision, self.user_id, flag, variation, rule_key=rule)
            if exc is not None:
                self.mismatch("set_forced_decision", f"exception: {type(exc).__name__}: {exc}", None, None,
                              flag=flag, rule=rule, variation=variation)

    # -- one user ---------------------------------------------------------------------------------

    def run_user(self, index: int, user_id: str, attrs: dict) -> None:
        self.user_id, self.attrs = user_id, attrs
        self.reasons_always = index % 2 == 1
        m = self.model
        rng = random.Random(f"ops-{self.seed}-{index}")

        # decide, every flag
        for flag in m.flags:
            opts = [] if rng.random() < 0.8 else list(rng.choice(DECIDE_OPTION_SETS))
            if EFO in opts and EFO in self.default_options:
                # reference crash: decide() removes ENABLED_FLAGS_ONLY from the merged options once, so
                # with it in both lists a disabled flag raises KeyError in Optimizely._decide
                opts.remove(EFO)
            self.decide(flag, opts)
        # decide_all, rotating the option sets
        self.decide_all(list(DECIDE_ALL_OPTION_SETS[index % len(DECIDE_ALL_OPTION_SETS)]))
        # decide_for_keys (our JSON path): a few flags, sometimes an unknown key, sometimes repeated
        if index % 5 == 2 and m.flags:
            keys = rng.sample(m.flags, rng.randint(1, len(m.flags)))
            if rng.random() < 0.3:
                keys.insert(rng.randrange(len(keys) + 1), "no_such_flag")
            if rng.random() < 0.1:
                keys.append(keys[0])
            opts = [] if rng.random() < 0.6 else list(rng.choice(DECIDE_ALL_OPTION_SETS))
            self.decide_for_keys(keys, opts)
        # get_variation and activate, every experiment; delivery rules for some users
        for key in m.experiment_keys:
            if index % 2 == 0:
                self.get_variation(key, activate=False)
            self.get_variation(key, activate=True)
        if index % 8 == 0:
            for key in m.rule_keys:
                self.get_variation(key, activate=False, op="get_variation(delivery rule)")
                self.get_variation(key, activate=True, op="activate(delivery rule)")
        # track
        if m.events and rng.random() < 0.7:
            event_key = rng.choice(m.events) if rng.random() < 0.95 else "no_such_event"
            self.track(event_key, random_tags(rng))
        # forced variations
        if rng.random() < 0.2 and (m.experiment_keys or m.rule_keys):
            self.forced_variation_round(rng)
        # forced decisions
        if rng.random() < 0.2 and m.flags:
            self.forced_decision_round(rng)

    def forced_variation_round(self, rng: random.Random) -> None:
        m = self.model
        pool = m.experiment_keys + (m.rule_keys if rng.random() < 0.3 else [])
        exp_key = rng.choice(pool)
        exp = m.exps.get(exp_key) or m.delivery_rules[exp_key]
        keys = [v["key"] for v in exp["variations"]]
        r = rng.random()
        if r < 0.8:
            variation: Optional[str] = rng.choice(keys)
        elif r < 0.9:
            variation = "no_such_variation"
        else:
            variation = None
        self.set_forced_variation(exp_key, variation)
        flags = [f for f, rules in m.flag_rules.items() if exp_key in rules]
        self.get_variation(exp_key, activate=False, op="get_variation(forced)")
        self.get_variation(exp_key, activate=True, op="activate(forced)")
        for flag in flags:
            self.decide(flag, [], op="decide(forced variation)")
        ref_forced = self.ref.get_forced_variation(exp_key, self.user_id)
        if ref_forced is not None:
            COVERAGE["forced variation set"] += 1
        self.set_forced_variation(exp_key, None)
        self.get_variation(exp_key, activate=False, op="get_variation(forced removed)")

    def forced_decision_round(self, rng: random.Random) -> None:
        m = self.model
        flag = rng.choice(m.flags)
        uc = self.ref.create_user_context(self.user_id, self.attrs)
        forced = []
        for _ in range(rng.randint(1, 3)):
            r = rng.random()
            rules = m.flag_rules[flag]
            if r < 0.35 or not rules:
                rule = None
            elif r < 0.9:
                rule = rng.choice(rules)
            else:
                rule = "no_such_rule"
            r = rng.random()
            variations = m.flag_variation_keys[flag]
            if r < 0.8 and variations:
                variation = rng.choice(variations)
            elif r < 0.9:
                other = rng.choice(m.flags)
                variation = rng.choice(m.flag_variation_keys[other] or ["no_such_variation"])
            else:
                variation = "no_such_variation"
            self.set_forced_decision(uc, flag, rule, variation)
            forced.append((rule, variation))
        self.decide(flag, [], forced=forced, uc=uc, op="decide(forced decision)")
        self.decide_all([], forced=forced, uc=uc, op="decide_all(forced decision)")
        for rule, _ in forced:
            self.set_forced_decision(uc, flag, rule, None)
        self.decide(flag, [], uc=uc, op="decide(forced decision removed)")

    def run(self) -> None:
        for index, (user_id, attrs) in enumerate(generate_users(self.seed, self.df, self.n_users)):
            self.run_user(index, user_id, attrs)
        self.ref.close()
        if self.ours is not None:
            _flush(self.ours)
            self.check_events("close")
            close = getattr(self.ours, "close", None)
            if callable(close):
                close()

    def report(self) -> str:
        lines = [f"seed {self.seed}: {sum(self.signatures.values())} mismatches "
                 f"(rebuild the datafile with generate_datafile({self.seed}); "
                 f"default_decide_options={self.default_options})"]
        for sig, count in self.signatures.most_common():
            lines.append(f"  {count:6d}  {sig}")
        lines.append("first example of each:")
        shown = set()
        for m in self.mismatches:
            if m["signature"] in shown or len(shown) >= MAX_REPORTED:
                continue
            shown.add(m["signature"])
            lines.append("  - " + json.dumps(m, default=repr, ensure_ascii=False)[:1500])
        return "\n".join(lines)


def random_tags(rng: random.Random) -> Optional[dict]:
    r = rng.random()
    if r < 0.15:
        return None
    if r < 0.2:
        return {}
    tags: Dict[str, Any] = {}
    if rng.random() < 0.5:
        tags["revenue"] = rng.choice([100, 0, -5, 4200, 2 ** 40, 2 ** 53 + 1, 2 ** 63, 10 ** 20, 99.5, "100",
                                      True, None])
    if rng.random() < 0.5:
        tags["value"] = rng.choice([1.5, 10, 0, -2.25, "3.5", "abc", " 12 ", True, None, "1e3", 2 ** 40,
                                    2 ** 53 + 1, 10 ** 20, "nan", "inf", "-Infinity", "", "0x10", "1_5"])
    for _ in range(rng.randint(0, 2)):
        # ("tags" / "decisions" / "revenue" / "value" keys with null are dropped by the reference's
        # payload cleaner at any depth)
        name = rng.choice(["category", "size", "coupon", "ü-tag", "qty", "category", "size", "tags", "decisions"])
        tags[name] = rng.choice(["shoes", "", "ÄÖü", 3, 2.5, True, False, None, None, 1.0, 10 ** 20, -10 ** 20,
                                 2 ** 64])
    if rng.random() < 0.05:
        tags["meta"] = rng.choice([[1, "a", None], {"k": "v", "value": None}, {"n": {"revenue": None, "x": 2}}])
    return tags


# ---------------------------------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------------------------------

def _require_library() -> None:
    if experiment is None:
        pytest.fail(f"cannot import the binding `experiment` (EXPERIMENT_LIBRARY="
                    f"{os.environ.get('EXPERIMENT_LIBRARY')!r}): {_IMPORT_ERROR!r}")


def _defined_ids(df: dict) -> List[str]:
    """Every id the datafile defines (audiences that a typed audience overrides share its id)."""
    exps = df["experiments"] + [e for g in df["groups"] for e in g["experiments"]] + \
        [e for r in df["rollouts"] for e in r["experiments"]]
    ids = [a["id"] for a in df["attributes"]] + [e["id"] for e in df["events"]]
    ids += [e["id"] for e in exps] + [v["id"] for e in exps for v in e["variations"]]
    ids += [g["id"] for g in df["groups"]] + [r["id"] for r in df["rollouts"]]
    ids += [f["id"] for f in df["featureFlags"]] + [v["id"] for f in df["featureFlags"] for v in f["variables"]]
    ids += [a["id"] for a in df["typedAudiences"]]
    holdouts = df.get("holdouts", []) + df.get("localHoldouts", [])
    ids += [h["id"] for h in holdouts] + [v["id"] for h in holdouts for v in h["variations"]]
    typed = {a["id"] for a in df["typedAudiences"]}
    ids += [a["id"] for a in df["audiences"] if a["id"] not in typed]
    return ids


def test_generator_is_deterministic_and_reference_accepts_every_datafile():
    for seed in SEEDS:
        df = generate_datafile(seed)
        ids = _defined_ids(df)
        assert all(isinstance(i, str) and i.isdigit() for i in ids), seed
        dup = [i for i, n in collections.Counter(ids).items() if n > 1]
        assert not dup, f"seed {seed}: ids defined twice: {dup}"
        assert json.dumps(df) == json.dumps(generate_datafile(seed)), seed
        assert list(generate_users(seed, df, 20)) == list(generate_users(seed, df, 20)), seed
        client = make_reference(json.dumps(df), RecordingDispatcher())
        config = client.config_manager.get_config()
        assert len(config.feature_key_map) == len(df["featureFlags"])
        client.close()


@pytest.mark.parametrize("seed", SEEDS)
def test_decides_like_the_reference(seed):
    _require_library()
    started = time.time()
    differ = Differ(seed, N_USERS)
    differ.run()
    STATS["datafiles"] += 1
    STATS["seconds"] += time.time() - started
    if DUMP_DIR and differ.mismatches:
        os.makedirs(DUMP_DIR, exist_ok=True)
        with open(os.path.join(DUMP_DIR, f"seed-{seed}.json"), "w") as fh:
            json.dump({"seed": seed, "signatures": differ.signatures, "examples": differ.mismatches,
                       "default_decide_options": differ.default_options}, fh, default=repr, indent=1,
                      ensure_ascii=False)
    assert not differ.signatures, differ.report()


COVERAGE_REQUIRED = [
    "group experiment",
    "flag experiment",
    "everyone-else rule",
    "targeted delivery rule",
    "whitelist",
    "whitelist (get_variation)",
    "fr appended everyone-else variation",
    "forced decision applied",
    "forced variation set",
    "string $opt_bucketing_id",
    "no variation",
    "variation but disabled",
    "typecast failure -> None (integer)",
    "typecast failure -> None (double)",
    "typecast failure -> None (json)",
    "variable integer",
    "variable double",
    "variable boolean",
    "variable string",
    "variable json",
    "impression event",
    "rollout impression (sendFlagDecisions)",
    "conversion event",
    "conversion with revenue",
    "conversion with value",
    "conversion with tags",
    "get_variation -> variation",
    "activate -> variation",
    "global holdout",
    "local holdout",
    "holdout not running",
    "enabled holdout variation with variables",
    "holdout impression",
    "holdout impression beside the decision's own",
] + [f"reason: {name}" for _, name in REASON_COVERAGE]


def test_coverage():
    """The compared decisions exercised every feature the generator aims at."""
    if not STATS["datafiles"]:
        # the differential tests did not run in this session (e.g. -k): measure the generator alone
        COVERAGE.clear()
        for seed in SEEDS:
            Differ(seed, min(N_USERS, 60), reference_only=True).run()
    missing = [name for name in COVERAGE_REQUIRED if COVERAGE[name] < 1]
    summary = ", ".join(f"{k}={v}" for k, v in sorted(COVERAGE.items()))
    print(f"\n[differential] datafiles={STATS['datafiles']} decisions compared={STATS['decisions compared']} "
          f"get_variation/activate compared={STATS['variations compared']} "
          f"tracks compared={STATS['tracks compared']} events compared={STATS['events compared']} "
          f"reasons compared={STATS['reasons compared']} "
          f"mismatches={STATS['mismatches']} time={STATS['seconds']:.1f}s")
    print(f"[differential] coverage: {summary}")
    assert not missing, f"the generator never produced: {missing}\ncoverage: {summary}"
    if STATS["datafiles"]:
        assert STATS["decisions compared"] >= 1000 * min(1.0, SCALE) * N_USERS / 300
        assert STATS["events compared"] > 0
        assert STATS["reasons compared"] >= STATS["decisions compared"] // 4
