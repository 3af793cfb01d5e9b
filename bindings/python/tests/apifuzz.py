#!/usr/bin/env python3
"""API differential fuzzer: the drop-in `experiment.optimizely` against optimizely-sdk 5.7.0, over the
API surface difffuzz.py does not drive.  Zero differences allowed.

    cd <worktree> && make lib python-speedups
    EXPERIMENT_LIBRARY=$PWD/.build/release/libexperiment.so PYTHONPATH=$PWD/bindings/python \\
        python3 bindings/python/tests/apifuzz.py --seeds 0:200

Options: --seeds A:B (default 0:120, the slice `make test` runs through test_apifuzz.py), --users N,
--jobs N, --report FILE (JSON), --replay SEED (every difference of one seed), --quiet.

Each seed is one case: difffuzz's mutated datafile of the seed (`difffuzz.mutate`), for two seeds in five
given audiences with "qualified" (ODP segment) conditions on some rules first (`add_segment_audiences`),
and difffuzz's users of the seed.  Both sides get the same JSON text and are built alike: a dispatcher of
the fuzzer's own (the reference through a ForwardingEventProcessor, so events arrive in call order),
listeners on DECISION, ACTIVATE and TRACK, a user profile service object (pre-filled per seed with
profiles naming valid variations, variations of other experiments, unknown variation ids, malformed
profiles; some users' lookups raise), and random `default_decide_options`.

Per user, a random call sequence drawn from random.Random("apifuzz-ops-<seed>-<user>") runs on both
sides: is_feature_enabled, get_enabled_features, get_feature_variable and its typed getters (right and
wrong types, unknown keys), get_all_feature_variables, set_forced_variation / get_forced_variation
(unknown keys, None, variations of other experiments), get_variation, activate, track; and on a user
context: set/get/remove_forced_decision (flag- and rule-level, invalid variation keys),
remove_all_forced_decisions, decide / decide_for_keys / decide_all with random options, set_attribute,
set_qualified_segments, track_event.  After each call: its return value, the notifications it fired
(their arguments), the events it dispatched and the profiles it saved are compared with type-exact
equality (test_differential.typed_diff).  Once per case: get_optimizely_config()'s contents.

A call that raises in the reference has no answer: counted apart ("reference crashes") and skipped, with
everything it fired dropped on both sides.  Differences are grouped by signature, each with its first
example (seed, mutations, user, the calls before it on the context, the call) to replay.
"""

from __future__ import annotations

import argparse
import collections
import copy
import datetime
import json
import math
import os
import random
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

os.environ.setdefault("EXPERIMENT_EVENT_ENDPOINT", "none")
if "XDG_STATE_HOME" not in os.environ:
    os.environ["XDG_STATE_HOME"] = tempfile.mkdtemp(prefix="apifuzz-state-")

import difffuzz  # noqa: E402
from datafile_generator import generate_datafile  # noqa: E402
from test_differential import _SILENT, normalize_event, random_tags, typed_diff  # noqa: E402

from optimizely import optimizely as ref_optimizely  # noqa: E402
from optimizely.event.event_processor import ForwardingEventProcessor  # noqa: E402
from optimizely.helpers import enums as ref_enums  # noqa: E402
from optimizely.helpers.sdk_settings import OptimizelySdkSettings  # noqa: E402
from optimizely.optimizely_user_context import OptimizelyUserContext as RefUserContext  # noqa: E402

try:
    from experiment import optimizely as dropin
    IMPORT_ERROR: Optional[BaseException] = None
except Exception as exc:  # pragma: no cover - reported by main() and the test
    dropin = None  # type: ignore[assignment]
    IMPORT_ERROR = exc

DEFAULT_SEEDS = (0, 120)
DEFAULT_USERS = 8
OPS_PER_USER = (12, 30)
OPTIONS = ["INCLUDE_REASONS", "EXCLUDE_VARIABLES", "DISABLE_DECISION_EVENT", "ENABLED_FLAGS_ONLY",
           "IGNORE_USER_PROFILE_SERVICE"]
SEGMENTS = ["seg_a", "seg_b", "seg_c", "", "Seg_A"]

# ===================================================================================================
# The datafile: difffuzz's mutated one, sometimes with "qualified" audiences
# ===================================================================================================


def add_segment_audiences(df: dict, rng: random.Random) -> dict:
    """Typed audiences with "qualified" conditions (alone, and with a custom attribute condition), put in
    front of some experiments' and delivery rules' audience conditions (a new tree; `df` is left alone)."""
    df = copy.deepcopy(df)
    if not isinstance(df.get("typedAudiences"), list):
        df["typedAudiences"] = []
    ids = []
    for i, seg in enumerate(["seg_a", "seg_b", "seg_c"]):
        leaf = {"type": "third_party_dimension", "name": "odp.audiences", "match": "qualified", "value": seg}
        if i == 2:
            cond: Any = ["and", ["or", leaf], ["or", {"type": "custom_attribute", "name": "missing_attr",
                                                       "match": "exists"}]]
        elif i == 1:
            cond = ["or", ["not", leaf]] if rng.random() < 0.3 else ["or", leaf]
        else:
            cond = ["or", leaf]
        aid = str(7700000 + i)
        df["typedAudiences"].append({"id": aid, "name": "segment_" + seg, "conditions": cond})
        ids.append(aid)
    for path, exp in difffuzz.experiments_of(df):
        if rng.random() < 0.4:
            aid = rng.choice(ids)
            written = exp.get("audienceIds")
            exp["audienceIds"] = [aid] + [a for a in written if isinstance(a, str)][:1] if isinstance(written, list) \
                else [aid]
            exp["audienceConditions"] = ["or"] + exp["audienceIds"] if rng.random() < 0.5 else \
                ["and", aid] + exp["audienceIds"][1:]
    return df


# ===================================================================================================
# One side: a client of one implementation with its recorders
# ===================================================================================================


def plain(value: Any, depth: int = 0) -> Any:
    """A comparable form: dicts / lists / tuples recursively, objects as their public attributes."""
    if depth > 12:
        return repr(value)
    if isinstance(value, dict):
        return {k: plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v, depth + 1) for v in value]
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return value
    if hasattr(value, "__dict__"):
        return {k: plain(v, depth + 1) for k, v in vars(value).items() if not k.startswith("_")}
    return value


def event_form(event: Any) -> Any:
    """An event (LogEvent or its __dict__) without uuids, timestamps, client name and version."""
    if event is None:
        return None
    form, _problems = normalize_event(event)
    headers = event.get("headers") if isinstance(event, dict) else getattr(event, "headers", None)
    return {**form, "headers": headers}


