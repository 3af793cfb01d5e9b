#!/usr/bin/env python3
"""Generates the language-neutral reference vectors (tests/vectors/cases/*.json) from optimizely-sdk 5.7.0.

    python3 -m pip install -q optimizely-sdk==5.7.0
    python3 tests/vectors/generate.py            # rewrites tests/vectors/cases/
    python3 tests/vectors/generate.py --check    # regenerates in memory, fails if a committed file differs

Everything is seeded (random.Random(<case name>)), keys are written in a fixed order and what changes from
run to run in an event (uuid, timestamp, client name and version) is removed, so a rerun writes the same
bytes. The format is described in tests/vectors/README.md. This script never imports our library: the
expected outputs are the reference's answers only.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import sys
from typing import Any, Dict, Iterator, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CASES_DIR = os.path.join(HERE, "cases")
sys.path.insert(0, os.path.join(ROOT, "bindings", "python", "tests"))
sys.path.insert(0, HERE)

from datafile_generator import generate_datafile, generate_users  # noqa: E402
from vectors import (CapturingDispatcher, NotificationRecorder, decision_json, decisions_json,  # noqa: E402
                     encode_attributes)

from optimizely import optimizely as reference_sdk  # noqa: E402
from optimizely.event.event_processor import ForwardingEventProcessor  # noqa: E402
from optimizely.helpers import enums  # noqa: E402
from optimizely.helpers.sdk_settings import OptimizelySdkSettings  # noqa: E402
from optimizely.optimizely_user_context import OptimizelyUserContext  # noqa: E402
from optimizely.version import __version__ as reference_version  # noqa: E402

FORMAT_VERSION = 1
REFERENCE = "optimizely-sdk 5.7.0"
COMMITTED_DATAFILES = ["examples/datafiles/demo.json", "examples/datafiles/segments.json",
                       "bindings/python/tests/data/basic_datafile.json"]
GENERATED_SEEDS = range(0, 34)           # datafile_generator.generate_datafile(seed)
USERS_PER_CASE = 4
DECIDE_OPTIONS = ["DISABLE_DECISION_EVENT", "ENABLED_FLAGS_ONLY", "IGNORE_USER_PROFILE_SERVICE",
                  "INCLUDE_REASONS", "EXCLUDE_VARIABLES"]
DEFAULT_OPTION_CHOICES = ["DISABLE_DECISION_EVENT", "INCLUDE_REASONS", "EXCLUDE_VARIABLES"]
VARIABLE_ACCESSORS = [None, "boolean", "integer", "double", "string", "json"]
UNKNOWN_KEY = "no_such_key_in_datafile"
# Attribute values no datafile generator draws: sizes and types every binding must carry across.
ODD_ATTRIBUTE_VALUES: List[Any] = [2 ** 64, -(2 ** 70), 2 ** 63 - 1, -(2 ** 63), 2 ** 53 + 1, 1e308, -0.0,
                                   float("nan"), float("inf"), True, False, None, "1.2.3-beta", "2.0.0",
                                   "u\u0000nul", "", [1, "a"], {"k": "v"}, 0.1, 12345678901234567890]

_SILENT = logging.getLogger("vectors.reference")
_SILENT.addHandler(logging.NullHandler())
_SILENT.propagate = False
_SILENT.setLevel(logging.CRITICAL + 10)


# ---------------------------------------------------------------------------------------------------
# The reference: events and notifications captured in order
# ---------------------------------------------------------------------------------------------------

def make_reference(text: str, dispatcher: CapturingDispatcher,
                   default_decide_options: List[str]) -> reference_sdk.Optimizely:
    # ForwardingEventProcessor: one dispatch per impression or conversion, synchronously, in call order.
    client = reference_sdk.Optimizely(
        datafile=text, logger=_SILENT, event_processor=ForwardingEventProcessor(dispatcher, logger=_SILENT),
        settings=OptimizelySdkSettings(odp_disabled=True), default_decide_options=list(default_decide_options))
    if not (client.is_valid and client.config_manager.get_config() is not None):
        raise SystemExit("the reference refused a vector datafile")
    return client


# ---------------------------------------------------------------------------------------------------
# What a datafile offers to call
# ---------------------------------------------------------------------------------------------------

class Catalog:
    """Keys of the datafile: flags with their rules and variations, experiments, events, variables."""

    def __init__(self, datafile: dict) -> None:
        experiments = {e["id"]: e for e in datafile.get("experiments", [])}
        for group in datafile.get("groups", []):
            for e in group.get("experiments", []):
                experiments[e["id"]] = e
        rollouts = {r["id"]: r for r in datafile.get("rollouts", [])}
        self.experiment_keys = sorted({e["key"] for e in experiments.values()})
        self.experiment_variations = {e["key"]: sorted({v["key"] for v in e.get("variations", [])})
                                      for e in experiments.values()}
        self.event_keys = [e["key"] for e in datafile.get("events", [])]
        self.flags: List[dict] = []
        for flag in datafile.get("featureFlags", []):
            rules = [experiments[i] for i in flag.get("experimentIds", []) if i in experiments]
            rules += rollouts.get(flag.get("rolloutId"), {}).get("experiments", [])
            self.flags.append({
                "key": flag["key"],
                "rules": [r["key"] for r in rules],
                "variations": sorted({v["key"] for r in rules for v in r.get("variations", [])}),
                "variables": [(v["key"], v.get("type"), v.get("subType")) for v in flag.get("variables", [])],
            })
        self.flag_keys = [f["key"] for f in self.flags]


# ---------------------------------------------------------------------------------------------------
# Calls: each builds its inputs from the rng, runs them on the reference, and returns the vector entry
# ---------------------------------------------------------------------------------------------------

def user_context(client: Any, call: dict, user: Tuple[str, Dict[str, Any]]) -> Any:
    context = client.create_user_context(user[0], user[1])
    for forced in call.get("forced_decisions", []):
        context.set_forced_decision(
            OptimizelyUserContext.OptimizelyDecisionContext(forced["flag_key"], forced["rule_key"]),
            OptimizelyUserContext.OptimizelyForcedDecision(forced["variation_key"]))
    return context


def run_on_reference(client: Any, call: dict, user: Tuple[str, Dict[str, Any]]) -> Any:
    """The reference's answer to one call (JSON-ready)."""
    kind, user_id, attributes = call["call"], user[0], user[1]
    if kind == "decide":
        return decision_json(user_context(client, call, user).decide(call["flag_key"], call["options"]))
    if kind == "decide_all":
        return decisions_json(user_context(client, call, user).decide_all(call["options"]))
    if kind == "decide_for_keys":
        return decisions_json(user_context(client, call, user).decide_for_keys(call["keys"], call["options"]))
    if kind == "activate":
        return client.activate(call["experiment_key"], user_id, attributes)
    if kind == "get_variation":
        return client.get_variation(call["experiment_key"], user_id, attributes)
    if kind == "is_feature_enabled":
        return client.is_feature_enabled(call["feature_key"], user_id, attributes)
    if kind == "get_enabled_features":
        return client.get_enabled_features(user_id, attributes)
    if kind == "get_feature_variable":
        accessor = call["variable_type"]
        method = getattr(client, "get_feature_variable" + (f"_{accessor}" if accessor else ""))
        return method(call["feature_key"], call["variable_key"], user_id, attributes)
    if kind == "get_all_feature_variables":
        return client.get_all_feature_variables(call["feature_key"], user_id, attributes)
    if kind == "set_forced_variation":
        return client.set_forced_variation(call["experiment_key"], user_id, call["variation_key"])
    if kind == "get_forced_variation":
        return client.get_forced_variation(call["experiment_key"], user_id)
    if kind == "track":
        tags = json.loads(call["tags_json"]) if call["tags_json"] is not None else None
        return client.track(call["event_key"], user_id, attributes, tags)
    raise ValueError(kind)


