"""Seeded generator of random but valid Optimizely v4 datafiles, and of users to decide them for.

The differential suite (test_differential.py) feeds what this module produces to both the reference
SDK (``optimizely-sdk``) and our library, and requires identical results.  Everything here is driven by
one ``random.Random(seed)``, so a seed names a datafile (and its users) exactly: a failure report only
needs the seed and the knobs.

    df = generate_datafile(7)                       # dict, ready for json.dumps
    df = generate_datafile(7, n_flags=(1, 1))       # knobs narrow the shape (see DEFAULT_KNOBS)
    for user_id, attributes in generate_users(7, df, 100): ...

What a datafile may contain (each behind a knob, so a reproduction can switch the rest off):

* attributes, events (with experimentIds), audiences with string-encoded conditions, typedAudiences with
  structured conditions (some share an id with an entry of ``audiences`` and override it, as Optimizely's
  own datafiles do);
* condition trees built from and / or / not, implicit-or lists, operator-only lists (``["and"]`` is
  vacuously true, ``["or"]`` false, ``["not"]`` unknown), "not" with several operands (only the first
  counts), single leaves as a whole audience;
* leaves of type custom_attribute / third_party_dimension / an unknown type, match exact / exists /
  substring / gt / ge / lt / le / semver_eq / semver_gt / semver_ge / semver_lt / semver_le, a missing
  match (means exact), a null match, an unknown match; values of string / int / float / bool / null,
  numbers beyond 2**53, semver targets with pre-release and build parts;
* experiments (Running / Paused / Not started / Archived / Launched; types ab, mab, td, fr or none) with
  audienceIds and/or audienceConditions (nested trees of audience ids), whitelists (forcedVariations,
  sometimes naming a variation that does not exist), traffic allocations with gaps, "" ranges, zero-width
  ranges, and allocations that stop short of 10000;
* mutually exclusive groups (policy "random", group allocations with gaps and "" ranges) and
  "overlapping" groups;
* feature flags with experiments and/or a rollout, rollout-only flags, flags with nothing, rollouts whose
  last rule is the "everyone else" rule, delivery rules of any status (the reference ignores a delivery
  rule's status), experiments of type "fr" (the reference appends the everyone-else variation to them);
* variables of type boolean, integer, double, string, json (both spellings: type "string" + subType
  "json", and type "json"), with values that do not parse ("1.5" as an integer, "abc" as a double, "{" as
  json) and values Python parses leniently (" 42", "1_000", "+7", "1e3" as a double, ...);
* sendFlagDecisions, botFiltering (true / false / absent), anonymizeIP (true / false / absent), region.

Things deliberately NOT generated, because the reference SDK crashes on them (so there is no reference
answer to compare with) -- see REFERENCE_CRASHES below for the details:

* an empty list anywhere inside a condition tree (``[]`` nested, or an audience whose conditions are
  ``[]``);
* a non-object leaf inside an audience's conditions (a string, number, or an unknown operator name in
  first position, which the reference then treats as a leaf);
* a dict leaf inside an experiment's audienceConditions;
* (not a crash, but no sane answer either) a JSON object as a leaf's "value": the reference's condition
  decoder turns every object into a condition-list index, so {"a": 1} silently becomes an integer;
* semver comparisons where the user's version has an all-digit part at a position where the target has
  a non-digit pre-release/build part (the reference calls int() on the target part).  To stay clear of it,
  targets with a pre-release or build part always have a full three-number core, and user versions never
  have an all-digit pre-release/build part;
* NaN / Infinity as variable values (they cannot cross JSON, and NaN != NaN).

* holdouts (global, in "holdouts") and local holdouts (in "localHoldouts", with includedRules naming
  flag experiment rules, delivery rules, or ids that exist nowhere; some without includedRules, which the
  reference skips): statuses Running / Draft / Concluded / Archived, audiences, excludeTargetedDeliveries,
  variations that are disabled, enabled (the reference then gives typecasts of nothing as the variables)
  or lack featureEnabled, traffic allocations of 0 to 100 % with gaps.  They come from their own random
  stream (seeded "holdouts-<seed>"), so the rest of a seed's datafile is the same with or without them.

No CMAB experiments, no "qualified" (ODP segment) conditions.
"""

from __future__ import annotations

import copy
import json
import random
from typing import Any, Dict, Iterator, List, Optional, Tuple

# Reference crashes found while building this generator (optimizely-sdk 5.7.0).  The generator avoids
# all of them; they are listed so the lead engineer can decide what our library should do instead.
REFERENCE_CRASHES = [
    "helpers/condition_tree_evaluator.evaluate: `conditions[0]` on an empty list -> IndexError, "
    "e.g. audience conditions '[\"and\", []]' or '[]' (an experiment's audienceConditions == [] is fine: "
    "it is special-cased as 'everyone').",
    "helpers/audience.evaluate_custom_attr: a leaf inside an audience's conditions that is not an object "
    "(e.g. '[\"and\", \"x\"]' or an unknown operator such as '[\"xor\", {...}]', whose operator becomes "
    "a leaf of an implicit OR) indexes the condition list with it -> TypeError (an integer leaf silently "
    "indexes the condition list instead).",
    "a dict inside an experiment's audienceConditions is used as an audience id -> TypeError: unhashable "
    "type 'dict', already in Optimizely() (optimizely_config.lookup_name_from_id), later in "
    "helpers/audience.evaluate_audience.",
    "helpers/condition.compare_user_version_with_target_version: when the user's part at some index is "
    "all digits and the target's part there is a non-digit pre-release/build part, int(target_part) "
    "raises ValueError, e.g. target '2.0.0-beta' vs user '2.0.0-1', or target '1.2-beta' vs user "
    "'1.2.3'.  (Unicode digits such as '\u00b2' pass str.isdigit() but not int(): same crash.)",
    "optimizely.Optimizely._decide: it appends the default decide options to the call's options and then "
    "removes ENABLED_FLAGS_ONLY once; with ENABLED_FLAGS_ONLY in both lists a disabled flag is filtered "
    "out and `[key]` raises KeyError (test_differential.py never passes it twice).  Passing options=None "
    "to decide() with ENABLED_FLAGS_ONLY among the defaults removes it from the client's defaults for "
    "good (the test always passes a list).",
]