class ProfileService:
    """A user profile service: lookup from a per-seed pre-filled store (some users' lookups raise),
    save records the profile and keeps it."""

    def __init__(self, profiles: Dict[str, Any], raising: set, saves: List[Any]) -> None:
        self.profiles = copy.deepcopy(profiles)
        self.raising = raising
        self.saves = saves

    def lookup(self, user_id: str) -> Any:
        if user_id in self.raising:
            raise RuntimeError("lookup failed for " + user_id)
        return copy.deepcopy(self.profiles.get(user_id))

    def save(self, user_profile: Dict[str, Any]) -> None:
        self.saves.append(copy.deepcopy(user_profile))
        if isinstance(user_profile, dict) and isinstance(user_profile.get("user_id"), str):
            self.profiles[user_profile["user_id"]] = copy.deepcopy(user_profile)


# How the datafile text is handed to both sides: mostly as str; else as bytes in an encoding the
# reference's json.loads detects (and its ProjectConfig then wants UTF-8), a bytearray, or a memoryview.
DATAFILE_FORMS = ["utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-32-be", "bytearray", "memoryview"]


def datafile_as(text: str, form: Optional[str]) -> Any:
    if form is None:
        return text
    if form == "bytearray":
        return bytearray(text.encode())
    if form == "memoryview":
        return memoryview(text.encode())
    return text.encode(form, "surrogatepass")


class Side:
    def __init__(self, name: str, text: str, profiles: Dict[str, Any], raising: set,
                 default_options: Any, datafile_form: Optional[str] = None) -> None:
        self.name = name
        self.datafile_form = datafile_form
        self.events: List[Any] = []
        self.notes: List[Any] = []
        self.saves: List[Any] = []
        self.ups = ProfileService(profiles, raising, self.saves)
        self.contexts: Dict[int, Any] = {}
        events = self.events

        class Dispatcher:
            def dispatch_event(self, event: Any) -> None:
                events.append(event_form(event))

        self.dispatcher = Dispatcher()
        if name == "reference":
            self.client = ref_optimizely.Optimizely(
                datafile=datafile_as(text, self.datafile_form), event_dispatcher=self.dispatcher, logger=_SILENT,
                event_processor=ForwardingEventProcessor(self.dispatcher, logger=_SILENT),
                user_profile_service=self.ups, default_decide_options=copy.copy(default_options),
                settings=OptimizelySdkSettings(odp_disabled=True))
            self.types = ref_enums.NotificationTypes
            self.DecisionContext = RefUserContext.OptimizelyDecisionContext
            self.ForcedDecision = RefUserContext.OptimizelyForcedDecision
        else:
            self.client = dropin.Optimizely(
                datafile=datafile_as(text, self.datafile_form), event_dispatcher=self.dispatcher, logger=_SILENT,
                user_profile_service=self.ups,
                default_decide_options=copy.copy(default_options))
            self.types = dropin.NotificationTypes
            self.DecisionContext = dropin.OptimizelyUserContext.OptimizelyDecisionContext
            self.ForcedDecision = dropin.OptimizelyUserContext.OptimizelyForcedDecision
        center = self.client.notification_center
        notes = self.notes
        center.add_notification_listener(self.types.DECISION, lambda *a: notes.append(
            ["DECISION", a[0], a[1], copy.deepcopy(a[2]), copy.deepcopy(plain(a[3]))]))
        center.add_notification_listener(self.types.ACTIVATE, lambda *a: notes.append(
            ["ACTIVATE", plain(a[0]), a[1], copy.deepcopy(a[2]), plain(a[3]), event_form(a[4])]))
        center.add_notification_listener(self.types.TRACK, lambda *a: notes.append(
            ["TRACK", a[0], a[1], copy.deepcopy(a[2]), copy.deepcopy(a[3]), event_form(a[4])]))

    def take(self) -> Tuple[List[Any], List[Any], List[Any]]:
        out = (list(self.events), list(self.notes), list(self.saves))
        del self.events[:], self.notes[:], self.saves[:]
        return out

    def close(self) -> None:
        try:
            self.client.close()
        except Exception:  # noqa: BLE001 - closing is not compared
            pass


# ===================================================================================================
# Calls: drawn once per user, run on each side
# ===================================================================================================


def listed(node: Any) -> List[Any]:
    """The objects of a list in a mutated datafile (anything else there holds none)."""
    return [x for x in node if isinstance(x, dict)] if isinstance(node, list) else []


class Universe:
    """The keys a case's calls draw from (known and unknown)."""

    def __init__(self, df: dict) -> None:
        self.flags = [f for f in listed(df.get("featureFlags")) if isinstance(f.get("key"), str)]
        self.flag_keys = [f["key"] for f in self.flags]
        self.experiments = [e for e in listed(df.get("experiments")) if isinstance(e.get("key"), str)]
        for g in listed(df.get("groups")):
            self.experiments += [e for e in listed(g.get("experiments")) if isinstance(e.get("key"), str)]
        self.rules = [e for r in listed(df.get("rollouts")) for e in listed(r.get("experiments"))
                      if isinstance(e.get("key"), str)]
        self.holdouts = [h for p, h in difffuzz.holdouts_of(df) if isinstance(h.get("key"), str)]
        self.events = [e["key"] for e in listed(df.get("events")) if isinstance(e.get("key"), str)]
        self.variables = {f["key"]: [v for v in listed(f.get("variables"))] for f in self.flags}
        by_id = {e.get("id"): e for e in self.experiments + self.rules if isinstance(e.get("id"), str)}
        rollouts = {r.get("id"): r for r in listed(df.get("rollouts")) if isinstance(r.get("id"), str)}
        self.flag_rules: Dict[str, List[dict]] = {}
        for f in self.flags:
            ids = f.get("experimentIds") if isinstance(f.get("experimentIds"), list) else []
            rules = [by_id[i] for i in ids if isinstance(i, str) and i in by_id]
            rollout_id = f.get("rolloutId")
            rules += listed((rollouts.get(rollout_id) if isinstance(rollout_id, str) else None or {}).get("experiments")
                            if isinstance(rollout_id, str) and isinstance(rollouts.get(rollout_id), dict) else [])
            self.flag_rules[f["key"]] = [r for r in rules if isinstance(r.get("key"), str)]

    @staticmethod
    def variation_keys(rule: dict) -> List[Any]:
        return [v.get("key") for v in listed(rule.get("variations"))]

    def all_variation_keys(self) -> List[Any]:
        return [k for e in self.experiments + self.rules + self.holdouts for k in self.variation_keys(e)]


