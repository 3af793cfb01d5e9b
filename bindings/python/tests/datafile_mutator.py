"""Seeded mutations of valid datafiles, for acceptance tests against the reference SDK.

Each mutation takes a valid datafile (a dict from datafile_generator.generate_datafile) and breaks it in
one way the reference SDK (optimizely-sdk 5.7.0) may or may not accept: a field deleted or given another
JSON type, a number out of range, an entry duplicated, a reference to something that does not exist, a
condition given as a bare object, an unknown condition type or match type, an optional section removed,
an odd status.  `mutate(datafile, rng)` applies one mutation picked by `rng` and returns its name, so a
seed names a mutated datafile exactly.

    df = generate_datafile(seed)
    name = mutate(df, random.Random(seed))
"""

from __future__ import annotations

import json
import random
from typing import Any, Callable, Dict, List, Optional, Tuple

Path = Tuple[Any, ...]

# JSON values of every type, to put where another type belongs.
RETYPE_VALUES: List[Any] = ["", "x", "5000", 0, 1, -1, 10001, 2.5, True, False, None, [], ["x"], {}, {"a": 1}]
# endOfRange values outside 0...10000 (and a few at its edges).
OUT_OF_RANGE = [-1, -10000, 10001, 12000, 2 ** 31, 2 ** 40, 0, 10000]
ODD_STATUSES = ["Paused", "running", "RUNNING", "", "Launched", "Archived", "Not started", "Draft"]
UNKNOWN_TYPES = ["custom_dimension", "", "Custom_Attribute", "third_party"]
UNKNOWN_MATCHES = ["regex", "EXACT", "", "semver", "contains"]
OPTIONAL_SECTIONS = ["featureFlags", "rollouts", "typedAudiences", "integrations", "holdouts", "localHoldouts",
                     "environmentKey", "sdkKey", "anonymizeIP", "botFiltering", "sendFlagDecisions", "region"]


def _paths(node: Any, path: Path = ()) -> List[Path]:
    """Every path to a value inside `node` (not the root)."""
    out: List[Path] = []
    if isinstance(node, dict):
        for key, value in node.items():
            out.append(path + (key,))
            out.extend(_paths(value, path + (key,)))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            out.append(path + (index,))
            out.extend(_paths(value, path + (index,)))
    return out


def _get(node: Any, path: Path) -> Any:
    for part in path:
        node = node[part]
    return node


def _set(node: Any, path: Path, value: Any) -> None:
    _get(node, path[:-1])[path[-1]] = value


def _rules(df: dict) -> List[dict]:
    """Every experiment-like entity: experiments, group experiments, rollout rules, holdouts."""
    rules = list(df.get("experiments", []))
    for group in df.get("groups", []):
        rules.extend(group.get("experiments", []))
    for rollout in df.get("rollouts", []):
        rules.extend(rollout.get("experiments", []))
    rules.extend(df.get("holdouts", []))
    rules.extend(df.get("localHoldouts", []))
    return rules


def _pick_path(df: dict, rng: random.Random, want: Callable[[Path, Any], bool]) -> Optional[Path]:
    candidates = [p for p in _paths(df) if want(p, _get(df, p))]
    return rng.choice(candidates) if candidates else None


# ----- the mutations: each returns a description, or None when the datafile offers no place for it ----

def delete_field(df: dict, rng: random.Random) -> Optional[str]:
    path = _pick_path(df, rng, lambda p, v: isinstance(p[-1], str))
    if path is None:
        return None
    del _get(df, path[:-1])[path[-1]]
    return f"delete {path}"


def retype_field(df: dict, rng: random.Random) -> Optional[str]:
    path = _pick_path(df, rng, lambda p, v: isinstance(p[-1], str) and not isinstance(v, (dict, list)) or
                      isinstance(p[-1], str) and rng.random() < 0.3)
    if path is None:
        return None
    old = _get(df, path)
    choices = [v for v in RETYPE_VALUES if type(v) is not type(old)]
    value = rng.choice(choices)
    _set(df, path, json.loads(json.dumps(value)))
    return f"retype {path} {old!r:.40} -> {value!r}"


