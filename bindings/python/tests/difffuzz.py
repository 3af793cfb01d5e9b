#!/usr/bin/env python3
"""Differential fuzzer: mutated datafiles and users of every Python type, our library against the
reference SDK (optimizely-sdk 5.7.0).  Zero differences allowed.

Run it against any build of the library (EXPERIMENT_LIBRARY picks the .so):

    cd <worktree> && make lib python-speedups
    EXPERIMENT_LIBRARY=$PWD/.build/release/libexperiment.so PYTHONPATH=$PWD/bindings/python \\
        python3 bindings/python/tests/difffuzz.py --seeds 0:200 --report out.json

Options (`--help` lists them):
    --seeds A:B       the seeds to run, A inclusive, B exclusive (default 0:120, the slice `make test` runs)
    --users N         users per datafile (default 24)
    --jobs N          worker processes over the seeds (default 1)
    --report FILE     write every signature, with counts and a minimal reproduction, as JSON
                      (the environment variable DIFFFUZZ_REPORT does the same)
    --markdown FILE   also write the findings as Markdown (one entry per signature)
    --minimize N      shrink the first example of at most N signatures (default 40; 0: off)
    --replay SEED     run one seed and print every difference (not only one per signature)
    --quiet           only the summary line

Each seed is one case: the datafile `datafile_generator.generate_datafile(seed)`, changed by 1-3
mutations (none for one seed in ten) drawn from random.Random("difffuzz-<seed>"), and `--users` users
(generate_users's users, many of them given attribute values of exotic Python types).  Both sides get the
same JSON text.  For each case:

* acceptance: the reference accepts a datafile when Optimizely() has a config; ours when Client() does not
  raise;
* when both accept, per user: decide every flag with INCLUDE_REASONS (flag_key, enabled, variation_key,
  rule_key, variables with their types, reasons), sometimes an unknown flag key, decide_all for every third
  user, get_variation for every experiment (delivery rules and an unknown key for some users), activate of
  one or two experiments, track of one event (sometimes an unknown one) with random tags; after every call
  the event payloads both sides dispatched (test_differential.normalize_event: uuid, timestamp, client
  name/version aside).

One comparison is one compared result of one call: the acceptance of a datafile, one decision (each of
decide_all's too), one get_variation / activate result, one event payload.  Calls that raise inside the
reference have no answer to compare with: they are counted apart ("reference crashes", by kind) and
skipped, and the events dispatched during them are dropped on both sides.

A difference is counted under a short signature (call + kind of difference); the first example of each
signature keeps its reproduction: seed, the mutations (concrete operations, replayable with
`apply_mutations(generate_datafile(seed), mutations)`), the user (index and values), the call.  With
--minimize the example is shrunk: mutations and attributes that the difference does not need are removed.

The summary line (paste it into the README) gives the comparison count, seed range, date, differences.
"""

from __future__ import annotations

import argparse
import collections
import copy
import datetime
import decimal
import json
import math
import os
import random
import re
import sys
import tempfile
import time
import traceback
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

# Never the user's own state directory, never the network (as the Makefile's test targets set them).
os.environ.setdefault("EXPERIMENT_EVENT_ENDPOINT", "none")
if "XDG_STATE_HOME" not in os.environ:
    os.environ["XDG_STATE_HOME"] = tempfile.mkdtemp(prefix="difffuzz-state-")

from datafile_generator import condition_leaves, generate_datafile, generate_users  # noqa: E402
from test_differential import (RecordingDispatcher, _SILENT, _signature, normalize_event,  # noqa: E402
                               random_tags, typed_diff)

from optimizely import optimizely as optimizely_mod  # noqa: E402
from optimizely.event.event_processor import ForwardingEventProcessor  # noqa: E402
from optimizely.helpers.sdk_settings import OptimizelySdkSettings  # noqa: E402

try:
    import experiment  # our binding
    IMPORT_ERROR: Optional[BaseException] = None
except Exception as exc:  # pragma: no cover - reported by main() and the test
    experiment = None  # type: ignore[assignment]
    IMPORT_ERROR = exc

DEFAULT_SEEDS = (0, 120)
DEFAULT_USERS = 24
UNMUTATED_ONE_IN = 10          # one seed in ten keeps the generator's valid datafile
OPTIMIZELY_PACKAGE = os.path.dirname(optimizely_mod.__file__)

# ===================================================================================================
# Mutations
#
# A mutation is a concrete operation on the datafile's JSON tree, so that a report can replay it:
#     {"kind": "dangling rolloutId", "op": "set" | "delete" | "insert", "path": [...], "value": ...}
# "insert" inserts into the list at path[:-1] at index path[-1].  A path that no longer leads anywhere
# (an earlier mutation removed it) makes the operation a no-op.
# ===================================================================================================

UNKNOWN_IDS = ["999999999", "0", "", "424242", "not-an-id"]
OUT_OF_RANGE = [10001, 20000, -5, -1, 1e4, 10000.0, 9999.5, 2 ** 31, 2 ** 53 + 1, 2 ** 63, 2 ** 64,
                10 ** 30, 0]
STATUSES = ["Paused", "Launched", "running", "RUNNING", "Running ", "", None, 1, "Not started", "Archived",
            "Draft", "Concluded"]
VERSIONS = ["3", "2", "5", "4.0", " 4", "", None, 4, "04", "1"]
UNICODE_KEYS = ["ключ", "日本語", "😀", "a\u0000b", "\u00e4", "a\u0308", "\u200b", " spaced ", "key\n", "\\"]
CONDITION_TYPES = ["custom_dimension", "", None, 5, "CUSTOM_ATTRIBUTE", "third_party_dimension", "qualified"]
MATCH_TYPES = ["regex", "", None, 3, "EXACT", "semver", "Exact", "gt ", "exists"]
CONDITION_VALUES = [{"a": 1}, [1, 2], [], 2 ** 64, 2 ** 53 + 1, -0.0, 1e-300, "", "\u0000", None, True,
                    "1.2.3", 10 ** 30]
OPERATORS = ["xor", "AND", "", "Or", "not"]
SECTIONS = ["typedAudiences", "rollouts", "featureFlags", "holdouts", "localHoldouts", "integrations",
            "groups", "attributes", "events", "audiences", "experiments", "projectId", "accountId", "revision",
            "version", "anonymizeIP", "botFiltering", "sendFlagDecisions", "sdkKey", "environmentKey", "region"]
TOP_LISTS = ["experiments", "events", "attributes", "audiences", "typedAudiences", "featureFlags", "rollouts",
             "groups", "holdouts", "localHoldouts"]


def _is_dict(x: Any) -> bool:
    return isinstance(x, dict)


def _list_at(df: Any, path: List[Any]) -> List[Tuple[List[Any], Any]]:
    """(path, element) of every element of the list at `path` ([] when there is none)."""
    node = _get(df, path)
    if not isinstance(node, list):
        return []
    return [(path + [i], e) for i, e in enumerate(node)]


def _get(node: Any, path: List[Any]) -> Any:
    for step in path:
        if isinstance(node, dict) and isinstance(step, str) and step in node:
            node = node[step]
        elif isinstance(node, list) and isinstance(step, int) and 0 <= step < len(node):
            node = node[step]
        else:
            return None
    return node


def experiments_of(df: Any) -> List[Tuple[List[Any], Any]]:
    """Every experiment-like entity (experiments, group experiments, delivery rules) with its path."""
    out = [(p, e) for p, e in _list_at(df, ["experiments"]) if _is_dict(e)]
    for gp, g in _list_at(df, ["groups"]):
        out += [(p, e) for p, e in _list_at(df, gp + ["experiments"]) if _is_dict(e)]
    for rp, r in _list_at(df, ["rollouts"]):
        out += [(p, e) for p, e in _list_at(df, rp + ["experiments"]) if _is_dict(e)]
    return out


def holdouts_of(df: Any) -> List[Tuple[List[Any], Any]]:
    return [(p, h) for key in ("holdouts", "localHoldouts") for p, h in _list_at(df, [key]) if _is_dict(h)]


def entities_of(df: Any) -> List[Tuple[List[Any], Any]]:
    """Every entity that has an id and/or a key."""
    out = experiments_of(df) + holdouts_of(df)
    for key in ("events", "attributes", "audiences", "typedAudiences", "featureFlags", "rollouts", "groups"):
        out += [(p, e) for p, e in _list_at(df, [key]) if _is_dict(e)]
    for p, e in experiments_of(df) + holdouts_of(df):
        out += [(vp, v) for vp, v in _list_at(df, p + ["variations"]) if _is_dict(v)]
    for p, f in _list_at(df, ["featureFlags"]):
        out += [(vp, v) for vp, v in _list_at(df, p + ["variables"]) if _is_dict(v)]
    return out