def pick_options(rng: random.Random) -> Any:
    r = rng.random()
    if r < 0.1:
        return None
    if r < 0.13:
        return rng.choice(["INCLUDE_REASONS", ("INCLUDE_REASONS",), 5])   # not a list: the default options
    options = rng.sample(OPTIONS, rng.randint(0, 3))
    if rng.random() < 0.6:
        options.append("INCLUDE_REASONS")
    if rng.random() < 0.05:
        options.append("NO_SUCH_OPTION")
    return options


def draw_calls(u: Universe, rng: random.Random, n: int) -> List[List[Any]]:
    flag_or_unknown = lambda: rng.choice(u.flag_keys + ["no_such_flag"]) if u.flag_keys and rng.random() < 0.9 \
        else rng.choice(["no_such_flag", "", None, 5])  # noqa: E731

    def experiment_key() -> Any:
        r = rng.random()
        if u.experiments and r < 0.7:
            return rng.choice(u.experiments)["key"]
        if u.rules and r < 0.85:
            return rng.choice(u.rules)["key"]
        return rng.choice(["no_such_experiment", "", None])

    def variation_for(exp_key: Any) -> Any:
        own = [e for e in u.experiments + u.rules if e.get("key") == exp_key]
        r = rng.random()
        if own and r < 0.6 and Universe.variation_keys(own[0]):
            return rng.choice(Universe.variation_keys(own[0]))
        if r < 0.75 and u.all_variation_keys():
            return rng.choice(u.all_variation_keys())          # often another experiment's
        return rng.choice([None, None, "no_such_variation", "", 7])

    def variable_call() -> List[Any]:
        flag = flag_or_unknown()
        variables = u.variables.get(flag) if isinstance(flag, str) else None
        r = rng.random()
        if variables and r < 0.8:
            var = rng.choice(variables).get("key")
        elif r < 0.9 and any(u.variables.values()):
            var = rng.choice([v.get("key") for vs in u.variables.values() for v in vs])
        else:
            var = rng.choice(["no_such_variable", "", None])
        getter = rng.choice([None, None, "boolean", "double", "integer", "string", "json"])
        return ["get_feature_variable", getter, flag, var]

    def decision_context() -> List[Any]:
        flag = flag_or_unknown()
        rules = u.flag_rules.get(flag, []) if isinstance(flag, str) else []
        r = rng.random()
        if r < 0.35:
            rule = None
        elif rules and r < 0.8:
            rule = rng.choice(rules)["key"]
        elif r < 0.9 and (u.experiments or u.rules):
            rule = rng.choice(u.experiments + u.rules)["key"]   # a rule of another flag, maybe
        else:
            rule = rng.choice(["no_such_rule", ""])
        return [flag, rule]

    def forced_variation(ctx: List[Any]) -> Any:
        flag, rule = ctx
        rules = u.flag_rules.get(flag, []) if isinstance(flag, str) else []
        if rule is not None:
            rules = [x for x in rules if x.get("key") == rule] or rules
        keys = [k for x in rules for k in Universe.variation_keys(x)]
        r = rng.random()
        if keys and r < 0.7:
            return rng.choice(keys)
        if r < 0.85 and u.all_variation_keys():
            return rng.choice(u.all_variation_keys())
        return rng.choice(["no_such_variation", "", None])

    menu: List[Tuple[float, Callable[[], List[Any]]]] = [
        (3, lambda: ["is_feature_enabled", flag_or_unknown()]),
        (0.7, lambda: ["get_enabled_features"]),
        (4, variable_call),
        (1.5, lambda: ["get_all_feature_variables", flag_or_unknown()]),
        (2, lambda: (lambda k: ["set_forced_variation", k, variation_for(k)])(experiment_key())),
        (1.5, lambda: ["get_forced_variation", experiment_key()]),
        (1.5, lambda: ["get_variation", experiment_key()]),
        (1, lambda: ["activate", experiment_key()]),
        (0.7, lambda: ["track", rng.choice(u.events + ["no_such_event"]) if u.events else "no_such_event",
                       random_tags(rng)]),
        (3, lambda: (lambda c: ["set_forced_decision", c, forced_variation(c)])(decision_context())),
        (1, lambda: ["get_forced_decision", decision_context()]),
        (1, lambda: ["remove_forced_decision", decision_context()]),
        (0.3, lambda: ["remove_all_forced_decisions"]),
        (5, lambda: ["decide", flag_or_unknown(), pick_options(rng)]),
        (1.2, lambda: ["decide_for_keys", [flag_or_unknown() for _ in range(rng.randint(0, 4))],
                       pick_options(rng)]),
        (0.8, lambda: ["decide_all", pick_options(rng)]),
        (1.5, lambda: ["set_qualified_segments", None if rng.random() < 0.15 else
                       rng.sample(SEGMENTS, rng.randint(0, 3))]),
        (0.5, lambda: ["set_attribute", rng.choice(["extra", "missing_attr"]),
                       rng.choice(["v", 1, None, 2.5, True])]),
        (0.4, lambda: ["track_event", rng.choice(u.events + ["no_such_event"]) if u.events else "no_such_event",
                       random_tags(rng)]),
        (0.3, lambda: ["new_context"]),
    ]
    weights = [w for w, _ in menu]
    return [rng.choices(menu, weights)[0][1]() for _ in range(n)]


# ---------------------------------------------------------------------------------------------------
# Argument shapes: what a caller may hand the public API besides the plain values draw_calls picks
# ---------------------------------------------------------------------------------------------------
# optimizely-sdk checks its arguments loosely and in its own way: attributes and event tags must be
# exactly a dict only when they are truthy (a dict subclass is refused, [] / 0 / "" pass and [] even
# reaches the payload as tags), user ids must be a str (a subclass passes), decide options are compared
# one by one (a list inside is no option), decide_for_keys iterates whatever it is given.  A call may
# carry a trailing {"~": {...}} naming such shapes by name; each side builds its own objects from them.

class DictSubclass(dict):
    pass


class StrSubclass(str):
    pass


class IntSubclass(int):
    pass


class FloatSubclass(float):
    pass


ATTRIBUTE_SHAPES = ["none", "[]", "0", "''", "False", "()", "ordered", "subclass", "empty_ordered", "pairs", "text"]
USER_ID_SHAPES = ["none", "int", "bytes", "str_subclass", "float"]
TAG_SHAPES = ["[]", "0", "''", "False", "0.0", "()", "ordered", "subclass", "empty_ordered", "list", "text",
              "nan_value", "inf_value", "nan_tag", "inf_tag", "int_subclass_revenue", "float_subclass_value",
              "str_subclass_value", "decimal_value", "decimal_revenue", "bool_key", "int_key"]