def range_out_of_bounds(df: dict, rng: random.Random) -> Optional[str]:
    path = _pick_path(df, rng, lambda p, v: p[-1] == "endOfRange")
    if path is None:
        return None
    value = rng.choice(OUT_OF_RANGE)
    _set(df, path, value)
    return f"endOfRange {path} = {value}"


def overlapping_ranges(df: dict, rng: random.Random) -> Optional[str]:
    path = _pick_path(df, rng, lambda p, v: p[-1] == "trafficAllocation" and isinstance(v, list) and len(v) >= 2)
    if path is None:
        return None
    ranges = _get(df, path)
    rng.shuffle(ranges)
    return f"shuffled ranges {path}"


def duplicate_entry(df: dict, rng: random.Random) -> Optional[str]:
    path = _pick_path(df, rng, lambda p, v: isinstance(v, list) and v and isinstance(v[0], dict))
    if path is None:
        return None
    entries = _get(df, path)
    copy = json.loads(json.dumps(rng.choice(entries)))
    if rng.random() < 0.5 and len(entries) >= 2:
        # same id or key as another entry, otherwise different
        other = rng.choice(entries)
        field = rng.choice([f for f in ("id", "key") if f in other] or ["id"])
        copy = json.loads(json.dumps(rng.choice(entries)))
        if field in other:
            copy[field] = other[field]
    entries.insert(rng.randrange(len(entries) + 1), copy)
    return f"duplicate in {path}"


def dangling_audience(df: dict, rng: random.Random) -> Optional[str]:
    rules = [r for r in _rules(df)]
    if not rules:
        return None
    rule = rng.choice(rules)
    stale = rng.choice(["999999", "0", "", "stale-audience"])
    if "audienceConditions" in rule and isinstance(rule["audienceConditions"], list) and rng.random() < 0.5:
        rule["audienceConditions"] = rng.choice([["or", stale], ["and", stale], [stale],
                                                 ["not", stale], ["or", stale] + rule["audienceConditions"][1:],
                                                 ["and", rule["audienceConditions"], stale]])
    else:
        rule["audienceIds"] = list(rule.get("audienceIds", [])) + [stale]
        if rng.random() < 0.5:
            rule.pop("audienceConditions", None)
    return f"dangling audience {stale!r} in {rule.get('key')}"


def scalar_audience_leaf(df: dict, rng: random.Random) -> Optional[str]:
    rules = _rules(df)
    if not rules:
        return None
    rule = rng.choice(rules)
    leaf = rng.choice([5, 0, True, None, 2.5])
    rule["audienceConditions"] = rng.choice([["or", leaf], ["and", leaf], [leaf], leaf if leaf is not None else "x"])
    return f"scalar audience leaf {leaf!r} in {rule.get('key')}"


def dangling_variation(df: dict, rng: random.Random) -> Optional[str]:
    path = _pick_path(df, rng, lambda p, v: p[-1] == "entityId" and isinstance(v, str))
    if path is None:
        return None
    value = rng.choice(["424242", "", "not-a-variation"])
    _set(df, path, value)
    return f"entityId {path} = {value!r}"


def dangling_reference(df: dict, rng: random.Random) -> Optional[str]:
    flags = df.get("featureFlags", [])
    choice = rng.random()
    if flags and choice < 0.3:
        flag = rng.choice(flags)
        flag["rolloutId"] = rng.choice(["77777", ""])
        return f"flag {flag['key']} rolloutId {flag['rolloutId']!r}"
    if flags and choice < 0.5:
        flag = rng.choice(flags)
        flag["experimentIds"] = list(flag["experimentIds"]) + ["88888"]
        return f"flag {flag['key']} unknown experiment"
    if choice < 0.8:
        variations = [v for r in _rules(df) for v in r.get("variations", []) if v.get("variables")]
        if not variations:
            return None
        usage = rng.choice(rng.choice(variations)["variables"])
        usage["id"] = "66666"
        return "variable usage names an unknown variable"
    events = df.get("events", [])
    if not events:
        return None
    rng.choice(events)["experimentIds"].append("55555")
    return "event names an unknown experiment"