def all_nodes(df: Any) -> List[Tuple[List[Any], Any]]:
    """(path, value) of every node below the root."""
    out: List[Tuple[List[Any], Any]] = []

    def walk(node: Any, path: List[Any]) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                out.append((path + [k], v))
                walk(v, path + [k])
        elif isinstance(node, list):
            for i, v in enumerate(node):
                out.append((path + [i], v))
                walk(v, path + [i])
    walk(df, [])
    return out


def _pick_by_depth(rng: random.Random, nodes: List[Tuple[List[Any], Any]]) -> Optional[Tuple[List[Any], Any]]:
    """A node, depth first drawn uniformly: top-level sections are as likely as deep leaves."""
    if not nodes:
        return None
    by_depth: Dict[int, list] = collections.defaultdict(list)
    for n in nodes:
        by_depth[len(n[0])].append(n)
    depth = rng.choice(sorted(by_depth))
    return rng.choice(by_depth[depth])


def _kind_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, list):
        return "list"
    return "object"


def retyped(value: Any, target: str, rng: random.Random) -> Any:
    """`value` turned into the JSON type `target`, keeping what can be kept ("5000" <-> 5000, a
    conditions string <-> its parsed tree)."""
    if target == "str":
        if isinstance(value, (list, dict, bool)) or value is None:
            return json.dumps(value)
        return str(value)
    if target == "int":
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            return int(value)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            return int(value)
        if isinstance(value, (list, dict)):
            return len(value)
        return rng.choice([0, 1, -1, 42])
    if target == "float":
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            return float(int(value))
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        return rng.choice([1.5, 0.0, -2.5])
    if target == "bool":
        return rng.choice([True, False])
    if target == "null":
        return None
    if target in ("list", "object") and isinstance(value, str):
        try:
            parsed = json.loads(value)
            if isinstance(parsed, list if target == "list" else dict):
                return parsed
        except ValueError:
            pass
    if target == "list":
        return rng.choice([[value], []])
    return rng.choice([{"value": value}, {}])


def mut_delete(df: dict, rng: random.Random) -> List[dict]:
    picked = _pick_by_depth(rng, all_nodes(df))
    return [] if picked is None else [{"kind": "delete field", "op": "delete", "path": picked[0]}]


def mut_retype(df: dict, rng: random.Random) -> List[dict]:
    picked = _pick_by_depth(rng, all_nodes(df))
    if picked is None:
        return []
    path, value = picked
    kinds = ["str", "int", "float", "bool", "null", "list", "object"]
    old = _kind_of(value)
    target = rng.choice([k for k in kinds if k != old])
    return [{"kind": f"retype {old}->{target}", "op": "set", "path": path, "value": retyped(value, target, rng)}]


def mut_out_of_range(df: dict, rng: random.Random) -> List[dict]:
    nodes = [(p, v) for p, v in all_nodes(df) if p and p[-1] == "endOfRange"]
    if not nodes:
        return []
    path, _ = rng.choice(nodes)
    value = rng.choice(OUT_OF_RANGE)
    return [{"kind": f"endOfRange {value!r}", "op": "set", "path": path, "value": value}]