OPTION_SHAPES = ["list_inside", "str_subclass", "bytes", "tuple", "none_inside", "dict_inside"]
KEYS_SHAPES = ["tuple", "str", "dict", "generator", "empty_str"]
SEGMENT_SHAPES = ["set", "dict", "with_other_values", "nested_list", "deque", "empty_set"]
SHAPED_OPS = {"is_feature_enabled", "get_enabled_features", "get_feature_variable", "get_all_feature_variables",
              "get_variation", "activate", "track", "set_forced_variation", "get_forced_variation", "new_context",
              "track_event", "decide", "decide_all", "decide_for_keys", "set_qualified_segments"}


def draw_shapes(calls: List[List[Any]], rng: random.Random) -> List[List[Any]]:
    """Gives some calls argument shapes (a separate random stream: the calls themselves stay those of
    draw_calls)."""
    out = []
    for call in calls:
        op = call[0]
        if op not in SHAPED_OPS or rng.random() > 0.25:
            out.append(call)
            continue
        shape: Dict[str, str] = {}
        if op in ("decide", "decide_all", "decide_for_keys"):
            if rng.random() < 0.6:
                shape["options"] = rng.choice(OPTION_SHAPES)
            if op == "decide_for_keys" and (rng.random() < 0.6 or not shape):
                shape["keys"] = rng.choice(KEYS_SHAPES)
        elif op == "track_event":
            shape["tags"] = rng.choice(TAG_SHAPES)
        elif op == "set_qualified_segments":
            shape["segments"] = rng.choice(SEGMENT_SHAPES)
        else:
            r = rng.random()
            if op not in ("set_forced_variation", "get_forced_variation") and r < 0.5:
                shape["attributes"] = rng.choice(ATTRIBUTE_SHAPES)
            elif r < 0.75 or op in ("set_forced_variation", "get_forced_variation"):
                shape["user_id"] = rng.choice(USER_ID_SHAPES)
            if op == "track" and rng.random() < 0.6:
                shape["tags"] = rng.choice(TAG_SHAPES)
        out.append(list(call) + [{"~": shape}] if shape else call)
    return out


def split_shape(call: List[Any]) -> Tuple[List[Any], Dict[str, str]]:
    if call and isinstance(call[-1], dict) and "~" in call[-1]:
        return call[:-1], call[-1]["~"]
    return call, {}


def shaped_attributes(attrs: Dict[str, Any], shape: Optional[str]) -> Any:
    import collections as _c
    return {None: lambda: attrs, "none": lambda: None, "[]": lambda: [], "0": lambda: 0, "''": lambda: "",
            "False": lambda: False, "()": lambda: (), "ordered": lambda: _c.OrderedDict(attrs),
            "subclass": lambda: DictSubclass(attrs), "empty_ordered": lambda: _c.OrderedDict(),
            "pairs": lambda: list(attrs.items()), "text": lambda: "attributes"}[shape]()


def shaped_user_id(user_id: Any, shape: Optional[str]) -> Any:
    return {None: lambda: user_id, "none": lambda: None, "int": lambda: 42, "bytes": lambda: b"user",
            "str_subclass": lambda: StrSubclass(user_id) if isinstance(user_id, str) else user_id,
            "float": lambda: 1.5}[shape]()


def shaped_tags(tags: Any, shape: Optional[str]) -> Any:
    import collections as _c
    import decimal as _d
    base = dict(tags) if isinstance(tags, dict) else {}
    return {None: lambda: copy.deepcopy(tags), "[]": lambda: [], "0": lambda: 0, "''": lambda: "",
            "False": lambda: False, "0.0": lambda: 0.0, "()": lambda: (), "ordered": lambda: _c.OrderedDict(base),
            "subclass": lambda: DictSubclass(base), "empty_ordered": lambda: _c.OrderedDict(),
            "list": lambda: ["category"], "text": lambda: "tags",
            "nan_value": lambda: {**base, "value": float("nan")}, "inf_value": lambda: {**base, "value": -math.inf},
            "nan_tag": lambda: {**base, "ratio": float("nan")}, "inf_tag": lambda: {**base, "big": math.inf},
            "int_subclass_revenue": lambda: {**base, "revenue": IntSubclass(250)},
            "float_subclass_value": lambda: {**base, "value": FloatSubclass(2.5)},
            "str_subclass_value": lambda: {**base, "value": StrSubclass("4.5")},
            "decimal_value": lambda: {**base, "value": _d.Decimal("1.5")},
            "decimal_revenue": lambda: {**base, "revenue": _d.Decimal(300)},
            "bool_key": lambda: {**base, True: "yes"}, "int_key": lambda: {**base, 7: "seven"}}[shape]()


def shaped_options(options: Any, shape: Optional[str]) -> Any:
    if shape is None:
        return copy.copy(options)
    listed_options = list(options) if isinstance(options, list) else []
    return {"list_inside": lambda: listed_options + [["INCLUDE_REASONS"]],
            "str_subclass": lambda: [StrSubclass(o) if isinstance(o, str) else o for o in listed_options]
            + [StrSubclass("INCLUDE_REASONS")],
            "bytes": lambda: listed_options + [b"INCLUDE_REASONS"],
            "tuple": lambda: tuple(listed_options + ["INCLUDE_REASONS"]),
            "none_inside": lambda: [None] + listed_options,
            "dict_inside": lambda: listed_options + [{"INCLUDE_REASONS": 1}]}[shape]()


def shaped_keys(keys: List[Any], shape: Optional[str]) -> Any:
    if shape is None:
        return list(keys)
    text = next((k for k in keys if isinstance(k, str) and k), "flag")
    return {"tuple": lambda: tuple(keys), "str": lambda: text, "dict": lambda: {k: 1 for k in keys if _hashable(k)},
            "generator": lambda: (k for k in keys), "empty_str": lambda: "",
            "str_subclass": lambda: [StrSubclass(k) if isinstance(k, str) else k for k in keys]}[shape]()


def shaped_segments(segments: Any, shape: Optional[str]) -> Any:
    import collections as _c
    members = list(segments or [])
    return {None: lambda: copy.copy(segments), "set": lambda: set(members), "dict": lambda: dict.fromkeys(members, 1),
            "with_other_values": lambda: members + [5, None, b"seg_a"], "nested_list": lambda: [members],
            "deque": lambda: _c.deque(members), "empty_set": lambda: set()}[shape]()


def _hashable(value: Any) -> bool:
    try:
        hash(value)
        return True
    except TypeError:
        return False


def decision_form(d: Any) -> Any:
    if d is None:
        return None
    uc = getattr(d, "user_context", None)
    return {"flag_key": d.flag_key, "enabled": d.enabled, "variation_key": d.variation_key,
            "rule_key": d.rule_key, "variables": copy.deepcopy(d.variables), "reasons": list(d.reasons),
            "user_context": None if uc is None else {"user_id": uc.user_id,
                                                     "attributes": uc.get_user_attributes()}}