def bare_object_condition(df: dict, rng: random.Random) -> Optional[str]:
    audiences = df.get("audiences", []) + df.get("typedAudiences", [])
    if not audiences:
        return None
    audience = rng.choice(audiences)
    typed = audience in df.get("typedAudiences", [])
    conditions = audience["conditions"] if typed else json.loads(audience["conditions"])
    leaves = []

    def walk(node):
        if isinstance(node, dict):
            leaves.append(node)
        elif isinstance(node, list):
            for child in node:
                walk(child)
    walk(conditions)
    if not leaves:
        return None
    bare = rng.choice(leaves)
    audience["conditions"] = bare if typed else json.dumps(bare)
    return f"bare object condition in audience {audience['id']}"


def unknown_condition(df: dict, rng: random.Random) -> Optional[str]:
    audiences = df.get("audiences", []) + df.get("typedAudiences", [])
    if not audiences:
        return None
    audience = rng.choice(audiences)
    typed = audience in df.get("typedAudiences", [])
    conditions = audience["conditions"] if typed else json.loads(audience["conditions"])
    leaves = []

    def walk(node):
        if isinstance(node, dict):
            leaves.append(node)
        elif isinstance(node, list):
            for child in node:
                walk(child)
    walk(conditions)
    if not leaves:
        return None
    leaf = rng.choice(leaves)
    if rng.random() < 0.5:
        leaf["type"] = rng.choice(UNKNOWN_TYPES)
    else:
        leaf["match"] = rng.choice(UNKNOWN_MATCHES)
    audience["conditions"] = conditions if typed else json.dumps(conditions)
    return f"unknown type/match in audience {audience['id']}"


def missing_optional_section(df: dict, rng: random.Random) -> Optional[str]:
    present = [s for s in OPTIONAL_SECTIONS if s in df]
    if not present:
        return None
    section = rng.choice(present)
    del df[section]
    if section == "rollouts":
        for flag in df.get("featureFlags", []):
            flag["rolloutId"] = ""
    return f"without {section}"


def odd_status(df: dict, rng: random.Random) -> Optional[str]:
    rules = _rules(df)
    if not rules:
        return None
    rule = rng.choice(rules)
    rule["status"] = rng.choice(ODD_STATUSES)
    return f"status {rule['status']!r} for {rule.get('key')}"


def unknown_variable_type(df: dict, rng: random.Random) -> Optional[str]:
    variables = [v for f in df.get("featureFlags", []) for v in f.get("variables", [])]
    if not variables:
        return None
    variable = rng.choice(variables)
    variable["type"] = rng.choice(["float", "array", "", "String"])
    return f"variable {variable['key']} type {variable['type']!r}"


MUTATIONS: Dict[str, Callable[[dict, random.Random], Optional[str]]] = {
    "delete_field": delete_field,
    "retype_field": retype_field,
    "range_out_of_bounds": range_out_of_bounds,
    "overlapping_ranges": overlapping_ranges,
    "duplicate_entry": duplicate_entry,
    "dangling_audience": dangling_audience,
    "scalar_audience_leaf": scalar_audience_leaf,
    "dangling_variation": dangling_variation,
    "dangling_reference": dangling_reference,
    "bare_object_condition": bare_object_condition,
    "unknown_condition": unknown_condition,
    "missing_optional_section": missing_optional_section,
    "odd_status": odd_status,
    "unknown_variable_type": unknown_variable_type,
}


def mutate(df: dict, rng: random.Random, kinds: Optional[List[str]] = None) -> str:
    """Applies one to three mutations picked by `rng` (of `kinds`, default all); returns what was done."""
    names = kinds or sorted(MUTATIONS)
    done: List[str] = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        for _attempt in range(10):
            name = rng.choice(names)
            what = MUTATIONS[name](df, rng)
            if what is not None:
                done.append(f"{name}: {what}")
                break
    return "; ".join(done) or "unchanged"