DUMMY_AUDIENCE_CONDITIONS = json.dumps(
    ["or", {"match": "exact", "name": "$opt_dummy_attribute", "type": "custom_attribute",
            "value": "$opt_dummy_value"}])

# Knobs: (lo, hi) ranges are inclusive counts; *_p are probabilities.
DEFAULT_KNOBS: Dict[str, Any] = {
    "n_attributes": (3, 7),
    "n_undeclared_condition_attributes": (0, 2),   # names used in conditions but not in `attributes`
    "n_audiences": (3, 8),
    "n_typed_audiences": (1, 4),
    "typed_override_p": 0.5,          # a typed audience also appears in `audiences` (and overrides it)
    "n_events": (1, 4),
    "n_ab_experiments": (1, 4),       # experiments not attached to any flag
    "n_groups": (0, 2),
    "n_group_experiments": (2, 3),
    "overlapping_group_p": 0.3,
    "n_flags": (3, 7),
    "n_flag_experiments": (0, 2),
    "n_delivery_rules": (0, 3),       # targeted rules before the everyone-else rule
    "n_variables": (0, 6),
    "n_variations": (1, 4),
    "fr_p": 0.25,                     # a flag experiment is of type "fr"
    "group_flag_p": 0.5,              # a random-policy group's experiment is attached to a flag
    "rollout_only_p": 0.25,
    "no_rollout_p": 0.12,
    "empty_flag_p": 0.05,
    "empty_rollout_p": 0.04,
    "not_running_p": 0.25,            # an experiment is Paused / Not started / Archived / Launched
    "delivery_rule_not_running_p": 0.1,
    "whitelist_p": 0.4,
    "whitelist_bad_variation_p": 0.1,
    "audience_conditions_p": 0.6,     # experiment uses audienceConditions (else audienceIds only)
    "null_audience_conditions_p": 0.05,
    "traffic_gap_p": 0.35,
    "unparsable_value_p": 0.15,
    "lenient_value_p": 0.1,
    "empty_layer_id_p": 0.03,
    "feature_enabled_absent_p": 0.1,
    "dup_variation_key_p": 0.3,       # rules of one flag reuse a variation key (with a different id)
    "single_leaf_audience_p": 0.05,
    "operator_only_p": 0.04,
    "implicit_or_p": 0.08,
    "not_many_p": 0.1,
    "unknown_type_p": 0.04,
    "third_party_p": 0.05,
    "unknown_match_p": 0.03,
    "absent_match_p": 0.08,
    "null_match_p": 0.02,
    "wrong_value_type_p": 0.08,
    "dangling_audience_p": 0.0,       # an audience id that is defined nowhere (reference: unknown)
    "region_p": 0.15,
    "unknown_variable_type_p": 0.0,
    "holdouts_p": 0.7,                # the datafile has any holdouts at all
    "n_global_holdouts": (0, 2),
    "n_local_holdouts": (0, 3),
    "holdout_not_running_p": 0.25,    # Draft / Concluded / Archived
    "holdout_exclude_td_p": 0.4,      # excludeTargetedDeliveries: true
    "holdout_enabled_p": 0.2,         # the holdout's variation has featureEnabled: true
}

STRING_POOL = ["us", "de", "fr", "nl", "chrome", "safari", "firefox", "premium", "free", "gold",
               "iPhone 15", "Android", "", " ", "ÄÖü-ß", "日本語", "a\"quote", "new york", "NEW YORK"]
SUBSTRING_POOL = ["rom", "fari", "re", "NEW", "new", "ß", "本", "", " ", "i", "Phone"]
INT_POOL = [0, 1, -1, 5, 10, 18, 21, 42, 65, 100, 1000, -250, 2 ** 31, 2 ** 53, -(2 ** 53)]
FLOAT_POOL = [0.0, 0.5, 1.5, 2.25, 9.99, 18.0, 21.5, -3.75, 99.9, 1e-9, 123456.789]
BIG_NUMBERS = [2 ** 53 + 1, -(2 ** 53 + 1), 2 ** 53 + 2, 1e300, -1e300]
VERSION_TARGETS_PLAIN = ["1", "2", "1.2", "1.10", "1.2.3", "1.2.4", "2.0.0", "2.0", "10.0", "0.9.9",
                         "3.1.4", "1.02", "99999999999999999998.0"]
# Targets with a pre-release or build part always have a full three-number core (see REFERENCE_CRASHES).
VERSION_TARGETS_SUFFIXED = ["2.0.0-beta", "2.0.0-alpha", "1.2.3+build", "1.2.3-beta+exp.sha.5114f85",
                            "1.2.3-alpha.1", "2.0.0-1", "1.2.3+20130313144700", "3.0.0-rc1",
                            "1.2.3-"]
VERSION_TARGETS_INVALID = ["1.2.3.4", "a.b.c", "1. 2", "", "1..2", "v1.2"]
# User versions never have an all-digit pre-release / build part (see REFERENCE_CRASHES).
USER_VERSIONS = ["1", "1.2", "1.2.3", "1.2.4", "1.3", "2.0.0", "2", "2.0", "2.1", "10.0.1", "0.9",
                 "1.10", "1.9", "2.0.0-beta", "2.0.0-alpha", "2.0.0-rc1", "2.0.0-beta.2", "1.2.3+build",
                 "1.2.3+other", "1.2-beta", "1.2.3-beta+build", "1.2.3+build-x", "3.0.0-rc1",
                 "3.1.4", "1.2.3-alpha", "1.2.3.4", "v1.2", "", "1..2", "1.2 .3", "2.0.0-",
                 "01.2.3", "1.2.03", "99999999999999999999.1",
                 "\u0661.\u0662.\u0663"]   # Arabic-Indic digits: str.isdigit() and int() accept them