def random_options(rng: random.Random) -> List[str]:
    return sorted(rng.sample(DECIDE_OPTIONS, rng.choice([0, 0, 1, 1, 2, 3])))


def random_tags_json(rng: random.Random) -> Optional[str]:
    """Event tags as JSON text (so integers of any size cross every language intact)."""
    r = rng.random()
    if r < 0.15:
        return None
    tags: Dict[str, Any] = {}
    if rng.random() < 0.6:
        tags["revenue"] = rng.choice([100, 0, -5, 4200, 2 ** 40, 2 ** 53 + 1, 2 ** 63, 10 ** 20, 99.5, "100",
                                      True, None])
    if rng.random() < 0.6:
        tags["value"] = rng.choice([1.5, 10, 0, -2.25, "3.5", "abc", " 12 ", True, None, "1e3", 2 ** 40,
                                    10 ** 20, "nan", "inf", "", "0x10", "1_5"])
    for _ in range(rng.randint(0, 2)):
        name = rng.choice(["category", "size", "coupon", "ü-tag", "qty"])
        tags[name] = rng.choice(["shoes", "", "ÄÖü", 3, 2.5, True, False, None, 10 ** 20, [1, "a"], {"k": "v"}])
    return json.dumps(tags, ensure_ascii=False)


def forced_decisions(rng: random.Random, catalog: Catalog, flag: dict) -> List[dict]:
    """One or two forced decisions on `flag`: flag level or rule level, a real variation or an unknown one."""
    forced = []
    for _ in range(rng.randint(1, 2)):
        rule = rng.choice(flag["rules"]) if flag["rules"] and rng.random() < 0.5 else None
        variation = (rng.choice(flag["variations"]) if flag["variations"] and rng.random() < 0.85
                     else "no_such_variation")
        forced.append({"flag_key": flag["key"], "rule_key": rule, "variation_key": variation})
    return forced