def run_call(side: Side, index: int, user_id: str, attrs: Dict[str, Any], call: List[Any]) -> Any:
    """Runs one call on one side; its comparable result."""
    c = side.client
    call, shape = split_shape(call)
    op = call[0]
    if shape:
        user_id = shaped_user_id(user_id, shape.get("user_id"))
        attrs = shaped_attributes(attrs, shape.get("attributes"))
        if op == "track":
            return c.track(call[1], user_id, attrs, shaped_tags(call[2], shape.get("tags")))
        if op == "new_context":
            context = side.contexts[index] = c.create_user_context(user_id, attrs)
            return context is not None
    if op == "is_feature_enabled":
        return c.is_feature_enabled(call[1], user_id, attrs)
    if op == "get_enabled_features":
        return c.get_enabled_features(user_id, attrs)
    if op == "get_feature_variable":
        getter = {None: c.get_feature_variable, "boolean": c.get_feature_variable_boolean,
                  "double": c.get_feature_variable_double, "integer": c.get_feature_variable_integer,
                  "string": c.get_feature_variable_string, "json": c.get_feature_variable_json}[call[1]]
        return getter(call[2], call[3], user_id, attrs)
    if op == "get_all_feature_variables":
        return c.get_all_feature_variables(call[1], user_id, attrs)
    if op == "set_forced_variation":
        return c.set_forced_variation(call[1], user_id, call[2])
    if op == "get_forced_variation":
        return c.get_forced_variation(call[1], user_id)
    if op == "get_variation":
        return c.get_variation(call[1], user_id, attrs)
    if op == "activate":
        return c.activate(call[1], user_id, attrs)
    if op == "track":
        return c.track(call[1], user_id, attrs, copy.deepcopy(call[2]))
    context = side.contexts.get(index)
    if context is None or op == "new_context":
        context = side.contexts[index] = c.create_user_context(user_id, dict(attrs))
        if op == "new_context":
            return context is not None
    if context is None:
        return "no context"
    if op in ("set_forced_decision", "get_forced_decision", "remove_forced_decision"):
        flag, rule = call[1]
        dc = side.DecisionContext(flag, rule)
        if op == "set_forced_decision":
            return context.set_forced_decision(dc, side.ForcedDecision(call[2]))
        if op == "get_forced_decision":
            fd = context.get_forced_decision(dc)
            return None if fd is None else ["forced", fd.variation_key]
        return context.remove_forced_decision(dc)
    if op == "remove_all_forced_decisions":
        return context.remove_all_forced_decisions()
    if op == "decide":
        return decision_form(context.decide(call[1], shaped_options(call[2], shape.get("options")))
                             if call[2] is not None or shape.get("options") else context.decide(call[1]))
    if op == "decide_for_keys":
        keys = shaped_keys(call[1], shape.get("keys"))
        result = context.decide_for_keys(keys, shaped_options(call[2], shape.get("options"))) \
            if call[2] is not None or shape.get("options") else context.decide_for_keys(keys)
        return {k: decision_form(d) for k, d in result.items()}
    if op == "decide_all":
        result = context.decide_all(shaped_options(call[1], shape.get("options"))) \
            if call[1] is not None or shape.get("options") else context.decide_all()
        return {k: decision_form(d) for k, d in result.items()}
    if op == "set_qualified_segments":
        context.set_qualified_segments(shaped_segments(call[1], shape.get("segments")))
        return context.get_qualified_segments()
    if op == "set_attribute":
        context.set_attribute(call[1], call[2])
        return context.get_user_attributes()
    if op == "track_event":
        return context.track_event(call[1], shaped_tags(call[2], shape.get("tags")))
    raise ValueError(op)


def config_form(config: Any) -> Any:
    """get_optimizely_config()'s contents (its datafile text compared apart)."""
    if config is None:
        return None
    form = plain(config)
    return form


# ===================================================================================================
# Tally and one case
# ===================================================================================================


class Tally(difffuzz.Tally):
    pass


def signature_of(op: str, what: str, diff: str) -> str:
    """A difference's signature: the call, what differs (result / events / notifications / profiles) and
    the differing path with indices and keys generalized."""
    path = diff.split(":", 1)[0]
    parts = []
    for part in path.replace("[", ".[").split("."):
        if part.startswith("["):
            parts.append("[*]")
        elif parts and parts[-1] in ("variables", "variable_values", "experiment_bucket_map", "attributes",
                                     "experiments_map", "features_map", "variations_map", "variables_map"):
            parts.append("<key>")
        else:
            parts.append(part)
    detail = ""
    if ": keys differ" in diff or ": length" in diff:
        detail = " (" + diff.split(": ", 1)[1].split(":")[0][:40] + ")"
    return f"{op} {what} {'.'.join(parts)}{detail}".strip()