BOOL_VALUES = {"true": True, "false": False}
INT_VALUES_OK = ["0", "1", "-1", "42", "1000", "2147483647", "-2147483648", "9007199254740993",
                 "9223372036854775807", "123"]
INT_VALUES_BAD = ["1.5", "", "abc", "1e3", "0x1F", "true", "12a", "--1", "1.0", "9.99"]
INT_VALUES_LENIENT = [" 42", "42 ", "+7", "-0", "007", "1_000", "\t5\n", "\u00a042", "\u0664\u0662"]
DOUBLE_VALUES_OK = ["0", "0.0", "1", "1.5", "-2.25", "3.14159", "1e3", "1E-3", "100", "12345.678",
                    "-0.0", "9007199254740993"]
DOUBLE_VALUES_BAD = ["abc", "", "1,5", "1.2.3", "true", "0x10", "--1"]
DOUBLE_VALUES_LENIENT = [" 2.5 ", "+.5", "5.", "1_0.5", ".25", "1e+2", "\u0661.\u0665", "1E5"]
STRING_VALUES = ["", "hello", "Hello, World", "ÄÖü", "日本語", "with \"quotes\"", "line\nbreak", "42",
                 "true", "{\"not\": \"json-typed\"}", "   ", "null"]
JSON_VALUES_OK = ["{}", "{\"a\": 1}", "{\"a\": 1.0, \"b\": [1, 2.5, \"x\", true, null]}",
                  "{\"nested\": {\"k\": \"v\", \"n\": -3}}", "[1, 2, 3]", "3", "2.5", "\"str\"", "true",
                  "null", "{\"big\": 12345678901234567890}", "{\"dup\": 1, \"dup\": 2}",
                  "  {\"ws\": true}  ", "{\"e\": 1e2, \"f\": 0.1}", "[]", "{\"u\": \"\\u00e9\"}"]
JSON_VALUES_BAD = ["{", "", "{a: 1}", "{'a': 1}", "[1, 2", "{} x", "undefined", "{\"a\": 1,}"]
UNKNOWN_VARIABLE_TYPES = ["float", "array", ""]

EXPERIMENT_STATUSES_NOT_RUNNING = ["Paused", "Not started", "Archived", "Launched"]
HOLDOUT_STATUSES_NOT_RUNNING = ["Draft", "Concluded", "Archived", "running"]
HOLDOUT_ID_BASE = 3 * 10 ** 9          # holdout ids come from their own stream: far from the others
UNKNOWN_MATCHES = ["regex", "EXACT", "contains", "semver"]
UNKNOWN_TYPES = ["custom_dimension", "user_attribute", "ODP"]