def mut_nonfinite(df: dict, rng: random.Random) -> List[dict]:
    """NaN / Infinity where a number is (json.dumps writes them as the non-JSON tokens NaN, Infinity,
    which the reference's json.loads accepts)."""
    nodes = [(p, v) for p, v in all_nodes(df) if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if not nodes:
        return []
    path, _ = rng.choice(nodes)
    value = rng.choice([float("nan"), float("inf"), float("-inf")])
    return [{"kind": "NaN/Infinity literal", "op": "set", "path": path, "value": value}]


def _entity_lists(df: dict) -> List[List[Any]]:
    lists = [[k] for k in TOP_LISTS if isinstance(df.get(k), list) and df[k]]
    for p, e in experiments_of(df) + holdouts_of(df):
        for key in ("variations", "trafficAllocation"):
            if _list_at(df, p + [key]):
                lists.append(p + [key])
        for vp, v in _list_at(df, p + ["variations"]):
            if _list_at(df, vp + ["variables"]):
                lists.append(vp + ["variables"])
    for p, f in _list_at(df, ["featureFlags"]):
        if _list_at(df, p + ["variables"]):
            lists.append(p + ["variables"])
    for key in ("groups", "rollouts"):
        for p, g in _list_at(df, [key]):
            if _list_at(df, p + ["experiments"]):
                lists.append(p + ["experiments"])
    return lists


def mut_duplicate(df: dict, rng: random.Random) -> List[dict]:
    """A copy of an entity next to it: identical, or the same id with another key and content, or the
    same key with another id and content."""
    lists = _entity_lists(df)
    if not lists:
        return []
    list_path = rng.choice(lists)
    elements = _list_at(df, list_path)
    index, original = rng.choice([(p[-1], e) for p, e in elements])
    dup = copy.deepcopy(original)
    mode = rng.choice(["identical", "same id", "same key"])
    if isinstance(dup, dict):
        if mode == "same id" and "key" in dup:
            dup["key"] = f"{dup['key']}_dup" if isinstance(dup["key"], str) else "dup"
        elif mode == "same key" and "id" in dup:
            dup["id"] = str(rng.randrange(10 ** 9, 2 * 10 ** 9))
        if mode != "identical":
            # different content: the lists of the copy reversed, its status / featureEnabled flipped
            for k, v in dup.items():
                if isinstance(v, list):
                    dup[k] = list(reversed(v))
            if "status" in dup:
                dup["status"] = "Paused" if dup["status"] == "Running" else "Running"
            if "featureEnabled" in dup:
                dup["featureEnabled"] = not dup["featureEnabled"]
            if "endOfRange" in dup:
                dup["endOfRange"] = rng.choice([0, 5000, 10000])
    else:
        mode = "identical"
    at = index + rng.choice([0, 1])            # before or after the original: which one wins matters
    return [{"kind": f"duplicate ({mode}) in {_generic(list_path)}", "op": "insert", "path": list_path + [at],
             "value": dup}]


def _generic(path: List[Any]) -> str:
    return ".".join("[*]" if isinstance(p, int) else str(p) for p in path)


def mut_dangling(df: dict, rng: random.Random) -> List[dict]:
    """A reference to nothing (or to an entity of another kind)."""
    unknown = rng.choice(UNKNOWN_IDS)
    choices: List[Callable[[], List[dict]]] = []
    exps = experiments_of(df)
    flags = [(p, f) for p, f in _list_at(df, ["featureFlags"]) if _is_dict(f)]

    def audience_id() -> List[dict]:
        p, e = rng.choice(exps)
        ids = e.get("audienceIds")
        if isinstance(ids, list):
            return [{"kind": "dangling audienceIds entry", "op": "insert",
                     "path": p + ["audienceIds", rng.randint(0, len(ids))], "value": unknown}]
        return []

    def audience_condition() -> List[dict]:
        p, e = rng.choice(exps)
        conds = e.get("audienceConditions")
        if isinstance(conds, list) and conds:
            return [{"kind": "dangling audienceConditions id", "op": "insert",
                     "path": p + ["audienceConditions", rng.randint(1, len(conds))], "value": unknown}]
        return [{"kind": "dangling audienceConditions id", "op": "set", "path": p + ["audienceConditions"],
                 "value": ["or", unknown]}]

    def flag_experiment() -> List[dict]:
        p, f = rng.choice(flags)
        ids = f.get("experimentIds")
        if not isinstance(ids, list):
            return []
        # nothing, or an entity of another kind: a delivery rule, an experiment of no flag, a variation
        others = [e.get("id") for _, e in exps if isinstance(e.get("id"), str) and e.get("id") not in ids]
        target = rng.choice([unknown, unknown] + others[:3])
        return [{"kind": "flag experimentIds -> " + ("nothing" if target == unknown else "another rule"),
                 "op": "insert", "path": p + ["experimentIds", rng.randint(0, len(ids))], "value": target}]

    def rollout_id() -> List[dict]:
        p, f = rng.choice(flags)
        return [{"kind": "dangling rolloutId", "op": "set", "path": p + ["rolloutId"], "value": unknown}]

    def traffic_entity() -> List[dict]:
        owners = exps + holdouts_of(df) + [(p, g) for p, g in _list_at(df, ["groups"]) if _is_dict(g)]
        p, e = rng.choice(owners)
        ranges = [(tp, t) for tp, t in _list_at(df, p + ["trafficAllocation"]) if _is_dict(t)]
        if not ranges:
            return []
        tp, _ = rng.choice(ranges)
        return [{"kind": "dangling trafficAllocation entityId", "op": "set", "path": tp + ["entityId"],
                 "value": unknown}]

    def variable_usage() -> List[dict]:
        usages = [(up, u) for p, e in exps for vp, v in _list_at(df, p + ["variations"])
                  for up, u in _list_at(df, vp + ["variables"]) if _is_dict(u)]
        if not usages:
            return []
        up, _ = rng.choice(usages)
        return [{"kind": "dangling variable id in a variation", "op": "set", "path": up + ["id"], "value": unknown}]

    def event_experiment() -> List[dict]:
        events = [(p, e) for p, e in _list_at(df, ["events"]) if _is_dict(e) and isinstance(e.get("experimentIds"), list)]
        if not events:
            return []
        p, e = rng.choice(events)
        return [{"kind": "dangling event experimentIds entry", "op": "insert",
                 "path": p + ["experimentIds", 0], "value": unknown}]

    def whitelist() -> List[dict]:
        p, e = rng.choice(exps)
        return [{"kind": "whitelist -> unknown variation", "op": "set",
                 "path": p + ["forcedVariations", rng.choice(["user_1", "wl_0", "ü-whitelisted"])],
                 "value": rng.choice(["no_such_variation", ""])}]

    def included_rule() -> List[dict]:
        hs = holdouts_of(df)
        if not hs:
            return []
        p, h = rng.choice(hs)
        return [{"kind": "dangling holdout includedRules", "op": "set", "path": p + ["includedRules"],
                 "value": [unknown]}]

    if exps:
        choices += [audience_id, audience_condition, traffic_entity, variable_usage, whitelist]
    if flags:
        choices += [flag_experiment, rollout_id]
    choices += [event_experiment, included_rule]
    for _ in range(4):
        ops = rng.choice(choices)()
        if ops:
            return ops
    return []


def _leaf(df: dict, rng: random.Random) -> dict:
    names = [a.get("key") for _, a in _list_at(df, ["attributes"]) if _is_dict(a)] or ["attr"]
    return {"type": "custom_attribute", "name": rng.choice(names), "match": "exists"}


def _parsed_conditions(df: dict) -> List[Tuple[List[Any], Any, bool]]:
    """(path, parsed tree, stored as a string?) of every audience's conditions."""
    out = []
    for key in ("audiences", "typedAudiences"):
        for p, a in _list_at(df, [key]):
            if not _is_dict(a) or "conditions" not in a:
                continue
            c = a["conditions"]
            if isinstance(c, str):
                try:
                    out.append((p + ["conditions"], json.loads(c), True))
                except ValueError:
                    pass
            else:
                out.append((p + ["conditions"], c, False))
    return out


def mut_typed_override(df: dict, rng: random.Random) -> List[dict]:
    """An audience id defined in both audiences and typedAudiences, with different conditions."""
    plain = [(p, a) for p, a in _list_at(df, ["audiences"]) if _is_dict(a)]
    typed = [(p, a) for p, a in _list_at(df, ["typedAudiences"]) if _is_dict(a)]
    trees = [t for _, t, _ in _parsed_conditions(df)] or [["or", _leaf(df, rng)]]
    if plain and (not typed or rng.random() < 0.5):
        _, a = rng.choice(plain)
        entry = {"id": a.get("id"), "name": "typed_override", "conditions": copy.deepcopy(rng.choice(trees))}
        n = len(typed)
        if not isinstance(df.get("typedAudiences"), list):
            return [{"kind": "typedAudiences overrides audiences", "op": "set", "path": ["typedAudiences"],
                     "value": [entry]}]
        return [{"kind": "typedAudiences overrides audiences", "op": "insert",
                 "path": ["typedAudiences", rng.randint(0, n)], "value": entry}]
    if typed and isinstance(df.get("audiences"), list):
        _, a = rng.choice(typed)
        entry = {"id": a.get("id"), "name": "plain_twin", "conditions": json.dumps(rng.choice(trees))}
        return [{"kind": "audiences entry shadowed by typedAudiences", "op": "insert",
                 "path": ["audiences", rng.randint(0, len(plain))], "value": entry}]
    return []


def _leaves_in(tree: Any, path: List[Any]) -> List[Tuple[List[Any], dict]]:
    if isinstance(tree, dict):
        return [(path, tree)]
    if isinstance(tree, list):
        return [x for i, c in enumerate(tree) for x in _leaves_in(c, path + [i])]
    return []


def mut_bare_condition(df: dict, rng: random.Random) -> List[dict]:
    """A bare object (or a bare id) where a condition list is expected."""
    conds = _parsed_conditions(df)
    exps = experiments_of(df)
    r = rng.random()
    if conds and r < 0.7:
        path, tree, as_string = rng.choice(conds)
        leaves = _leaves_in(tree, [])
        leaf = copy.deepcopy(leaves[0][1]) if leaves else _leaf(df, rng)
        return [{"kind": "bare object audience conditions", "op": "set", "path": path,
                 "value": json.dumps(leaf) if as_string else leaf}]
    if exps:
        p, e = rng.choice(exps)
        ids = e.get("audienceIds") if isinstance(e.get("audienceIds"), list) else []
        return [{"kind": "bare id as audienceConditions", "op": "set", "path": p + ["audienceConditions"],
                 "value": ids[0] if ids else rng.choice(UNKNOWN_IDS)}]
    return []


def mut_condition(df: dict, rng: random.Random) -> List[dict]:
    """An unknown condition type, match type or operator; an odd value; a leaf field missing."""
    conds = _parsed_conditions(df)
    if not conds:
        return []
    path, tree, as_string = rng.choice(conds)
    tree = copy.deepcopy(tree)
    leaves = _leaves_in(tree, [])
    r = rng.random()
    if r < 0.15 and isinstance(tree, list) and tree and isinstance(tree[0], str):
        tree[0] = rng.choice(OPERATORS)
        kind = "unknown condition operator"
    elif r < 0.22:
        # deep nesting (kept under the library's documented 64-level JSON limit, datafile levels included)
        for _ in range(rng.randint(20, 50)):
            tree = [rng.choice(["and", "or"]), tree]
        kind = "condition deep nesting"
    elif r < 0.26:
        # an empty list inside the tree: the reference accepts the datafile and raises when it evaluates
        # the audience (datafile_generator.REFERENCE_CRASHES), so only acceptance and the other calls count
        tree = [rng.choice(["and", "or"]), tree, []] if rng.random() < 0.7 else []
        kind = "condition empty list"
    elif leaves:
        _, leaf = rng.choice(leaves)
        field = rng.choice(["type", "match", "value", "name", "delete"])
        if field == "type":
            leaf["type"] = rng.choice(CONDITION_TYPES)
        elif field == "match":
            leaf["match"] = rng.choice(MATCH_TYPES)
        elif field == "value":
            leaf["value"] = rng.choice(CONDITION_VALUES)
        elif field == "name":
            leaf["name"] = rng.choice([None, "", 5, "$opt_bucketing_id", "no_such_attribute"])
        else:
            field = rng.choice(["name", "type", "value", "match"])
            leaf.pop(field, None)
            field = "missing " + field
        kind = f"condition {field}"
    else:
        return []
    return [{"kind": kind, "op": "set", "path": path, "value": json.dumps(tree) if as_string else tree}]


def mut_malformed_conditions(df: dict, rng: random.Random) -> List[dict]:
    """A plain audience's conditions text that is no JSON: the reference refuses the datafile, unless a typed
    audience of the same id replaces that audience (it never parses a replaced one). Half of the time the
    audience is one a typed audience replaces, when there is one."""
    plain = [(p, a) for p, a in _list_at(df, ["audiences"]) if _is_dict(a) and isinstance(a.get("conditions"), str)]
    typed_ids = {a.get("id") for _, a in _list_at(df, ["typedAudiences"]) if _is_dict(a)}
    replaced = [(p, a) for p, a in plain if a.get("id") in typed_ids]
    if not plain:
        return []
    p, a = rng.choice(replaced if replaced and rng.random() < 0.5 else plain)
    text = a["conditions"]
    value = rng.choice([text[:-1], text + "]", text.replace('"', "'", 1), "", "or", "[\"or\", {]"])
    return [{"kind": "malformed conditions text" + (" (replaced)" if a.get("id") in typed_ids else ""),
             "op": "set", "path": p + ["conditions"], "value": value}]


def mut_missing_section(df: dict, rng: random.Random) -> List[dict]:
    present = [k for k in SECTIONS if k in df]
    if not present:
        return []
    key = rng.choice(present)
    return [{"kind": f"missing {key}", "op": "delete", "path": [key]}]


def mut_status(df: dict, rng: random.Random) -> List[dict]:
    owners = experiments_of(df) + holdouts_of(df)
    if not owners:
        return []
    p, _ = rng.choice(owners)
    value = rng.choice(STATUSES)
    return [{"kind": f"status {value!r}", "op": "set", "path": p + ["status"], "value": value}]


def mut_empty_string(df: dict, rng: random.Random) -> List[dict]:
    ents = entities_of(df)
    if not ents:
        return []
    p, e = rng.choice(ents)
    field = rng.choice([f for f in ("id", "key") if f in e] or ["id"])
    return [{"kind": f"empty {field}", "op": "set", "path": p + [field], "value": ""}]


def mut_unicode(df: dict, rng: random.Random) -> List[dict]:
    ents = [(p, e) for p, e in entities_of(df) if "key" in e]
    if not ents:
        return []
    p, _ = rng.choice(ents)
    return [{"kind": "unicode key", "op": "set", "path": p + ["key"], "value": rng.choice(UNICODE_KEYS)}]


def mut_version(df: dict, rng: random.Random) -> List[dict]:
    value = rng.choice(VERSIONS)
    return [{"kind": f"version {value!r}", "op": "set", "path": ["version"], "value": value}]


MUTATORS: List[Tuple[Callable[[dict, random.Random], List[dict]], float]] = [
    (mut_delete, 3), (mut_retype, 3), (mut_dangling, 3), (mut_duplicate, 2), (mut_out_of_range, 2),
    (mut_condition, 2), (mut_typed_override, 1), (mut_bare_condition, 1), (mut_missing_section, 1),
    (mut_status, 1), (mut_empty_string, 1), (mut_unicode, 1), (mut_version, 0.5), (mut_nonfinite, 0.3),
]
# Drawn apart (its own random stream), so that every seed keeps the mutations the others drew before it
# existed (tests pick seeds by what they mutate): one seed in MALFORMED_CONDITIONS_ONE_IN gets it too.
MALFORMED_CONDITIONS_ONE_IN = 25


def apply_mutations(df: dict, mutations: Iterable[dict]) -> dict:
    """The datafile with the mutations applied in order (a new tree; `df` is left alone)."""
    df = copy.deepcopy(df)
    for m in mutations:
        _apply(df, m)
    return df


def _apply(df: dict, m: dict) -> None:
    path = list(m["path"])
    parent = _get(df, path[:-1]) if len(path) > 1 else df
    last = path[-1]
    value = copy.deepcopy(m.get("value"))
    if m["op"] == "insert":
        if isinstance(parent, list) and isinstance(last, int):
            parent.insert(min(last, len(parent)), value)
    elif isinstance(parent, dict) and isinstance(last, str):
        if m["op"] == "set":
            parent[last] = value
        elif last in parent:
            del parent[last]
    elif isinstance(parent, list) and isinstance(last, int) and 0 <= last < len(parent):
        if m["op"] == "set":
            parent[last] = value
        else:
            del parent[last]


def mutate(seed: int, base: dict) -> List[dict]:
    """The mutations of a seed's case: 1-3 (none for one seed in UNMUTATED_ONE_IN)."""
    rng = random.Random(f"difffuzz-{seed}")
    if rng.randrange(UNMUTATED_ONE_IN) == 0:
        return []
    mutators, weights = zip(*MUTATORS)
    df = copy.deepcopy(base)
    out: List[dict] = []
    for _ in range(rng.choice([1, 1, 2, 3])):
        for _attempt in range(5):
            ops = rng.choices(mutators, weights)[0](df, rng)
            if ops:
                for op in ops:
                    _apply(df, op)
                out += ops
                break
    extra = random.Random(f"difffuzz-malformed-conditions-{seed}")
    if extra.randrange(MALFORMED_CONDITIONS_ONE_IN) == 0:
        ops = mut_malformed_conditions(df, extra)
        for op in ops:
            _apply(df, op)
        out += ops
    return out


# ===================================================================================================
# Users: generate_users's users (values drawn to hit the conditions), many given exotic values
# ===================================================================================================

EXOTIC_VALUES: List[Any] = [
    "", "\0", "a\0b", "ünïcödé", "日本語", "😀", "e\u0301", " ", "x" * 300,
    0, -1, 2 ** 31, 2 ** 53, 2 ** 53 + 1, -(2 ** 53 + 1), 2 ** 63, 2 ** 64, 2 ** 64 + 1, -(2 ** 64), 10 ** 40,
    0.0, -0.0, 5e-324, 1e-300, 1.7976931348623157e308, float("nan"), float("inf"), float("-inf"), 0.1,
    True, False, None,
    [], [1, "a"], {}, {"k": "v"}, (1, 2), (), b"bytes", decimal.Decimal("1.5"),
]
EXOTIC_USER_IDS = ["", "\0", "u\0ser", "ü-ser", "😀", "user_1", "x" * 500]


def _exotic_near(value: Any, rng: random.Random) -> Any:
    """A value of an unusual type or size next to a condition value."""
    if isinstance(value, bool):
        return rng.choice([int(value), float(value), str(value), [value]])
    if isinstance(value, int):
        return rng.choice([value + 2 ** 64, -value - 2 ** 64, float(value) + 1e-9, value * 10 ** 20, str(value),
                           decimal.Decimal(value), (value,)])
    if isinstance(value, float):
        return rng.choice([math.nextafter(value, math.inf), math.nextafter(value, -math.inf), -value,
                           int(value) if math.isfinite(value) else 0, str(value)])
    if isinstance(value, str):
        return rng.choice([value + "\0", "\0" + value, value.encode("utf-8"), [value], {value: value}, (value,)])
    return rng.choice(EXOTIC_VALUES)


def fuzz_users(seed: int, base: dict, n: int) -> List[Tuple[str, Dict[str, Any]]]:
    """n users of the seed: most from generate_users, half of them with 1-3 exotic values (of every Python
    type the reference accepts: its API takes any dict), some with exotic user ids."""
    rng = random.Random(f"difffuzz-users-{seed}")
    condition_values: Dict[str, List[Any]] = collections.defaultdict(list)
    try:
        for leaf in condition_leaves(base):
            if isinstance(leaf.get("name"), str):
                condition_values[leaf["name"]].append(leaf.get("value"))
    except Exception:  # noqa: BLE001 - only a source of nearby values
        pass
    users = []
    for user_id, attrs in generate_users(seed, base, n):
        attrs = dict(attrs)
        if rng.random() < 0.5:
            names = sorted(set(attrs) | set(condition_values)) or ["attr"]
            for _ in range(rng.randint(1, 3)):
                name = rng.choice(names)
                if condition_values.get(name) and rng.random() < 0.5:
                    attrs[name] = _exotic_near(rng.choice(condition_values[name]), rng)
                else:
                    attrs[name] = rng.choice(EXOTIC_VALUES)
        if rng.random() < 0.05:
            attrs[rng.choice(["", "\0", "ü", "$opt_bucketing_id"])] = rng.choice(EXOTIC_VALUES)
        if rng.random() < 0.1:
            user_id = rng.choice(EXOTIC_USER_IDS)
        users.append((user_id, attrs))
    return users


# ===================================================================================================
# The two sides
# ===================================================================================================

def make_reference(text: str, dispatcher: RecordingDispatcher) -> optimizely_mod.Optimizely:
    """The reference client (may raise: a reference crash).  ForwardingEventProcessor: events are
    dispatched synchronously, in call order; ODP off."""
    return optimizely_mod.Optimizely(
        datafile=text, logger=_SILENT, event_processor=ForwardingEventProcessor(dispatcher, logger=_SILENT),
        settings=OptimizelySdkSettings(odp_disabled=True))


def make_ours(text: str, dispatcher: RecordingDispatcher) -> Any:
    # (a refused datafile is a result here, not news: the library's log stays quiet)
    return experiment.Client(datafile=text, event_dispatcher=dispatcher, profile_store="none", logger=_SILENT,
                             log_level="error")


def reference_accepts(client: Any) -> bool:
    return bool(client.is_valid) and client.config_manager.get_config() is not None


# A variation, flag or variable key that is a number, boolean or null in the datafile (the reference keeps
# it, unchecked by its schema): the reference hands the value itself out (variation_key -1, a decide_all or
# variables dict keyed by None), ours hands out Python's str() of it, since keys are strings in the C ABI
# (README "Deliberate differences"; DatafileCompiler's `lenientText` / PythonScalars' `pythonText`; a list or
# dict there is refused, as the reference's config construction cannot hash it). Counted apart, per place,
# in Tally.deliberate -- and only where ours is exactly that text: any other value stays a difference.
DELIBERATE_KEY_TEXT = "key handed out as str() of the datafile's non-string key (README)"


def documented_key_text(value: Any) -> Optional[str]:
    """What ours documents handing out for a datafile key `value` that is no string: Python's str() of a
    number, boolean or null (`-1` -> "-1", `1.5` -> "1.5", `True` -> "True", `None` -> "None"); None
    for a string (handed out as it is) and for anything else (not converted: refused when loaded)."""
    if value is None or isinstance(value, (bool, int, float)):
        return str(value)
    return None


def is_documented_key_text(reference: Any, ours: Any) -> bool:
    """Whether `ours` is exactly the documented text of the reference's non-string key `reference`."""
    text = documented_key_text(reference)
    return text is not None and type(ours) is str and ours == text


def keys_as_documented_text(reference: dict, ours: dict) -> Tuple[dict, int]:
    """The reference's dict with each non-string key renamed to its documented text where ours has that
    text (and the reference has no such string key of its own): (the renamed dict, how many keys)."""
    if not isinstance(reference, dict) or not isinstance(ours, dict):
        return reference, 0
    renamed, count = {}, 0
    for key, value in reference.items():
        text = documented_key_text(key)
        if text is not None and text in ours and text not in reference:
            renamed[text] = value
            count += 1
        else:
            renamed[key] = value
    return renamed, count


def nonstring_key_texts(df: Any) -> set:
    """The documented texts of the datafile's non-string `key` fields (variations, flags, variables, rules
    anywhere): only a text in this set can be a deliberate difference (a string key "None" cannot)."""
    found = set()
    stack = [df]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if "key" in node and documented_key_text(node["key"]) is not None:
                found.add(documented_key_text(node["key"]))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found


def crash_kind(op: str, exc: BaseException) -> str:
    """A reference exception's kind: the call, the exception type and the innermost reference frame."""
    where = ""
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename.startswith(OPTIMIZELY_PACKAGE):
            rel = os.path.relpath(frame.filename, OPTIMIZELY_PACKAGE)
            where = f"{rel}:{frame.lineno} {frame.name}"
    return f"{op}: {type(exc).__name__} at {where or '?'}"


_QUOTED = re.compile(r"\"[^\"]*\"|'[^']*'")
_NUMBER = re.compile(r"-?\d+(\.\d+)?([eE][-+]?\d+)?")
_INDEX = re.compile(r"\[\d+\]")
_TREE = re.compile(r"(?<=: )\[.*\]")
_GOT = re.compile(r"\bgot (an? )?[a-z]+")        # "expected a string, got an integer": the wrong type varies


def template(message: Any, width: int = 90) -> str:
    """A message with its quoted parts and numbers generalized, to group differences by it."""
    text = _TREE.sub("<list>", str(message))   # a condition tree after "...: "
    text = _QUOTED.sub("<>", text)
    text = _INDEX.sub("[]", text)              # a path's indices
    text = _GOT.sub("got <type>", text)
    text = _NUMBER.sub("N", text)
    return text[:width]


def _jsonable(value: Any) -> Any:
    """`value` for a JSON report: plain JSON stays as is, the rest becomes its repr (typed)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"float": repr(value)}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: _jsonable(v) for k, v in value.items()}
    return {"python": repr(value)}


def _mutations_for_report(mutations: List[dict]) -> List[dict]:
    return [{**m, "value": _jsonable(m["value"])} if "value" in m else dict(m) for m in mutations]


# ===================================================================================================
# One case: a datafile, its users, the calls
# ===================================================================================================

def first_reason_difference(ref: List[str], ours: List[str]) -> Tuple[int, Optional[str], Optional[str]]:
    """(index, reference message, our message) of the first place the reason lists differ."""
    for i in range(max(len(ref), len(ours))):
        a = ref[i] if i < len(ref) else None
        b = ours[i] if i < len(ours) else None
        if a != b:
            return i, a, b
    return len(ref), None, None


class Tally:
    """What a run found: comparisons per call, differences per signature (with the first example of
    each), reference crashes per kind (with one example)."""

    def __init__(self) -> None:
        self.comparisons: Dict[str, int] = collections.Counter()
        self.differences: Dict[str, int] = collections.Counter()
        self.examples: Dict[str, dict] = {}
        self.crashes: Dict[str, int] = collections.Counter()
        self.crash_examples: Dict[str, dict] = {}
        self.cases: Dict[str, int] = collections.Counter()
        # documented deliberate differences (DELIBERATE_KEY_TEXT), per place: not differences
        self.deliberate: Dict[str, int] = collections.Counter()
        self.mutation_kinds: Dict[str, int] = collections.Counter()
        self.all_differences: Optional[List[dict]] = None     # --replay keeps every one

    def merge(self, other: "Tally") -> None:
        for name in ("comparisons", "differences", "crashes", "cases", "deliberate", "mutation_kinds"):
            getattr(self, name).update(getattr(other, name))
        for sig, ex in other.examples.items():
            self.examples.setdefault(sig, ex)
        for kind, ex in other.crash_examples.items():
            self.crash_examples.setdefault(kind, ex)

    @property
    def total_comparisons(self) -> int:
        return sum(self.comparisons.values())

    @property
    def total_differences(self) -> int:
        return sum(self.differences.values())

    @property
    def total_deliberate(self) -> int:
        """Documented deliberate differences: the refused datafiles and the keys handed out as text."""
        return (self.cases["reference accepts, then raises deciding: ours refuses on purpose"]
                + sum(self.deliberate.values()))

    def to_json(self) -> dict:
        return {"comparisons": dict(self.comparisons), "differences": dict(self.differences),
                "examples": self.examples, "crashes": dict(self.crashes), "crash_examples": self.crash_examples,
                "cases": dict(self.cases), "deliberate": dict(self.deliberate),
                "mutation_kinds": dict(self.mutation_kinds)}

    @classmethod
    def from_json(cls, data: dict) -> "Tally":
        t = cls()
        for name in ("comparisons", "differences", "crashes", "cases", "mutation_kinds"):
            getattr(t, name).update(data[name])
        t.deliberate.update(data.get("deliberate", {}))
        t.examples = dict(data["examples"])
        t.crash_examples = dict(data["crash_examples"])
        return t


class Case:
    """One seed: builds both clients and runs the calls, recording into a Tally."""

    def __init__(self, seed: int, n_users: int, tally: Tally, mutations: Optional[List[dict]] = None):
        self.seed = seed
        self.n_users = n_users
        self.tally = tally
        self.base = generate_datafile(seed)
        self.mutations = mutate(seed, self.base) if mutations is None else mutations
        self.df = apply_mutations(self.base, self.mutations)
        self.text = json.dumps(self.df, ensure_ascii=random.Random(f"difffuzz-text-{seed}").random() < 0.5)
        self.key_texts = nonstring_key_texts(self.df)
        self.ref: Any = None
        self.ours: Any = None
        self.ref_rec = RecordingDispatcher()
        self.our_rec = RecordingDispatcher()
        self.user: Tuple[int, str, Dict[str, Any]] = (-1, "", {})
        self.call: Dict[str, Any] = {}

    # -- bookkeeping ------------------------------------------------------------------------------

    def difference(self, signature: str, reference: Any, ours: Any, diff: str = "") -> None:
        t = self.tally
        t.differences[signature] += 1
        example = None
        if signature not in t.examples or t.all_differences is not None:
            index, user_id, attrs = self.user
            example = {"signature": signature, "seed": self.seed, "mutations": _mutations_for_report(self.mutations),
                       "user_index": index, "user_id": _jsonable(user_id),
                       "attributes": {k if isinstance(k, str) else repr(k): _jsonable(v) for k, v in attrs.items()},
                       "call": _jsonable(self.call), "diff": diff,
                       "reference": _jsonable(reference), "ours": _jsonable(ours)}
            t.examples.setdefault(signature, example)
        if t.all_differences is not None and example is not None:
            t.all_differences.append(example)

    def crash(self, op: str, exc: BaseException) -> None:
        kind = crash_kind(op, exc)
        self.tally.crashes[kind] += 1
        if kind not in self.tally.crash_examples:
            index, user_id, attrs = self.user
            self.tally.crash_examples[kind] = {
                "seed": self.seed, "mutations": _mutations_for_report(self.mutations), "user_index": index,
                "user_id": _jsonable(user_id), "attributes": _jsonable({str(k): v for k, v in attrs.items()}),
                "call": _jsonable(self.call), "exception": f"{type(exc).__name__}: {exc}"[:300]}

    def compared(self, op: str, n: int = 1) -> None:
        self.tally.comparisons[op] += n

    @staticmethod
    def call_ours(fn: Callable, *args: Any, **kwargs: Any) -> Tuple[Any, Optional[BaseException]]:
        try:
            return fn(*args, **kwargs), None
        except Exception as exc:  # noqa: BLE001 - an exception is a result to compare
            return None, exc

    def ours_raised(self, op: str, exc: BaseException, reference: Any) -> None:
        """Our call raised where the reference answered: one difference (the events the reference
        dispatched for the call are dropped, not counted again as a missing event)."""
        # an error about the user's input is the same whatever the call: one signature for all calls
        where = "any call" if str(exc).startswith(("attribute", "user_id")) else op
        self.difference(f"{where}: ours raised {type(exc).__name__}: {template(exc, 60)}", reference,
                        f"{type(exc).__name__}: {exc}")
        self.check_events(op, skip=True)

    # -- acceptance -------------------------------------------------------------------------------

    def open(self) -> bool:
        """Creates both clients and compares acceptance; True when both accept (calls follow)."""
        self.call = {"op": "accept"}
        try:
            self.ref = make_reference(self.text, self.ref_rec)
            ref_ok = reference_accepts(self.ref)
        except Exception as exc:  # noqa: BLE001 - the reference crashed: no answer
            self.crash("accept", exc)
            self.tally.cases["reference crashed on the datafile"] += 1
            return False
        try:
            self.ours = make_ours(self.text, self.our_rec)
            ours_ok, why = True, None
        except Exception as exc:  # noqa: BLE001 - a refused datafile (or a binding error)
            ours_ok, why = False, exc
        self.compared("accept")
        self.tally.cases[f"{'mutated' if self.mutations else 'valid'} datafile, reference "
                         f"{'accepts' if ref_ok else 'refuses'}"] += 1
        if ref_ok and not ours_ok and self.reference_cannot_decide():
            # The reference is inconsistent here: it accepts the datafile, then raises while deciding it.
            # Ours refuses such a datafile on purpose, naming the place (README "Deliberate differences").
            self.tally.cases["reference accepts, then raises deciding: ours refuses on purpose"] += 1
        elif ref_ok and not ours_ok:
            self.difference(f"accept: reference accepts, ours refuses ({type(why).__name__}: {template(why, 110)})",
                            True, f"{type(why).__name__}: {why}")
        elif ours_ok and not ref_ok:
            kinds = ", ".join(sorted({m["kind"].split(" ")[0] for m in self.mutations})) or "no mutation"
            self.difference(f"accept: reference refuses, ours accepts [{kinds}]", False, True)
        return ref_ok and ours_ok

    def reference_cannot_decide(self) -> bool:
        """Whether the reference raises while deciding the datafile it accepted, for the case's users:
        decide_all with reasons and get_variation of every experiment (what a user of the datafile calls)."""
        config = self.ref.config_manager.get_config()
        experiments = [k for k in getattr(config, "experiment_key_map", {}) if isinstance(k, str)]
        for _, (user_id, attrs) in zip(range(40), fuzz_users(self.seed, self.base, self.n_users)):
            try:
                self.ref.create_user_context(user_id, attrs).decide_all(["INCLUDE_REASONS"])
                for key in experiments:
                    self.ref.get_variation(key, user_id, attrs)
            except Exception as exc:  # noqa: BLE001 - the reference's own failure is what is asked
                self.crash("decide on a datafile it accepted", exc)
                return True
        return False

    def close(self) -> None:
        for client in (self.ref, self.ours):
            try:
                if client is not None:
                    client.close()
            except Exception:  # noqa: BLE001 - closing is not compared
                pass

    # -- events -----------------------------------------------------------------------------------

    def check_events(self, op: str, skip: bool = False) -> None:
        """Compares the payloads dispatched since the last check (or drops them when `skip`)."""
        if self.ours is not None:
            try:
                self.ours.flush()
            except Exception:  # noqa: BLE001 - reported through the event count
                pass
        ref_new, our_new = self.ref_rec.events, self.our_rec.events
        self.ref_rec.events, self.our_rec.events = [], []
        if skip or (not ref_new and not our_new):
            return
        self.compared("event payload", max(len(ref_new), len(our_new)))
        if len(ref_new) != len(our_new):
            self.difference(f"{op} event count: reference {len(ref_new)}, ours {len(our_new)}",
                            [normalize_event(e)[0] for e in ref_new], [normalize_event(e)[0] for e in our_new])
            return
        for r, o in zip(ref_new, our_new):
            rn, _ = normalize_event(r)
            on, problems = normalize_event(o)
            rn = self.event_keys_as_text(op, rn, on)
            if problems:
                self.difference(f"{op} event: " + "; ".join(sorted(set(problems))), rn, on)
            d = typed_diff(rn, on, "event")
            if d:
                self.difference(_signature(f"{op} event", d), rn, on, d)

    def event_keys_as_text(self, op: str, rn: dict, on: dict) -> dict:
        """The reference's event with each decision's metadata `flag_key` / `variation_key` replaced by
        ours where ours is its documented text (DELIBERATE_KEY_TEXT); copies only what it changes."""
        try:
            rp, op_ = rn["params"], on["params"]
            pairs = list(zip(rp["visitors"], op_["visitors"]))
        except (KeyError, TypeError):
            return rn
        visitors = []
        for rv, ov in pairs:
            try:
                snapshots = []
                for rs, os_ in zip(rv["snapshots"], ov["snapshots"]):
                    decisions = []
                    for rd, od in zip(rs["decisions"], os_["decisions"]):
                        meta = dict(rd["metadata"])
                        for field in ("flag_key", "variation_key"):
                            if field in meta and self.key_as_text(f"{op} event metadata.{field}", meta[field],
                                                                  od["metadata"].get(field)):
                                meta[field] = od["metadata"][field]
                        decisions.append({**rd, "metadata": meta})
                    snapshots.append({**rs, "decisions": decisions + rs["decisions"][len(decisions):]})
                visitors.append({**rv, "snapshots": snapshots + rv["snapshots"][len(snapshots):]})
            except (KeyError, TypeError, AttributeError):
                visitors.append(rv)
        return {**rn, "params": {**rp, "visitors": visitors + rp["visitors"][len(visitors):]}}

    # -- the calls --------------------------------------------------------------------------------

    def decide(self, flag: str, options: List[str], op: str = "decide") -> None:
        index, user_id, attrs = self.user
        self.call = {"op": op, "flag": flag, "options": options}
        try:
            uc = self.ref.create_user_context(user_id, dict(attrs))
            rd = uc.decide(flag, list(options))
            r = {"flag_key": rd.flag_key, "enabled": rd.enabled, "variation_key": rd.variation_key,
                 "rule_key": rd.rule_key, "variables": rd.variables, "reasons": list(rd.reasons)}
        except Exception as exc:  # noqa: BLE001
            self.crash(op, exc)
            self.call_ours(self.ours.decide, user_id, flag, dict(attrs), options=list(options))
            self.check_events(op, skip=True)
            return
        o, exc = self.call_ours(self.ours.decide, user_id, flag, dict(attrs), options=list(options))
        self.compared(op)
        if exc is not None:
            self.ours_raised(op, exc, r)
        else:
            self.compare_decision(op, r, o)
        self.check_events(op)

    def key_as_text(self, place: str, reference: Any, ours: Any) -> bool:
        """Whether ours is the documented text of a non-string key the datafile has (DELIBERATE_KEY_TEXT):
        then counted apart under `place`."""
        if type(ours) is str and ours in self.key_texts and is_documented_key_text(reference, ours):
            self.tally.deliberate[f"{place}: {DELIBERATE_KEY_TEXT}"] += 1
            return True
        return False

    def dict_keys_as_text(self, place: str, reference: Any, ours: Any) -> Any:
        """The reference's dict with its non-string keys renamed to ours' documented texts (counted apart)."""
        if not isinstance(reference, dict) or not isinstance(ours, dict):
            return reference
        ours_known = {k: v for k, v in ours.items() if k in self.key_texts}
        renamed, count = keys_as_documented_text(reference, ours_known)
        if count:
            self.tally.deliberate[f"{place}: {DELIBERATE_KEY_TEXT}"] += count
        return renamed

    def compare_decision(self, op: str, r: dict, o: Any) -> None:
        ours = {k: getattr(o, k, None) for k in ("flag_key", "enabled", "variation_key", "rule_key", "variables")}
        ours["reasons"] = list(getattr(o, "reasons", []) or [])
        r = dict(r)
        for field in ("variation_key", "flag_key"):
            if self.key_as_text(f"{op} {field}", r[field], ours[field]):
                r[field] = ours[field]
        r["variables"] = self.dict_keys_as_text(f"{op} variables", r["variables"], ours["variables"])
        for field in ("enabled", "variation_key", "rule_key", "variables", "flag_key", "reasons"):
            d = typed_diff(r[field], ours[field], field)
            if d:
                if field == "reasons":
                    i, a, b = first_reason_difference(r[field], ours[field])
                    d = (f"reasons[{i}] (of {len(r[field])} / {len(ours[field])}): reference {a!r} / ours {b!r}")
                self.difference(f"{op} {self.decision_kind(field, r[field], ours[field])}", r, ours, d)
                return

    @staticmethod
    def decision_kind(field: str, ref: Any, ours: Any) -> str:
        """The kind of a decision difference: the field, and what differs in it."""
        if field == "variables":
            if isinstance(ref, dict) and isinstance(ours, dict):
                if set(ref) != set(ours):
                    return "variables: keys differ"
                for k in ref:
                    if typed_diff(ref[k], ours[k]):
                        rt, ot = type(ref[k]).__name__, type(ours[k]).__name__
                        return f"variables: value ({rt} vs {ot})" if rt == ot else f"variables: {rt} vs {ot}"
            return "variables"
        if field == "reasons":
            _, a, b = first_reason_difference(ref, ours)
            if a is None:
                return f'reasons: ours has more: "{template(b)}"'
            return f'reasons: reference "{template(a)}"'

        if field in ("variation_key", "rule_key"):
            if ref is None or ours is None:
                return f"{field}: reference {'None' if ref is None else 'set'}, ours {'None' if ours is None else 'set'}"
            return f"{field}: different"
        return field

    def decide_all(self, options: List[str]) -> None:
        op = "decide_all"
        index, user_id, attrs = self.user
        self.call = {"op": op, "options": options}
        try:
            uc = self.ref.create_user_context(user_id, dict(attrs))
            rd = uc.decide_all(list(options))
            r = {k: {"flag_key": v.flag_key, "enabled": v.enabled, "variation_key": v.variation_key,
                     "rule_key": v.rule_key, "variables": v.variables, "reasons": list(v.reasons)}
                 for k, v in rd.items()}
        except Exception as exc:  # noqa: BLE001
            self.crash(op, exc)
            self.call_ours(self.ours.decide_all, user_id, dict(attrs), options=list(options))
            self.check_events(op, skip=True)
            return
        o, exc = self.call_ours(self.ours.decide_all, user_id, dict(attrs), options=list(options))
        self.compared(op, max(1, len(r)))
        if exc is not None:
            self.ours_raised(op, exc, r)
        else:
            o = dict(o)
            r = self.dict_keys_as_text("decide_all flag keys", r, o)
            if list(r) != list(o):
                kind = "order" if set(r) == set(o) else "keys"
                self.difference(f"decide_all: flag {kind} differ", list(r), list(o))
            for k in r:
                if k in o:
                    self.compare_decision(op, r[k], o[k])
        self.check_events(op)

    def variation(self, key: str, activate: bool, op: str) -> None:
        index, user_id, attrs = self.user
        self.call = {"op": op, "experiment": key}
        try:
            fn = self.ref.activate if activate else self.ref.get_variation
            r = fn(key, user_id, dict(attrs))
        except Exception as exc:  # noqa: BLE001
            self.crash(op, exc)
            self.call_ours(self.ours.activate if activate else self.ours.get_variation, key, user_id, dict(attrs))
            self.check_events(op, skip=True)
            return
        o, exc = self.call_ours(self.ours.activate if activate else self.ours.get_variation, key, user_id,
                                dict(attrs))
        self.compared(op)
        if exc is not None:
            self.ours_raised(op, exc, r)
        elif self.key_as_text(f"{op} variation key", r, o):
            pass
        elif typed_diff(r, o):
            kind = ("reference None, ours a variation" if r is None else
                    "reference a variation, ours None" if o is None else "different variations")
            self.difference(f"{op}: {kind}", r, o)
        self.check_events(op)

    def track(self, event_key: str, tags: Optional[dict], op: str = "track") -> None:
        index, user_id, attrs = self.user
        self.call = {"op": op, "event": event_key, "tags": tags}
        try:
            self.ref.track(event_key, user_id, dict(attrs), copy.deepcopy(tags))
        except Exception as exc:  # noqa: BLE001
            self.crash(op, exc)
            self.call_ours(self.ours.track, event_key, user_id, dict(attrs), copy.deepcopy(tags))
            self.check_events(op, skip=True)
            return
        _, exc = self.call_ours(self.ours.track, event_key, user_id, dict(attrs), copy.deepcopy(tags))
        if exc is not None:
            self.compared(op)
            self.ours_raised(op, exc, None)
        self.check_events(op)

    # -- the whole case ---------------------------------------------------------------------------

    def keys(self) -> Tuple[List[str], List[str], List[str], List[str]]:
        """Flag, experiment, delivery rule and event keys, as the reference's config has them (only the
        string ones: the binding's API takes strings)."""
        config = self.ref.config_manager.get_config()

        def strings(xs: Iterable[Any]) -> List[str]:
            return [x for x in xs if isinstance(x, str)]
        flags = strings(f.get("key") for f in (config.feature_flags or []) if isinstance(f, dict))
        rule_keys = []
        for layer in getattr(config, "rollout_id_map", {}).values():
            for e in getattr(layer, "experiments", None) or []:
                if isinstance(e, dict):
                    rule_keys.append(e.get("key"))
        exps = [k for k in strings(getattr(config, "experiment_key_map", {})) if k not in set(rule_keys)]
        return flags, exps, strings(rule_keys), strings(getattr(config, "event_key_map", {}))

    def run(self) -> None:
        self.tally.mutation_kinds.update(m["kind"].split(" ")[0] for m in self.mutations)
        try:
            if not self.open():
                return
            flags, exps, rules, events = self.keys()
            for index, (user_id, attrs) in enumerate(fuzz_users(self.seed, self.base, self.n_users)):
                self.user = (index, user_id, attrs)
                self.run_user(index, flags, exps, rules, events)
        finally:
            self.close()

    def run_user(self, index: int, flags: List[str], exps: List[str], rules: List[str], events: List[str]) -> None:
        rng = random.Random(f"difffuzz-calls-{self.seed}-{index}")
        for flag in flags:
            options = ["INCLUDE_REASONS"]
            if rng.random() < 0.1:
                options.append(rng.choice(["EXCLUDE_VARIABLES", "DISABLE_DECISION_EVENT", "ENABLED_FLAGS_ONLY"]))
            self.decide(flag, options)
        if index % 4 == 1:
            self.decide(rng.choice(["no_such_flag", "", "ü-flag"]), ["INCLUDE_REASONS"], op="decide(unknown flag)")
        if index % 3 == 0:
            self.decide_all(["INCLUDE_REASONS"] if rng.random() < 0.8 else ["INCLUDE_REASONS", "ENABLED_FLAGS_ONLY"])
        for key in exps:
            self.variation(key, False, "get_variation")
        if index % 4 == 2:
            for key in rules:
                self.variation(key, False, "get_variation(delivery rule)")
        if index % 5 == 3:
            self.variation(rng.choice(["no_such_experiment", "ü-exp"]), False, "get_variation(unknown key)")
        for key in rng.sample(exps, min(len(exps), 2)):
            self.variation(key, True, "activate")
        if events and rng.random() < 0.9:
            self.track(rng.choice(events), random_tags(rng))
        elif rng.random() < 0.5:
            self.track("no_such_event", random_tags(rng), op="track(unknown event)")


def run_seed(seed: int, n_users: int) -> Tally:
    tally = Tally()
    Case(seed, n_users, tally).run()
    return tally


def _run_seed_json(args: Tuple[int, int]) -> dict:
    return run_seed(*args).to_json()


def run(seeds: Iterable[int], n_users: int = DEFAULT_USERS, jobs: int = 1,
        progress: Optional[Callable[[int, Tally], None]] = None) -> Tally:
    """Runs the seeds (in worker processes when jobs > 1); results merged in seed order, so the first
    example of a signature is the one of the lowest seed whatever the job count."""
    seeds = list(seeds)
    total = Tally()
    if jobs <= 1:
        for seed in seeds:
            total.merge(run_seed(seed, n_users))
            if progress:
                progress(seed, total)
        return total
    import multiprocessing
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(jobs) as pool:
        for seed, data in zip(seeds, pool.imap(_run_seed_json, [(s, n_users) for s in seeds], chunksize=4)):
            total.merge(Tally.from_json(data))
            if progress:
                progress(seed, total)
    return total


# ===================================================================================================
# Minimization: drop the mutations and attributes a difference does not need
# ===================================================================================================

def reproduces(example: dict, mutations: List[dict], attrs: Dict[str, Any]) -> bool:
    """Whether the example's call, with these mutations and attributes, still gives its signature."""
    seed, index = example["seed"], example["user_index"]
    tally = Tally()
    case = Case(seed, 0, tally, mutations=mutations)
    try:
        if not case.open() or example["call"]["op"] == "accept":
            return example["signature"] in tally.differences
        users = fuzz_users(seed, case.base, index + 1)
        user_id = users[index][0]
        case.user = (index, user_id, attrs)
        call = example["call"]
        op = call["op"]
        if op == "decide_all":
            case.decide_all(list(call["options"]))
        elif op.startswith("decide"):
            case.decide(call["flag"], list(call["options"]), op=op)
        elif op.startswith(("get_variation", "activate")):
            case.variation(call["experiment"], op == "activate", op)
        elif op.startswith("track"):
            case.track(call["event"], call["tags"], op)
        return example["signature"] in tally.differences
    finally:
        case.close()


def minimize(example: dict, mutations: List[dict]) -> dict:
    """Greedy: each mutation, then each attribute, removed when the difference stays."""
    seed, index = example["seed"], example["user_index"]
    base = generate_datafile(seed)
    attrs: Dict[str, Any] = {}
    if index >= 0:
        attrs = dict(fuzz_users(seed, base, index + 1)[index][1])
    kept = list(mutations)
    for m in list(kept):
        trial = [x for x in kept if x is not m]
        if reproduces(example, trial, attrs):
            kept = trial
    if example["call"]["op"] != "accept":
        for key in list(attrs):
            trial_attrs = {k: v for k, v in attrs.items() if k != key}
            if reproduces(example, kept, trial_attrs):
                attrs = trial_attrs
    return {"mutations": _mutations_for_report(kept),
            "attributes": {k if isinstance(k, str) else repr(k): _jsonable(v) for k, v in attrs.items()}}


def minimize_examples(tally: Tally, limit: int) -> None:
    for sig in sorted(tally.examples, key=lambda s: -tally.differences[s])[:limit]:
        example = tally.examples[sig]
        seed = example["seed"]
        mutations = mutate(seed, generate_datafile(seed))
        try:
            example["minimal"] = minimize(example, mutations)
        except Exception as exc:  # noqa: BLE001 - a minimization problem must not hide the finding
            example["minimal"] = {"error": f"{type(exc).__name__}: {exc}"}


# ===================================================================================================
# Reports
# ===================================================================================================

def summary_line(tally: Tally, seeds: range, seconds: float) -> str:
    return (f"difffuzz: {tally.total_comparisons:,} comparisons against optimizely-sdk 5.7.0, "
            f"seeds {seeds.start}:{seeds.stop}, {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d}, "
            f"{tally.total_differences:,} differences ({len(tally.differences)} signatures), "
            f"{sum(tally.crashes.values()):,} reference crashes skipped, "
            f"{tally.total_deliberate:,} deliberate differences apart, {seconds:.0f} s")


def describe_example(sig: str, ex: dict, width: int = 600) -> List[str]:
    """A signature's example in a few lines: where (seed, user, call), the mutations and attributes
    (minimized when --minimize shrank them), what differs."""
    minimal = ex.get("minimal") or {}
    mutations = minimal.get("mutations", ex.get("mutations"))
    attrs = minimal.get("attributes", ex.get("attributes"))
    lines = [f"seed {ex.get('seed')}, user {ex.get('user_index')} (id {json.dumps(ex.get('user_id'), ensure_ascii=False)}), "
             f"call {json.dumps(ex.get('call'), ensure_ascii=False)[:300]}",
             f"mutations{' (minimized)' if 'mutations' in minimal else ''}: "
             f"{json.dumps(mutations, ensure_ascii=False)[:width]}"]
    if (ex.get("call") or {}).get("op") != "accept":
        lines.append(f"attributes{' (minimized)' if 'attributes' in minimal else ''}: "
                     f"{json.dumps(attrs, ensure_ascii=False)[:width]}")
    detail = ex.get("diff") or ""
    if not detail or sig.startswith("accept") or "raised" in sig:
        detail = (f"reference {json.dumps(ex.get('reference'), ensure_ascii=False)[:width // 2]} / ours "
                  f"{json.dumps(ex.get('ours'), ensure_ascii=False)[:width // 2]}")
    lines.append(detail[:width])
    return lines


def deliberate_lines(tally: Tally) -> List[str]:
    """The documented deliberate differences (README), counted apart from the differences."""
    refused = {k: v for k, v in tally.cases.items() if "on purpose" in k or "deliberate" in k}
    if not refused and not tally.deliberate:
        return []
    lines = [f"deliberate differences (README \"Deliberate differences\"; not differences): {tally.total_deliberate:,}"]
    for kind, count in sorted({**refused, **tally.deliberate}.items(), key=lambda kv: -kv[1]):
        lines.append(f"  {count:8,}  {kind}")
    return lines


def format_report(tally: Tally, limit: int = 60, example_width: int = 600) -> str:
    lines = []
    comp = ", ".join(f"{k} {v:,}" for k, v in sorted(tally.comparisons.items(), key=lambda kv: -kv[1]))
    lines.append(f"comparisons: {comp}")
    lines.append("cases: " + ", ".join(f"{k}: {v}" for k, v in sorted(tally.cases.items())))
    lines += deliberate_lines(tally)
    if tally.differences:
        lines.append(f"{tally.total_differences:,} differences, {len(tally.differences)} signatures "
                     f"(count, signature, then its first example):")
        for sig, count in sorted(tally.differences.items(), key=lambda kv: -kv[1])[:limit]:
            lines.append(f"  {count:8,}  {sig}")
            lines += ["            " + line for line in describe_example(sig, tally.examples.get(sig, {}),
                                                                         example_width)]
        if len(tally.differences) > limit:
            lines.append(f"  ... {len(tally.differences) - limit} more signatures (--report writes them all)")
    if tally.crashes:
        lines.append("reference crashes (no answer; skipped):")
        for kind, count in sorted(tally.crashes.items(), key=lambda kv: -kv[1]):
            lines.append(f"  {count:8,}  {kind}")
    return "\n".join(lines)


def write_report(path: str, tally: Tally, seeds: range, seconds: float, n_users: int) -> None:
    data = {"summary": summary_line(tally, seeds, seconds), "seeds": [seeds.start, seeds.stop], "users": n_users,
            "library": os.environ.get("EXPERIMENT_LIBRARY"), "seconds": round(seconds, 1),
            "total_comparisons": tally.total_comparisons, "total_differences": tally.total_differences,
            "signatures": [{"signature": s, "count": c, "example": tally.examples.get(s)}
                           for s, c in sorted(tally.differences.items(), key=lambda kv: -kv[1])],
            "reference_crashes": [{"kind": k, "count": c, "example": tally.crash_examples.get(k)}
                                  for k, c in sorted(tally.crashes.items(), key=lambda kv: -kv[1])],
            "total_deliberate": tally.total_deliberate,
            **{k: v for k, v in tally.to_json().items()
               if k in ("comparisons", "cases", "deliberate", "mutation_kinds")}}
    with open(path, "w") as fh:
        json.dump(data, fh, indent=1, ensure_ascii=False, default=repr)


def markdown_report(tally: Tally, seeds: range, seconds: float) -> str:
    """The findings as Markdown: one entry per signature with its (minimized) example."""
    out = [f"`{summary_line(tally, seeds, seconds)}`", "",
           f"Library: `{os.environ.get('EXPERIMENT_LIBRARY')}`. Reproduce one seed with "
           "`python3 bindings/python/tests/difffuzz.py --replay SEED`.", ""]
    deliberate = deliberate_lines(tally)
    if deliberate:
        out += [deliberate[0][:1].upper() + deliberate[0][1:] + ":", ""]
        out += [f"- {line.split(None, 1)[0]} `{line.split(None, 1)[1]}`" for line in deliberate[1:]] + [""]
    if tally.differences:
        out += ["Differences (count, signature, first example):", ""]
    for sig, count in sorted(tally.differences.items(), key=lambda kv: -kv[1]):
        out.append(f"- **{count:,}** `{sig}`")
        out += [f"  - `{line}`" for line in describe_example(sig, tally.examples.get(sig, {}))]
    if tally.crashes:
        out += ["", "Reference crashes (no answer, skipped):", ""]
        for kind, count in sorted(tally.crashes.items(), key=lambda kv: -kv[1]):
            ex = tally.crash_examples.get(kind, {})
            out.append(f"- **{count:,}** `{kind}`: seed {ex.get('seed')}, call {json.dumps(ex.get('call'))[:200]}, "
                       f"{ex.get('exception', '')[:200]}")
    return "\n".join(out) + "\n"


def parse_seeds(text: str) -> range:
    if ":" in text:
        a, b = text.split(":", 1)
        return range(int(a), int(b))
    return range(int(text), int(text) + 1)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", default=f"{DEFAULT_SEEDS[0]}:{DEFAULT_SEEDS[1]}", help="A:B (B exclusive)")
    parser.add_argument("--users", type=int, default=DEFAULT_USERS, help="users per datafile")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes")
    parser.add_argument("--report", default=os.environ.get("DIFFFUZZ_REPORT"), help="JSON report file")
    parser.add_argument("--markdown", default=None, help="also write the findings as Markdown")
    parser.add_argument("--minimize", type=int, default=40, help="signatures whose example is shrunk")
    parser.add_argument("--replay", type=int, default=None, help="one seed, every difference printed")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    if experiment is None:
        print(f"cannot import the binding `experiment` (EXPERIMENT_LIBRARY="
              f"{os.environ.get('EXPERIMENT_LIBRARY')!r}): {IMPORT_ERROR!r}", file=sys.stderr)
        return 2
    if args.replay is not None:
        tally = Tally()
        tally.all_differences = []
        case = Case(args.replay, args.users, tally)
        print(f"seed {args.replay}: mutations {json.dumps(_mutations_for_report(case.mutations), ensure_ascii=False)}")
        case.run()
        for d in tally.all_differences:
            print(json.dumps(d, ensure_ascii=False, default=repr))
        print(format_report(tally))
        return 1 if tally.differences else 0

    seeds = parse_seeds(args.seeds)
    started = time.time()
    last = [started]

    def progress(seed: int, tally: Tally) -> None:
        if not args.quiet and time.time() - last[0] > 30:
            last[0] = time.time()
            print(f"  ... seed {seed}: {tally.total_comparisons:,} comparisons, {tally.total_differences:,} "
                  f"differences, {time.time() - started:.0f} s", file=sys.stderr, flush=True)

    tally = run(seeds, args.users, args.jobs, progress)
    seconds = time.time() - started
    if args.minimize and tally.examples:
        minimize_examples(tally, args.minimize)
    if not args.quiet:
        print(format_report(tally))
    if args.report:
        write_report(args.report, tally, seeds, seconds, args.users)
    if args.markdown:
        with open(args.markdown, "w") as fh:
            fh.write(markdown_report(tally, seeds, seconds))
    print(summary_line(tally, seeds, seconds))
    return 1 if tally.differences else 0


if __name__ == "__main__":
    sys.exit(main())