def forced_variation_calls(rng: random.Random, catalog: Catalog) -> Iterator[dict]:
    """set_forced_variation (a real variation, an unknown one, a removal, an unknown experiment) and
    get_forced_variation: the forcing then applies to this user's later calls."""
    if not catalog.experiment_keys:
        return
    key = rng.choice(catalog.experiment_keys) if rng.random() < 0.93 else UNKNOWN_KEY
    variations = catalog.experiment_variations.get(key) or ["no_such_variation"]
    r = rng.random()
    variation = rng.choice(variations) if r < 0.8 else ("no_such_variation" if r < 0.9 else None)
    yield {"call": "set_forced_variation", "experiment_key": key, "variation_key": variation}
    yield {"call": "get_forced_variation", "experiment_key": key}


def calls_for_user(rng: random.Random, catalog: Catalog, user_index: int) -> Iterator[dict]:
    """The calls one user makes: maybe a forced variation first, every flag decided, then a mix of the
    other kinds."""
    if rng.random() < 0.35:
        yield from forced_variation_calls(rng, catalog)
    for flag in catalog.flags:
        call: Dict[str, Any] = {"call": "decide", "flag_key": flag["key"], "options": random_options(rng)}
        if rng.random() < 0.2:
            call["forced_decisions"] = forced_decisions(rng, catalog, flag)
        yield call
    if rng.random() < 0.5:
        yield {"call": "decide", "flag_key": UNKNOWN_KEY, "options": random_options(rng)}
    if user_index % 2 == 0:
        call = {"call": "decide_all", "options": random_options(rng)}
        if catalog.flags and rng.random() < 0.4:
            call["forced_decisions"] = forced_decisions(rng, catalog, rng.choice(catalog.flags))
        yield call
    if catalog.flag_keys:
        keys = rng.sample(catalog.flag_keys, min(len(catalog.flag_keys), rng.randint(1, 3)))
        if rng.random() < 0.4:
            keys.insert(rng.randrange(len(keys) + 1), UNKNOWN_KEY)
        yield {"call": "decide_for_keys", "keys": keys, "options": random_options(rng)}
    yield from legacy_calls(rng, catalog)


def legacy_calls(rng: random.Random, catalog: Catalog) -> Iterator[dict]:
    for kind in ("activate", "get_variation"):
        keys = rng.sample(catalog.experiment_keys, min(2, len(catalog.experiment_keys)))
        if rng.random() < 0.15:
            keys.append(UNKNOWN_KEY)
        for key in keys:
            yield {"call": kind, "experiment_key": key}
    flags = catalog.flags
    for flag in rng.sample(flags, min(2, len(flags))):
        yield {"call": "is_feature_enabled", "feature_key": flag["key"]}
    if rng.random() < 0.5:
        yield {"call": "get_enabled_features"}
    for flag in rng.sample(flags, min(2, len(flags))):
        if flag["variables"]:
            variable_key, variable_type, sub_type = rng.choice(flag["variables"])
            correct = "json" if sub_type == "json" else variable_type
            accessor = correct if rng.random() < 0.5 else rng.choice(VARIABLE_ACCESSORS)
            yield {"call": "get_feature_variable", "feature_key": flag["key"], "variable_key": variable_key,
                   "variable_type": accessor if accessor in VARIABLE_ACCESSORS else None}
        yield {"call": "get_all_feature_variables", "feature_key": flag["key"]}
    if rng.random() < 0.1:
        yield {"call": "get_feature_variable", "feature_key": UNKNOWN_KEY, "variable_key": "v",
               "variable_type": rng.choice(VARIABLE_ACCESSORS)}
    events = catalog.event_keys + ([UNKNOWN_KEY] if rng.random() < 0.15 else [])
    for event_key in rng.sample(events, min(len(events), rng.randint(1, 2))):
        yield {"call": "track", "event_key": event_key, "tags_json": random_tags_json(rng)}