class _Ids:
    """Unique numeric-string ids (and unique keys) for every entity of one datafile."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.next = rng.randrange(10 ** 5, 10 ** 9)
        self.keys: set = set()

    def id(self) -> str:
        self.next += self.rng.randint(1, 997)
        return str(self.next)

    def key(self, prefix: str) -> str:
        while True:
            k = f"{prefix}_{self.rng.randrange(10 ** 6):x}"
            if k not in self.keys:
                self.keys.add(k)
                return k


def _rng_range(rng: random.Random, lohi) -> int:
    lo, hi = lohi
    return rng.randint(lo, hi)


class _Gen:
    def __init__(self, seed: int, knobs: Dict[str, Any]):
        self.rng = random.Random(f"datafile-{seed}")
        self.seed = seed
        self.k = knobs
        self.ids = _Ids(self.rng)
        # attribute name -> kind ("string", "int", "float", "bool", "version", "mixed")
        self.attr_kinds: Dict[str, str] = {}
        self.audience_ids: List[str] = []

    def p(self, name: str) -> bool:
        return self.rng.random() < self.k[name]

    # ----- attributes and conditions -------------------------------------------------------------

    def make_attributes(self) -> List[dict]:
        rng = self.rng
        kinds = ["string", "int", "float", "bool", "version", "mixed"]
        out = []
        for i in range(_rng_range(rng, self.k["n_attributes"])):
            key = self.ids.key(rng.choice(["country", "age", "score", "browser", "app_version",
                                          "is_vip", "plan", "ratio", "device", "level"]))
            if rng.random() < 0.03:
                key = "$opt_" + key    # a declared attribute with the reserved prefix
            self.attr_kinds[key] = kinds[i % len(kinds)] if i < len(kinds) else rng.choice(kinds)
            out.append({"id": self.ids.id(), "key": key})
        for _ in range(_rng_range(rng, self.k["n_undeclared_condition_attributes"])):
            key = self.ids.key("undeclared")
            self.attr_kinds[key] = rng.choice(kinds)
        return out

    def leaf(self) -> dict:
        rng = self.rng
        name = rng.choice(sorted(self.attr_kinds))
        kind = self.attr_kinds[name]
        if kind == "mixed":
            kind = rng.choice(["string", "int", "float", "bool", "version"])
        if kind == "string":
            match = rng.choice(["exact", "exact", "substring", "substring", "exists"])
        elif kind in ("int", "float"):
            match = rng.choice(["exact", "gt", "ge", "lt", "le", "gt", "lt", "exists"])
        elif kind == "bool":
            match = rng.choice(["exact", "exact", "exists"])
        else:
            match = rng.choice(["semver_eq", "semver_gt", "semver_ge", "semver_lt", "semver_le",
                                "semver_eq", "semver_ge", "exact", "exists"])
        value = self.condition_value(kind, match)
        if self.p("wrong_value_type_p"):
            # (never a JSON object: the reference's condition decoder turns every object, even a value,
            # into a condition-list index, so {"a": 1} would silently become an integer value)
            value = rng.choice([None, True, 7, 7.5, "7", "1.2.3", [1], []] + BIG_NUMBERS)
        ctype = "custom_attribute"
        if self.p("third_party_p"):
            ctype = "third_party_dimension"
        elif self.p("unknown_type_p"):
            ctype = rng.choice(UNKNOWN_TYPES)
        leaf: Dict[str, Any] = {"name": name, "type": ctype}
        if self.p("absent_match_p"):
            pass                        # no "match": the reference treats it as exact
        elif self.p("null_match_p"):
            leaf["match"] = None
        elif self.p("unknown_match_p"):
            leaf["match"] = rng.choice(UNKNOWN_MATCHES)
        else:
            leaf["match"] = match
        if match == "exists" and rng.random() < 0.5:
            pass                        # exists leaves often carry no value at all
        else:
            leaf["value"] = value
        # key order in the JSON object must not matter
        items = list(leaf.items())
        rng.shuffle(items)
        return dict(items)

    def condition_value(self, kind: str, match: str) -> Any:
        rng = self.rng
        if match == "exists":
            return None
        if kind == "string":
            return rng.choice(SUBSTRING_POOL if match == "substring" else STRING_POOL)
        if kind == "int":
            return rng.choice(INT_POOL + [2 ** 53 + 1] if rng.random() < 0.1 else INT_POOL)
        if kind == "float":
            return rng.choice(FLOAT_POOL + INT_POOL[:6])
        if kind == "bool":
            return rng.choice([True, False])
        # version
        if match.startswith("semver"):
            r = rng.random()
            if r < 0.5:
                return rng.choice(VERSION_TARGETS_PLAIN)
            if r < 0.9:
                return rng.choice(VERSION_TARGETS_SUFFIXED)
            return rng.choice(VERSION_TARGETS_INVALID)
        return rng.choice(USER_VERSIONS + VERSION_TARGETS_PLAIN)

    def condition_tree(self, depth: int = 0) -> Any:
        """A condition tree for an audience: lists of and/or/not with object leaves, never []."""
        rng = self.rng
        if depth >= 3 or (depth > 0 and rng.random() < 0.45):
            return self.leaf()
        if self.p("operator_only_p"):
            return [rng.choice(["and", "or", "not"])]
        n = rng.randint(1, 3)
        children = [self.condition_tree(depth + 1) for _ in range(n)]
        if self.p("implicit_or_p"):
            return children if isinstance(children[0], dict) else ["or"] + children
        op = rng.choice(["and", "or", "or", "not"])
        if op == "not" and not self.p("not_many_p"):
            children = children[:1]
        return [op] + children

    def audience_conditions(self) -> Any:
        if self.p("single_leaf_audience_p"):
            return self.leaf()
        tree = self.condition_tree()
        if isinstance(tree, dict):
            tree = ["or", tree]
        return tree

    def make_audiences(self) -> Tuple[List[dict], List[dict]]:
        rng = self.rng
        audiences, typed = [], []
        for _ in range(_rng_range(rng, self.k["n_audiences"])):
            aid = self.ids.id()
            audiences.append({"id": aid, "name": self.ids.key("audience"),
                              "conditions": json.dumps(self.audience_conditions())})
            self.audience_ids.append(aid)
        for _ in range(_rng_range(rng, self.k["n_typed_audiences"])):
            aid = self.ids.id()
            typed.append({"id": aid, "name": self.ids.key("typed"), "conditions": self.audience_conditions()})
            self.audience_ids.append(aid)
            if self.p("typed_override_p"):
                # the same id in `audiences`: typedAudiences must win.  Real datafiles put a dummy
                # condition there; we put real (different) conditions half of the time.
                conds = DUMMY_AUDIENCE_CONDITIONS if rng.random() < 0.5 else json.dumps(
                    self.audience_conditions())
                audiences.insert(rng.randrange(len(audiences) + 1),
                                 {"id": aid, "name": self.ids.key("override"), "conditions": conds})
        rng.shuffle(self.audience_ids)
        return audiences, typed

    def audience_id(self) -> str:
        if self.audience_ids and not self.p("dangling_audience_p"):
            return self.rng.choice(self.audience_ids)
        return str(self.rng.randrange(1, 99))     # defined nowhere

    def audience_id_tree(self, depth: int = 0) -> Any:
        rng = self.rng
        if depth >= 3 or (depth > 0 and rng.random() < 0.5):
            return self.audience_id()
        if self.p("operator_only_p"):
            return [rng.choice(["and", "or", "not"])]
        n = rng.randint(1, 3)
        children = [self.audience_id_tree(depth + 1) for _ in range(n)]
        if self.p("implicit_or_p") and isinstance(children[0], str):
            return children
        op = rng.choice(["and", "or", "or", "not"])
        if op == "not" and not self.p("not_many_p"):
            children = children[:1]
        return [op] + children

    def targeting(self, exp: dict, allow_none: bool = True) -> None:
        """Fills audienceIds and maybe audienceConditions of an experiment or rule."""
        rng = self.rng
        r = rng.random()
        if allow_none and r < 0.3 or not self.audience_ids:
            ids: List[str] = []
        else:
            ids = sorted({self.audience_id() for _ in range(rng.randint(1, 3))})
        exp["audienceIds"] = ids
        if self.p("audience_conditions_p"):
            if allow_none and rng.random() < 0.15:
                exp["audienceConditions"] = []
            elif rng.random() < 0.3 and ids:
                exp["audienceConditions"] = ["or"] + ids
            else:
                tree = self.audience_id_tree()
                exp["audienceConditions"] = tree if isinstance(tree, list) else ["or", tree]
        elif self.p("null_audience_conditions_p"):
            exp["audienceConditions"] = None

    # ----- variables and variations --------------------------------------------------------------

    def variable_value(self, vtype: str, subtype: Optional[str]) -> str:
        rng = self.rng
        t = "json" if vtype == "json" or (vtype == "string" and subtype == "json") else vtype
        bad = self.p("unparsable_value_p")
        lenient = self.p("lenient_value_p")
        if t == "boolean":
            if bad:
                return rng.choice(["True", "TRUE", "1", "yes", "", "false ", " true"])
            return rng.choice(["true", "false"])
        if t == "integer":
            if bad:
                return rng.choice(INT_VALUES_BAD)
            if lenient:
                return rng.choice(INT_VALUES_LENIENT)
            return rng.choice(INT_VALUES_OK)
        if t == "double":
            if bad:
                return rng.choice(DOUBLE_VALUES_BAD)
            if lenient:
                return rng.choice(DOUBLE_VALUES_LENIENT)
            return rng.choice(DOUBLE_VALUES_OK)
        if t == "json":
            if bad:
                return rng.choice(JSON_VALUES_BAD)
            return rng.choice(JSON_VALUES_OK)
        return rng.choice(STRING_VALUES)

    def make_variables(self) -> List[dict]:
        rng = self.rng
        out = []
        for _ in range(_rng_range(rng, self.k["n_variables"])):
            vtype = rng.choice(["boolean", "integer", "double", "string", "json", "json"])
            var: Dict[str, Any] = {"id": self.ids.id(), "key": self.ids.key("var")}
            subtype = None
            if vtype == "json":
                if rng.random() < 0.5:
                    var["type"] = "string"
                    var["subType"] = subtype = "json"
                else:
                    var["type"] = "json"
            else:
                var["type"] = vtype
                if rng.random() < 0.05:
                    var["subType"] = ""
            if self.p("unknown_variable_type_p"):
                var["type"] = rng.choice(UNKNOWN_VARIABLE_TYPES)
            var["defaultValue"] = self.variable_value(var["type"], subtype)
            out.append(var)
        return out

    def make_variations(self, n: int, variables: List[dict], feature: bool,
                        key_pool: Optional[List[str]] = None) -> List[dict]:
        rng = self.rng
        out = []
        used = set()
        for i in range(n):
            if key_pool and self.p("dup_variation_key_p"):
                candidates = [k for k in key_pool if k not in used]
                key = rng.choice(candidates) if candidates else self.ids.key("var")
            else:
                key = self.ids.key(rng.choice(["control", "treatment", "on", "off", "variation"]))
            used.add(key)
            var: Dict[str, Any] = {"id": self.ids.id(), "key": key}
            if feature:
                if not self.p("feature_enabled_absent_p"):
                    var["featureEnabled"] = rng.random() < 0.65
                usages = []
                for v in variables:
                    if rng.random() < 0.6:
                        usages.append({"id": v["id"], "value": self.variable_value(v["type"], v.get("subType"))})
                rng.shuffle(usages)
                if usages or rng.random() < 0.7:
                    var["variables"] = usages
            elif rng.random() < 0.5:
                var["featureEnabled"] = rng.random() < 0.5
            out.append(var)
        if key_pool is not None:
            key_pool.extend(v["key"] for v in out if v["key"] not in key_pool)
        return out

    def traffic(self, entity_ids: List[str], full: bool = False) -> List[dict]:
        """A traffic allocation over entity_ids: increasing endOfRange, maybe gaps and "" ranges."""
        rng = self.rng
        gaps = not full and self.p("traffic_gap_p")
        total = 10000
        if gaps and rng.random() < 0.5:
            total = rng.choice([0, 1, 2500, 5000, 9999, 7000])
        ranges = []
        if not entity_ids:
            return [{"entityId": "", "endOfRange": total}] if gaps and rng.random() < 0.5 else []
        cuts = sorted(rng.randint(0, total) for _ in range(len(entity_ids) - 1))
        bounds = cuts + [total]
        for eid, end in zip(entity_ids, bounds):
            if gaps and rng.random() < 0.3:
                # an "" range (nobody bucketed) before this entity's range
                mid = rng.randint(ranges[-1]["endOfRange"] if ranges else 0, end)
                ranges.append({"entityId": "", "endOfRange": mid})
            ranges.append({"entityId": eid, "endOfRange": end})
        if gaps and rng.random() < 0.2:
            ranges.append({"entityId": "", "endOfRange": 10000})
        return ranges

    def status(self, p_name: str = "not_running_p") -> str:
        if self.p(p_name):
            return self.rng.choice(EXPERIMENT_STATUSES_NOT_RUNNING)
        return "Running"

    def experiment(self, key_prefix: str, layer_id: str, variables: List[dict], feature: bool,
                   key_pool: Optional[List[str]] = None, exp_type: Optional[str] = None,
                   whitelist_pool: Optional[List[str]] = None, full_traffic: bool = False,
                   status: Optional[str] = None) -> dict:
        rng = self.rng
        variations = self.make_variations(_rng_range(rng, self.k["n_variations"]), variables, feature, key_pool)
        exp: Dict[str, Any] = {"id": self.ids.id(), "key": self.ids.key(key_prefix),
                               "layerId": "" if self.p("empty_layer_id_p") else layer_id,
                               "status": status or self.status()}
        self.targeting(exp)
        exp["variations"] = variations
        exp["trafficAllocation"] = self.traffic([v["id"] for v in variations], full=full_traffic)
        wl: Dict[str, str] = {}
        if whitelist_pool is not None and self.p("whitelist_p"):
            for _ in range(rng.randint(1, 3)):
                uid = rng.choice(whitelist_pool)
                wl[uid] = (self.ids.key("gone") if self.p("whitelist_bad_variation_p")
                           else rng.choice(variations)["key"])
        exp["forcedVariations"] = wl
        if exp_type is not None:
            exp["type"] = exp_type
        elif rng.random() < 0.4:
            exp["type"] = rng.choice(["ab", "mab", "td"])
        items = list(exp.items())
        rng.shuffle(items)
        return dict(items)

    # ----- the whole datafile --------------------------------------------------------------------

    def datafile(self) -> dict:
        rng = self.rng
        whitelist_pool = [f"wl_{i}" for i in range(6)] + ["user_1", "user_2", "ü-whitelisted"]
        attributes = self.make_attributes()
        audiences, typed = self.make_audiences()

        experiments: List[dict] = []
        groups: List[dict] = []
        flag_candidates: List[dict] = []      # experiments (incl. grouped) a flag may use
        for _ in range(_rng_range(rng, self.k["n_ab_experiments"])):
            experiments.append(self.experiment("ab", self.ids.id(), [], feature=False,
                                               whitelist_pool=whitelist_pool))

        flags: List[dict] = []
        rollouts: List[dict] = []
        n_flags = _rng_range(rng, self.k["n_flags"])
        flag_vars = [self.make_variables() for _ in range(n_flags)]
        flag_pools: List[List[str]] = [[] for _ in range(n_flags)]
        flag_exps: List[List[str]] = [[] for _ in range(n_flags)]
        flag_has_fr = [False] * n_flags

        # mutually exclusive groups: their experiments may be attached to flags
        for _ in range(_rng_range(rng, self.k["n_groups"])):
            overlapping = self.p("overlapping_group_p")
            gid = self.ids.id()
            gexps = []
            for _ in range(_rng_range(rng, self.k["n_group_experiments"])):
                fi = rng.randrange(n_flags) if rng.random() < self.k["group_flag_p"] else None
                if fi is not None:
                    e = self.experiment("grp", self.ids.id(), flag_vars[fi], True, flag_pools[fi],
                                        whitelist_pool=whitelist_pool)
                    flag_exps[fi].append(e["id"])
                else:
                    e = self.experiment("grp", self.ids.id(), [], False, whitelist_pool=whitelist_pool)
                gexps.append(e)
            group = {"id": gid, "policy": "overlapping" if overlapping else "random",
                     "experiments": gexps,
                     "trafficAllocation": ([] if overlapping and rng.random() < 0.5
                                           else self.traffic([e["id"] for e in gexps]))}
            groups.append(group)

        for fi in range(n_flags):
            variables = flag_vars[fi]
            empty = self.p("empty_flag_p")
            rollout_only = not empty and rng.random() < self.k["rollout_only_p"]
            has_rollout = not empty and not self.p("no_rollout_p")
            if not empty and not rollout_only:
                for _ in range(_rng_range(rng, self.k["n_flag_experiments"])):
                    exp_type = "fr" if self.p("fr_p") else None
                    e = self.experiment("exp", self.ids.id(), variables, True, flag_pools[fi], exp_type,
                                        whitelist_pool)
                    if exp_type == "fr":
                        flag_has_fr[fi] = True
                        # fr experiments usually leave room for the appended everyone-else range
                        e["trafficAllocation"] = [t for t in e["trafficAllocation"] if t["endOfRange"] < 10000] \
                            or e["trafficAllocation"]
                    experiments.append(e)
                    flag_exps[fi].append(e["id"])
            if rollout_only:
                flag_exps[fi] = []
            if flag_has_fr[fi] and rng.random() < 0.9:
                has_rollout = True      # (without a rollout the reference appends nothing)
            rollout_id = ""
            if has_rollout:
                rollout_id = self.ids.id()
                rules = []
                if not self.p("empty_rollout_p") or flag_has_fr[fi]:
                    for _ in range(_rng_range(rng, self.k["n_delivery_rules"])):
                        # (a whitelist on a delivery rule is ignored by decide, honoured by get_variation)
                        rules.append(self.experiment("rule", rollout_id, variables, True, flag_pools[fi],
                                                     status=self.status("delivery_rule_not_running_p"),
                                                     exp_type=None if rng.random() < 0.7 else "td",
                                                     whitelist_pool=whitelist_pool if rng.random() < 0.3
                                                     else None))
                    everyone = self.experiment("everyone_else", rollout_id, variables, True, flag_pools[fi],
                                               status=self.status("delivery_rule_not_running_p"),
                                               full_traffic=rng.random() < 0.85)
                    # the everyone-else rule targets everybody and has one variation
                    everyone["audienceIds"] = []
                    everyone.pop("audienceConditions", None)
                    if rng.random() < 0.3:
                        everyone["audienceConditions"] = []
                    everyone["variations"] = everyone["variations"][:1]
                    everyone["trafficAllocation"] = self.traffic([everyone["variations"][0]["id"]],
                                                                 full=rng.random() < 0.85)
                    rules.append(everyone)
                rollouts.append({"id": rollout_id, "experiments": rules})
            if rng.random() < 0.3:
                rng.shuffle(flag_exps[fi])
            flag = {"id": self.ids.id(), "key": self.ids.key("flag"), "rolloutId": rollout_id,
                    "experimentIds": flag_exps[fi], "variables": variables}
            flags.append(flag)

        rng.shuffle(rollouts)
        events = []
        all_exp_ids = [e["id"] for e in experiments] + [e["id"] for g in groups for e in g["experiments"]]
        for _ in range(_rng_range(rng, self.k["n_events"])):
            events.append({"id": self.ids.id(), "key": self.ids.key(rng.choice(["purchase", "signup", "click"])),
                           "experimentIds": sorted(rng.sample(all_exp_ids, min(len(all_exp_ids),
                                                                               rng.randint(0, 3))))})

        df: Dict[str, Any] = {
            "version": "4",
            "projectId": self.ids.id(),
            "accountId": self.ids.id(),
            "revision": str(rng.randint(1, 500)),
            "attributes": attributes,
            "audiences": audiences,
            "typedAudiences": typed,
            "events": events,
            "experiments": experiments,
            "groups": groups,
            "featureFlags": flags,
            "rollouts": rollouts,
            "integrations": [],
        }
        if rng.random() < 0.85:
            df["sendFlagDecisions"] = rng.random() < 0.6
        r = rng.random()
        if r < 0.4:
            df["botFiltering"] = True
        elif r < 0.7:
            df["botFiltering"] = False
        r = rng.random()
        if r < 0.4:
            df["anonymizeIP"] = True
        elif r < 0.8:
            df["anonymizeIP"] = False
        if self.p("region_p"):
            df["region"] = rng.choice(["EU", "US"])
        if rng.random() < 0.5:
            df["sdkKey"] = self.ids.key("sdk")
            df["environmentKey"] = rng.choice(["production", "development"])
        self.add_holdouts(df)
        return df

    # ----- holdouts --------------------------------------------------------------------------------

    def add_holdouts(self, df: dict) -> None:
        """Adds "holdouts" / "localHoldouts" from a separate random stream (see the module docstring)."""
        self.rng = rng = random.Random(f"holdouts-{self.seed}")
        if not self.p("holdouts_p"):
            return
        self.holdout_serial = 0
        rule_ids = [e_id for f in df["featureFlags"] for e_id in f["experimentIds"]]
        rule_ids += [rule["id"] for r in df["rollouts"] for rule in r["experiments"]]
        df["holdouts"] = [self.holdout() for _ in range(_rng_range(rng, self.k["n_global_holdouts"]))]
        local = []
        for _ in range(_rng_range(rng, self.k["n_local_holdouts"])):
            h = self.holdout()
            r = rng.random()
            if r < 0.08:
                pass                                            # no includedRules: skipped by the reference
            elif r < 0.12 or not rule_ids:
                h["includedRules"] = [] if r < 0.1 else [str(HOLDOUT_ID_BASE - 1)]   # nothing / unknown id
            else:
                h["includedRules"] = rng.sample(rule_ids, min(len(rule_ids), rng.randint(1, 3)))
            local.append(h)
        if local or rng.random() < 0.5:
            df["localHoldouts"] = local
        if df["holdouts"] and rng.random() < 0.1:
            # a global holdout carrying includedRules: the reference ignores them (it still applies to all)
            df["holdouts"][0]["includedRules"] = rng.sample(rule_ids, min(len(rule_ids), 1))

    def holdout_id(self) -> str:
        self.holdout_serial += 1
        return str(HOLDOUT_ID_BASE + self.holdout_serial)

    def holdout(self) -> dict:
        rng = self.rng
        hid = self.holdout_id()
        variation: Dict[str, Any] = {"id": self.holdout_id(),
                                     "key": rng.choice(["off", "holdout_off", "ho_control"]) + f"_{hid}"}
        r = rng.random()
        if r < self.k["holdout_enabled_p"]:
            variation["featureEnabled"] = True
        elif r < 0.93:
            variation["featureEnabled"] = False
        if rng.random() < 0.8:
            variation["variables"] = []
        status = rng.choice(HOLDOUT_STATUSES_NOT_RUNNING) if self.p("holdout_not_running_p") else "Running"
        h: Dict[str, Any] = {"id": hid, "key": f"holdout_{hid}", "status": status}
        self.targeting(h)
        end = rng.choice([0, 300, 1000, 2500, 2500, 5000, 10000])
        traffic = []
        if end and rng.random() < 0.2:
            traffic.append({"entityId": "", "endOfRange": rng.randint(0, end)})
        traffic.append({"entityId": variation["id"], "endOfRange": end})
        h["variations"] = [variation]
        h["trafficAllocation"] = traffic
        if self.p("holdout_exclude_td_p"):
            h["excludeTargetedDeliveries"] = True
        elif rng.random() < 0.2:
            h["excludeTargetedDeliveries"] = False
        return h


def generate_datafile(seed: int, cmab: bool = False, **knobs: Any) -> dict:
    """A random, valid Optimizely v4 datafile (a dict) determined by `seed` and `knobs`.

    `cmab`: also turn some experiments into CMAB experiments (see `add_cmab`); without it (the default) a
    seed's datafile is what it always was."""
    unknown = set(knobs) - set(DEFAULT_KNOBS)
    if unknown:
        raise TypeError(f"unknown knobs: {sorted(unknown)}")
    k = dict(DEFAULT_KNOBS)
    k.update(knobs)
    df = _Gen(seed, k).datafile()
    if cmab:
        add_cmab(df, seed)
    return df