class Case:
    def __init__(self, seed: int, n_users: int, tally: Tally) -> None:
        self.seed = seed
        self.n_users = n_users
        self.tally = tally
        rng = random.Random(f"apifuzz-{seed}")
        self.base = generate_datafile(seed)
        self.mutations = difffuzz.mutate(seed, self.base)
        df = difffuzz.apply_mutations(self.base, self.mutations)
        self.segments = rng.random() < 0.4
        if self.segments:
            df = add_segment_audiences(df, rng)
        self.df = df
        self.text = json.dumps(df)
        self.key_texts = difffuzz.nonstring_key_texts(df)
        self.users = difffuzz.fuzz_users(seed, self.base, n_users)
        self.universe = Universe(df if isinstance(df, dict) else {})
        self.default_options = pick_options(rng) if rng.random() < 0.5 else None
        self.profiles, self.raising = self.make_profiles(rng)
        self.shape_profiles(random.Random(f"apifuzz-profile-shapes-{seed}"))
        form_rng = random.Random(f"apifuzz-datafile-form-{seed}")
        self.datafile_form = form_rng.choice(DATAFILE_FORMS) if form_rng.random() < 0.15 else None
        self.history: List[Any] = []
        self.user: Tuple[int, Any, Dict[str, Any]] = (-1, "", {})

    def make_profiles(self, rng: random.Random) -> Tuple[Dict[str, Any], set]:
        """Pre-filled profiles: a valid variation, one of another experiment, an unknown id, malformed."""
        u = self.universe
        exps = u.experiments + u.rules
        profiles: Dict[str, Any] = {}
        raising = set()
        for user_id, _ in self.users:
            if not isinstance(user_id, str):
                continue
            r = rng.random()
            if r < 0.08:
                raising.add(user_id)
                continue
            if r < 0.15:
                profiles[user_id] = rng.choice([{"user_id": user_id}, {"experiment_bucket_map": {}}, {}])
                continue
            if r < 0.5 or not exps:
                continue
            bucket_map: Dict[str, Any] = {}
            for exp in rng.sample(exps, min(len(exps), rng.randint(1, 3))):
                own = [v.get("id") for v in listed(exp.get("variations"))]
                other = [v.get("id") for e in exps for v in listed(e.get("variations"))]
                x = rng.random()
                vid = (rng.choice(own) if own and x < 0.5 else rng.choice(other) if other and x < 0.7
                       else rng.choice(["999999", ""]))
                entry: Dict[str, Any] = {"variation_id": vid}
                if rng.random() < 0.05:
                    entry = {}
                bucket_map[str(exp.get("id"))] = entry
            profiles[user_id] = {"user_id": user_id, "experiment_bucket_map": bucket_map}
        return profiles, raising

    datafile_form: Optional[str] = None  # (a subclass that builds its own case hands the text as str)

    PROFILE_SHAPES = ["int_variation_id", "none_variation_id", "other_user_id", "extra_keys", "dict_subclass",
                      "ordered_bucket_map", "list_naming_keys", "str_naming_keys", "number", "user_id_number",
                      "entry_text", "bucket_map_list", "bucket_map_none", "variation_id_list"]

    def shape_profiles(self, rng: random.Random) -> None:
        """Some users' profiles replaced by shapes a lookup may answer (a separate random stream: the
        profiles of make_profiles stay as they were drawn)."""
        import collections as _c
        u = self.universe
        exps = [e for e in u.experiments + u.rules if listed(e.get("variations"))]
        for user_id, _ in self.users:
            if not isinstance(user_id, str) or user_id in self.raising or not exps or rng.random() > 0.12:
                continue
            exp = rng.choice(exps)
            vid = rng.choice(listed(exp.get("variations"))).get("id")
            eid = str(exp.get("id"))
            entry = {"variation_id": vid}
            shape = rng.choice(self.PROFILE_SHAPES)
            number = int(vid) if isinstance(vid, str) and vid.isdigit() else 7
            self.profiles[user_id] = {
                "int_variation_id": lambda: {"user_id": user_id, "experiment_bucket_map": {eid: {"variation_id": number}}},
                "none_variation_id": lambda: {"user_id": user_id, "experiment_bucket_map": {eid: {"variation_id": None}}},
                "other_user_id": lambda: {"user_id": "another_user", "experiment_bucket_map": {eid: entry}},
                "extra_keys": lambda: {"user_id": user_id, "experiment_bucket_map": {eid: dict(entry, at=1)}, "x": 2},
                "dict_subclass": lambda: DictSubclass(user_id=user_id, experiment_bucket_map={eid: entry}),
                "ordered_bucket_map": lambda: {"user_id": user_id,
                                               "experiment_bucket_map": _c.OrderedDict([(eid, entry)])},
                "list_naming_keys": lambda: ["user_id", "experiment_bucket_map"],
                "str_naming_keys": lambda: "user_id, experiment_bucket_map",
                "number": lambda: 5,
                "user_id_number": lambda: {"user_id": 5, "experiment_bucket_map": {eid: entry}},
                "entry_text": lambda: {"user_id": user_id, "experiment_bucket_map": {eid: vid}},
                "bucket_map_list": lambda: {"user_id": user_id, "experiment_bucket_map": [eid]},
                "bucket_map_none": lambda: {"user_id": user_id, "experiment_bucket_map": None},
                "variation_id_list": lambda: {"user_id": user_id, "experiment_bucket_map": {eid: {"variation_id": [vid]}}},
            }[shape]()

    # -- bookkeeping ------------------------------------------------------------------------------

    def difference(self, signature: str, reference: Any, ours: Any, diff: str) -> None:
        t = self.tally
        t.differences[signature] += 1
        if signature not in t.examples or t.all_differences is not None:
            index, user_id, attrs = self.user
            example = {"signature": signature, "seed": self.seed,
                       "datafile_form": getattr(self, "datafile_form", None),
                       "mutations": difffuzz._mutations_for_report(self.mutations), "segments": self.segments,
                       "default_decide_options": difffuzz._jsonable(self.default_options),
                       "user_index": index, "user_id": difffuzz._jsonable(user_id),
                       "attributes": difffuzz._jsonable({str(k): v for k, v in attrs.items()}),
                       "profile": difffuzz._jsonable(self.profiles.get(user_id) if isinstance(user_id, str) else None),
                       "lookup_raises": isinstance(user_id, str) and user_id in self.raising,
                       "calls_before": difffuzz._jsonable(self.history[-12:-1]),
                       "call": difffuzz._jsonable(self.history[-1] if self.history else None), "diff": diff,
                       "reference": difffuzz._jsonable(reference), "ours": difffuzz._jsonable(ours)}
            t.examples.setdefault(signature, example)
            if t.all_differences is not None:
                t.all_differences.append(example)

    def crash(self, op: str, exc: BaseException) -> None:
        kind = difffuzz.crash_kind(op, exc)
        self.tally.crashes[kind] += 1
        if kind not in self.tally.crash_examples:
            self.tally.crash_examples[kind] = {"seed": self.seed, "user_index": self.user[0],
                                               "call": difffuzz._jsonable(self.history[-1:]),
                                               "exception": f"{type(exc).__name__}: {exc}"[:300]}

    KEY_FIELDS = {"variation_key", "flag_key", "rule_key", "key", "experiment_key", "feature_key", "variable_key",
                  None}

    def texted(self, value: Any, ours: Any, field: Any = None) -> Any:
        """The reference's value with the datafile's non-string keys as ours hands them out (str()), where ours
        has exactly that text: dict keys, and values of key fields (a bare result too)."""
        if isinstance(value, dict) and isinstance(ours, dict):
            out = {}
            for k, v in value.items():
                text = difffuzz.documented_key_text(k) if not isinstance(k, str) else None
                name = text if text is not None and text in self.key_texts and text in ours and k not in ours else k
                out[name] = self.texted(v, ours.get(name), k)
            return out
        if isinstance(value, list) and isinstance(ours, list) and len(value) == len(ours):
            return [self.texted(v, o, field) for v, o in zip(value, ours)]
        text = difffuzz.documented_key_text(value)
        if text is not None and text in self.key_texts and field in self.KEY_FIELDS and type(ours) is str \
                and ours == text:
            return text
        return value

    def compare(self, op: str, what: str, reference: Any, ours: Any) -> None:
        self.tally.comparisons[f"{op} {what}"] += 1
        d = typed_diff(reference, ours, "")
        if d is None:
            return
        if self.key_texts and typed_diff(self.texted(reference, ours), ours, "") is None:
            self.tally.deliberate[f"{op} {what}: {difffuzz.DELIBERATE_KEY_TEXT}"] += 1
            return
        self.difference(signature_of(op, what, d), reference, ours, d)

    # -- running ----------------------------------------------------------------------------------

    def run(self) -> None:
        t = self.tally
        try:
            ref = Side("reference", self.text, self.profiles, self.raising, self.default_options, self.datafile_form)
        except Exception as exc:  # noqa: BLE001
            self.crash("construct", exc)
            t.cases["reference crashed constructing"] += 1
            return
        ours = Side("ours", self.text, self.profiles, self.raising, self.default_options, self.datafile_form)
        try:
            ref_ok = difffuzz.reference_accepts(ref.client)
            ours_ok = ours.client._client is not None and ours.client._ready()
            t.cases[f"{'mutated' if self.mutations else 'valid'} datafile{' +segments' if self.segments else ''}, "
                    f"reference {'accepts' if ref_ok else 'refuses'}"] += 1
            if ref_ok and not ours_ok:
                try:
                    difffuzz.make_ours(self.text, difffuzz.RecordingDispatcher())
                    why = "?"
                except Exception as exc:  # noqa: BLE001
                    why = str(exc)
                if self.reference_cannot_decide(ref):
                    # accepted, then the reference raises deciding it: ours refuses such a datafile on purpose
                    # (README "Deliberate differences"; difffuzz counts these apart the same way)
                    t.cases["reference accepts, then raises deciding: ours refuses on purpose"] += 1
                    return
                t.comparisons["accept"] += 1
                self.difference("accept: reference accepts, ours refuses (%s)" % difffuzz.template(why, 90), True,
                                why, "")
                return
            t.comparisons["accept"] += 1
            if ours_ok and not ref_ok:
                self.difference("accept: reference refuses, ours accepts", False, True, "")
                return
            users = self.users if ref_ok else self.users[:2]
            for index, (user_id, attrs) in enumerate(users):
                self.user = (index, user_id, attrs)
                self.history = []
                rng = random.Random(f"apifuzz-ops-{self.seed}-{index}")
                calls = draw_calls(self.universe, rng, rng.randint(*OPS_PER_USER))
                for call in draw_shapes(calls, random.Random(f"apifuzz-shapes-{self.seed}-{index}")):
                    self.step(ref, ours, index, user_id, attrs, call)
            self.history = [["get_optimizely_config"]]
            self.user = (-1, "", {})
            self.config(ref, ours)
        finally:
            ref.close()
            ours.close()

    def reference_cannot_decide(self, ref: Side) -> bool:
        """Whether the reference raises deciding the datafile for the case's users (as difffuzz asks it:
        decide_all with reasons, get_variation of every experiment and delivery rule)."""
        config = ref.client.config_manager.get_config()
        experiments = [k for k in getattr(config, "experiment_key_map", {}) if isinstance(k, str)]
        for user_id, attrs in difffuzz.fuzz_users(self.seed, self.base, 40) if self.seed >= 0 else self.users:
            try:
                context = ref.client.create_user_context(user_id, dict(attrs))
                if context is not None:
                    context.decide_all(["INCLUDE_REASONS"])
                for key in experiments:
                    ref.client.get_variation(key, user_id, dict(attrs))
            except Exception as exc:  # noqa: BLE001 - the reference's own failure is what is asked
                self.crash("decide_all on a datafile it accepted", exc)
                return True
        return False

    def step(self, ref: Side, ours: Side, index: int, user_id: Any, attrs: Dict[str, Any], call: List[Any]) -> None:
        op = call[0]
        self.history.append(call)
        try:
            r = run_call(ref, index, user_id, attrs, call)
        except Exception as exc:  # noqa: BLE001 - the reference's own failure: no answer
            self.crash(op, exc)
            try:
                run_call(ours, index, user_id, attrs, call)
            except Exception:  # noqa: BLE001
                pass
            ref.take(), ours.take()
            # the contexts may now differ (a forced decision set on one side only): start them again; ours
            # may have saved a profile the reference did not reach: the stores start from the reference's
            ref.contexts.pop(index, None), ours.contexts.pop(index, None)
            ours.ups.profiles = copy.deepcopy(ref.ups.profiles)
            return
        try:
            o = run_call(ours, index, user_id, attrs, call)
        except Exception as exc:  # noqa: BLE001 - a difference
            ref.take(), ours.take()
            self.tally.comparisons[f"{op} result"] += 1
            self.difference(f"{op}: ours raised {type(exc).__name__}: {difffuzz.template(exc, 60)}", r,
                            f"{type(exc).__name__}: {exc}", "")
            ref.contexts.pop(index, None), ours.contexts.pop(index, None)
            return
        self.compare(op, "result", r, o)
        (re_, rn, rs), (oe, on, os_) = ref.take(), ours.take()
        if re_ or oe:
            self.compare(op, "events", re_, oe)
        if rn or on:
            kinds = lambda ns: [n[0] + (":" + str(n[1]) if n[0] == "DECISION" else "") for n in ns]  # noqa: E731
            if kinds(rn) != kinds(on):
                self.tally.comparisons[f"{op} notifications"] += 1
                self.difference(f"{op} notifications: reference {kinds(rn)[:4]}, ours {kinds(on)[:4]}",
                                rn, on, "kinds differ")
            else:
                self.compare(op, "notifications", rn, on)
        if rs or os_:
            self.compare(op, "profile saves", rs, os_)

    def config(self, ref: Side, ours: Side) -> None:
        try:
            rc = ref.client.get_optimizely_config()
            r = config_form(rc)
            r_text = rc.get_datafile() if rc is not None else None
        except Exception as exc:  # noqa: BLE001
            self.crash("get_optimizely_config", exc)
            return
        try:
            oc = ours.client.get_optimizely_config()
            o = config_form(oc)
            o_text = oc.get_datafile() if oc is not None else None
        except Exception as exc:  # noqa: BLE001
            self.difference(f"get_optimizely_config: ours raised {type(exc).__name__}", r, str(exc), "")
            return
        self.compare("get_optimizely_config", "contents", r, o)
        self.compare("get_optimizely_config", "datafile", r_text, o_text)