def odd_users(rng: random.Random, users: List[Tuple[str, Dict[str, Any]]]) -> List[Tuple[str, Dict[str, Any]]]:
    """The generated users, some given an odd value (huge integers, NaN, lists, semver text, NUL...)."""
    out = []
    for user_id, attributes in users:
        attributes = dict(attributes)
        if rng.random() < 0.5:
            names = sorted(attributes) or ["attr"]
            for _ in range(rng.randint(1, 2)):
                attributes[rng.choice(names)] = rng.choice(ODD_ATTRIBUTE_VALUES)
        out.append((user_id, attributes))
    return out


# ---------------------------------------------------------------------------------------------------
# A case: one datafile, its calls, the reference's answers
# ---------------------------------------------------------------------------------------------------

def build_case(name: str, datafile_text: str, datafile_field: dict, seed: int) -> dict:
    rng = random.Random(f"vectors-{name}")
    datafile = json.loads(datafile_text)
    catalog = Catalog(datafile)
    # (never ENABLED_FLAGS_ONLY: given by default and per call too, the reference raises KeyError)
    default_options = sorted(rng.sample(DEFAULT_OPTION_CHOICES, 1)) if rng.random() < 0.2 else []
    dispatcher, recorder = CapturingDispatcher(), NotificationRecorder()
    client = make_reference(datafile_text, dispatcher, default_options)
    client.notification_center.add_notification_listener(enums.NotificationTypes.DECISION, recorder.on_decision)
    client.notification_center.add_notification_listener(enums.NotificationTypes.TRACK, recorder.on_track)
    users = odd_users(rng, list(generate_users(seed, datafile, USERS_PER_CASE)))
    calls = []
    for index, user in enumerate(users):
        for call in calls_for_user(rng, catalog, index):
            call = {"call": call.pop("call"), "user_id": user[0], "attributes": encode_attributes(user[1]), **call}
            try:
                result = run_on_reference(client, call, user)
            except Exception as error:  # noqa: BLE001 - a reference crash has no answer: the call is left out
                print(f"{name}: reference raised {type(error).__name__} on {call['call']}: left out",
                      file=sys.stderr)
                dispatcher.take()
                recorder.take()
                continue
            notifications = recorder.take()
            for notification in notifications:        # (the usual case, left implicit to keep files small)
                if notification["attributes"] == call["attributes"]:
                    del notification["attributes"]
            call["expect"] = {"result": result, "events": dispatcher.take(), "notifications": notifications}
            calls.append(call)
    client.close()
    return {"format": FORMAT_VERSION, "name": name, "reference": REFERENCE, **datafile_field,
            "client": {"default_decide_options": default_options}, "calls": calls}


def all_cases() -> Iterator[Tuple[str, dict]]:
    for index, path in enumerate(COMMITTED_DATAFILES):
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            text = f.read()
        name = os.path.splitext(os.path.basename(path))[0]
        yield name, build_case(name, text, {"datafile_path": path}, 1000 + index)
    for seed in GENERATED_SEEDS:
        name = f"generated-{seed:03d}"
        text = json.dumps(generate_datafile(seed), ensure_ascii=False, sort_keys=True)
        yield name, build_case(name, text, {"datafile_text": text}, seed)


def case_text(case: dict) -> str:
    """Stable bytes: the header fields first, then one call per line (small diffs when a case changes)."""
    head = {k: v for k, v in case.items() if k != "calls"}
    head_text = json.dumps(head, ensure_ascii=False, indent=1)[:-2]
    calls = ",\n".join("  " + json.dumps(c, ensure_ascii=False, allow_nan=False) for c in case["calls"])
    return f'{head_text},\n "calls": [\n{calls}\n ]\n}}\n'


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if a committed case differs")
    args = parser.parse_args(argv)
    if f"optimizely-sdk {reference_version}" != REFERENCE:   # another version may answer differently
        print(f"generate.py needs {REFERENCE}, found optimizely-sdk {reference_version}", file=sys.stderr)
        return 2
    os.makedirs(CASES_DIR, exist_ok=True)
    stale, total = [], 0
    for name, case in all_cases():
        text, path = case_text(case), os.path.join(CASES_DIR, name + ".json")
        total += len(case["calls"])
        if args.check:
            with open(path, encoding="utf-8") as f:
                if f.read() != text:
                    stale.append(path)
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
    print(f"{total} calls" + (f", {len(stale)} stale: {stale}" if stale else ""))
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