CMAB_TRAFFIC = [0, 1500, 5000, 5000, 8000, 10000, 10000, 10000]


def add_cmab(df: dict, seed: int, p: float = 0.6) -> None:
    """Gives experiments of the datafile (flags' experiment rules, grouped ones too, and A/B experiments) a
    "cmab" object, from a random stream of its own: "attributeIds" a few of the datafile's attribute ids
    (sometimes one no attribute has, sometimes none), "trafficAllocation" from CMAB_TRAFFIC (so some users
    are skipped by traffic). At least one experiment rule of a flag gets one when the datafile has any."""
    rng = random.Random(f"cmab-{seed}")
    attribute_ids = [a["id"] for a in df.get("attributes") or []]
    candidates = list(df.get("experiments") or [])
    for group in df.get("groups") or []:
        candidates += list(group.get("experiments") or [])
    rule_ids = {e_id for f in df.get("featureFlags") or [] for e_id in f.get("experimentIds") or []}
    chosen = [e for e in candidates if rng.random() < p]
    if not any(e["id"] in rule_ids for e in chosen):
        flagged = [e for e in candidates if e["id"] in rule_ids]
        if flagged:
            chosen.append(rng.choice(flagged))
    for experiment in chosen:
        ids = rng.sample(attribute_ids, min(len(attribute_ids), rng.randint(0, 4)))
        if rng.random() < 0.15:
            ids.append(str(HOLDOUT_ID_BASE - 7))          # an id no attribute has
        experiment["cmab"] = {"attributeIds": ids, "trafficAllocation": rng.choice(CMAB_TRAFFIC)}
        if rng.random() < 0.5:                            # open to everyone: more users reach the service
            experiment["audienceIds"] = []
            experiment.pop("audienceConditions", None)
        if rng.random() < 0.6:
            experiment["status"] = "Running"