def compare_calls(datafile: Any, user_id: Any, attributes: Dict[str, Any], calls: List[List[Any]],
                  profiles: Optional[Dict[str, Any]] = None, raising: Tuple[str, ...] = (),
                  default_options: Any = None, config: bool = False) -> Tally:
    """Runs one user's `calls` (as draw_calls makes them) on both sides over `datafile` (a dict or JSON
    text), comparing everything as the fuzzer does; the tally of what differed (for regression tests)."""
    tally = Tally()
    case = Case.__new__(Case)
    case.seed, case.n_users, case.tally, case.mutations, case.segments = -1, 1, tally, [], False
    case.text = datafile if isinstance(datafile, str) else json.dumps(datafile)
    try:
        case.df = json.loads(case.text)
    except ValueError:
        case.df = {}
    case.key_texts = difffuzz.nonstring_key_texts(case.df)
    case.users = [(user_id, attributes)]
    case.default_options = default_options
    case.profiles, case.raising = copy.deepcopy(profiles or {}), set(raising)
    case.history, case.user = [], (0, user_id, attributes)
    ref = Side("reference", case.text, case.profiles, case.raising, default_options)
    ours = Side("ours", case.text, case.profiles, case.raising, default_options)
    try:
        for call in calls:
            case.step(ref, ours, 0, user_id, attributes, call)
        if config:
            case.history = [["get_optimizely_config"]]
            case.config(ref, ours)
    finally:
        ref.close()
        ours.close()
    return tally