# ----- users ---------------------------------------------------------------------------------------

def _walk_leaves(node: Any) -> Iterator[dict]:
    if isinstance(node, dict):
        yield node
    elif isinstance(node, list):
        for child in node:
            yield from _walk_leaves(child)


def condition_leaves(datafile: dict) -> List[dict]:
    """Every leaf condition of every audience (string and typed) of the datafile."""
    out: List[dict] = []
    for a in datafile.get("audiences", []):
        out.extend(_walk_leaves(json.loads(a["conditions"])))
    for a in datafile.get("typedAudiences", []):
        out.extend(_walk_leaves(a["conditions"]))
    return out


def whitelisted_user_ids(datafile: dict) -> List[str]:
    ids = set()
    exps = list(datafile.get("experiments", []))
    for g in datafile.get("groups", []):
        exps.extend(g["experiments"])
    for r in datafile.get("rollouts", []):
        exps.extend(r["experiments"])
    for e in exps:
        ids.update(e.get("forcedVariations", {}))
    return sorted(ids)


def _near_values(value: Any, match: Optional[str], rng: random.Random) -> List[Any]:
    """Values around a condition value: equal, just above / below, other types."""
    out: List[Any] = [value]
    if isinstance(value, bool):
        out += [not value, int(value), str(value).lower()]
    elif isinstance(value, int):
        out += [value + 1, value - 1, float(value), float(value) + 0.5, str(value)]
    elif isinstance(value, float):
        out += [value + 0.001, value - 0.001, str(value)]
        if abs(value) < 2 ** 62:
            out.append(int(value))      # (attributes are at most 64-bit integers)
    elif isinstance(value, str):
        if match == "substring":
            out += [value + "x", "x" + value + "y", value.upper(), value[1:], ""]
        elif match and match.startswith("semver"):
            out += USER_VERSIONS
        else:
            out += [value.upper(), value + " ", value[:-1]]
    return out


def _crashes_reference_semver(value: Any) -> bool:
    """True if `value`, as a user's version, has an all-digit pre-release/build part: compared with a
    target whose part at that index is not all digits, the reference raises (see REFERENCE_CRASHES)."""
    if not isinstance(value, str):
        return False
    pre, build = value.find("-"), value.find("+")
    if pre < 0 and build < 0:
        return False
    is_pre = pre >= 0 and (build < 0 or pre < build)
    suffix = value.split("-" if is_pre else "+", 1)[1]
    return suffix.isdigit()


def generate_users(seed: int, datafile: dict, n: int) -> Iterator[Tuple[str, Dict[str, Any]]]:
    """Yields n (user_id, attributes) pairs whose attribute values are drawn to hit the datafile's
    conditions: matching and non-matching strings, ints, floats, bools, None, missing keys, numbers past
    2**53, versions, and sometimes $opt_bucketing_id (a string, or a non-string that must be ignored)."""
    rng = random.Random(f"users-{seed}")
    leaves = condition_leaves(datafile)
    by_name: Dict[str, List[Tuple[Any, Optional[str]]]] = {}
    for leaf in leaves:
        name = leaf.get("name")
        if isinstance(name, str):
            by_name.setdefault(name, []).append((leaf.get("value"), leaf.get("match")))
    for a in datafile.get("attributes", []):
        by_name.setdefault(a["key"], [])
    names = sorted(by_name)
    whitelisted = whitelisted_user_ids(datafile)
    generic = (STRING_POOL + INT_POOL + FLOAT_POOL + [True, False, None] + BIG_NUMBERS
               + USER_VERSIONS + [float("inf"), float("-inf")])

    for i in range(n):
        r = rng.random()
        if whitelisted and r < 0.12:
            user_id = rng.choice(whitelisted)
        elif r < 0.17:
            user_id = rng.choice(["", "ü-ser", "用户-42", "user with spaces", "😀" * rng.randint(1, 3),
                                  "a" * rng.randint(50, 200), "1234567890"])
        else:
            user_id = f"user_{rng.randrange(10 ** 6)}"
        attrs: Dict[str, Any] = {}
        mode = rng.random()
        for name in names:
            if rng.random() < (0.5 if mode < 0.15 else 0.2):
                continue                                    # missing key
            conds = by_name[name]
            q = rng.random()
            if conds and q < 0.55:
                value, match = rng.choice(conds)
                value = rng.choice(_near_values(value, match, rng))
            elif conds and q < 0.65:
                value = None
            else:
                value = rng.choice(generic)
            if isinstance(value, (list, dict)) or _crashes_reference_semver(value):
                value = str(value) + "x"
            attrs[name] = value
        if rng.random() < 0.15:
            attrs["$opt_bucketing_id"] = rng.choice(
                [f"bucket_{rng.randrange(1000)}", user_id + "x", "", "ü", 12345, None, True, 3.5])
        if rng.random() < 0.1:
            attrs["$opt_user_agent"] = rng.choice(["Mozilla/5.0", "Googlebot/2.1", ""])
        if rng.random() < 0.1:
            attrs["not_in_datafile"] = rng.choice(["x", 1, 2.5, True, None])
        items = list(attrs.items())
        rng.shuffle(items)
        yield user_id, dict(items)


def copy_datafile(datafile: dict) -> dict:
    return copy.deepcopy(datafile)