def run_seed(seed: int, n_users: int, case_type: Optional[type] = None) -> Tally:
    """One seed's case: `case_type` is this module's Case or a subclass (valuefuzz's)."""
    tally = Tally()
    (case_type or Case)(seed, n_users, tally).run()
    return tally


def _run_seed_json(args: Tuple[int, int, Optional[type]]) -> dict:
    return run_seed(*args).to_json()


def run(seeds: Any, n_users: int = DEFAULT_USERS, jobs: int = 1,
        progress: Optional[Callable[[int, Tally], None]] = None, case_type: Optional[type] = None) -> Tally:
    seeds = list(seeds)
    total = Tally()
    if jobs <= 1:
        for seed in seeds:
            total.merge(run_seed(seed, n_users, case_type))
            if progress:
                progress(seed, total)
        return total
    import multiprocessing
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(jobs) as pool:
        for seed, data in zip(seeds, pool.imap(_run_seed_json, [(s, n_users, case_type) for s in seeds], chunksize=2)):
            total.merge(Tally.from_json(data))
            if progress:
                progress(seed, total)
    return total


def summary_line(tally: Tally, seeds: range, seconds: float, name: str = "apifuzz") -> str:
    return (f"{name}: {tally.total_comparisons:,} comparisons against optimizely-sdk 5.7.0, "
            f"seeds {seeds.start}:{seeds.stop}, {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d}, "
            f"{tally.total_differences:,} differences ({len(tally.differences)} signatures), "
            f"{sum(tally.crashes.values()):,} reference crashes skipped, "
            f"{tally.total_deliberate:,} deliberate differences apart, {seconds:.0f} s")


def describe(sig: str, ex: dict, width: int = 700) -> List[str]:
    j = lambda x, w=width: json.dumps(x, ensure_ascii=False, default=repr)[:w]  # noqa: E731
    return [f"seed {ex.get('seed')} (segments {ex.get('segments')}, default options "
            f"{j(ex.get('default_decide_options'))}), user {ex.get('user_index')} id {j(ex.get('user_id'))}, "
            f"profile {j(ex.get('profile'), 200)}{' (lookup raises)' if ex.get('lookup_raises') else ''}",
            f"mutations: {j(ex.get('mutations'), 300)}",
            f"attributes: {j(ex.get('attributes'), 300)}",
            f"calls before: {j(ex.get('calls_before'), 500)}",
            f"call: {j(ex.get('call'))}",
            f"diff: {str(ex.get('diff'))[:width]}",
            f"reference: {j(ex.get('reference'))}", f"ours:      {j(ex.get('ours'))}"]


def format_report(tally: Tally, limit: int = 60, width: int = 700) -> str:
    lines = ["comparisons: " + ", ".join(f"{k} {v:,}" for k, v in sorted(tally.comparisons.items(),
                                                                          key=lambda kv: -kv[1]))]
    lines.append("cases: " + ", ".join(f"{k}: {v}" for k, v in sorted(tally.cases.items())))
    if tally.deliberate:
        lines.append("deliberate (README): " + ", ".join(f"{k}: {v}" for k, v in tally.deliberate.items()))
    if tally.differences:
        lines.append(f"{tally.total_differences:,} differences, {len(tally.differences)} signatures:")
        for sig, count in sorted(tally.differences.items(), key=lambda kv: -kv[1])[:limit]:
            lines.append(f"  {count:7,}  {sig}")
            lines += ["           " + x for x in describe(sig, tally.examples.get(sig, {}), width)]
    if tally.crashes:
        lines.append("reference crashes (no answer; skipped):")
        for kind, count in sorted(tally.crashes.items(), key=lambda kv: -kv[1]):
            lines.append(f"  {count:7,}  {kind}  e.g. {json.dumps(tally.crash_examples.get(kind), default=repr)[:300]}")
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None, case_type: Optional[type] = None, name: str = "apifuzz",
         description: Optional[str] = None, default_seeds: Tuple[int, int] = DEFAULT_SEEDS,
         default_users: int = DEFAULT_USERS) -> int:
    """The command line of apifuzz, and of the fuzzers built on its Case (`case_type`, reported as `name`)."""
    parser = argparse.ArgumentParser(description=(description or __doc__).split("\n\n")[0])
    parser.add_argument("--seeds", default=f"{default_seeds[0]}:{default_seeds[1]}")
    parser.add_argument("--users", type=int, default=default_users)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--report", default=None)
    parser.add_argument("--replay", type=int, default=None)
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    sys.stdout.reconfigure(errors="backslashreplace")  # type: ignore[attr-defined]  (unpaired surrogates)
    if dropin is None:
        print(f"cannot import experiment.optimizely: {IMPORT_ERROR!r}", file=sys.stderr)
        return 2
    if args.replay is not None:
        tally = Tally()
        tally.all_differences = []
        (case_type or Case)(args.replay, args.users, tally).run()
        for d in tally.all_differences:
            print(json.dumps(d, ensure_ascii=False, default=repr))
        print(format_report(tally))
        return 1 if tally.differences else 0
    seeds = difffuzz.parse_seeds(args.seeds)
    started = time.time()
    tally = run(seeds, args.users, args.jobs, case_type=case_type)
    seconds = time.time() - started
    if not args.quiet:
        print(format_report(tally))
    if args.report:
        # ASCII escapes: a value with an unpaired surrogate (valuefuzz draws them) has no UTF-8 form.
        with open(args.report, "w") as fh:
            json.dump({"summary": summary_line(tally, seeds, seconds, name), **tally.to_json()}, fh, indent=1,
                      default=repr)
    print(summary_line(tally, seeds, seconds, name))
    return 1 if tally.differences else 0


if __name__ == "__main__":
    sys.exit(main())
