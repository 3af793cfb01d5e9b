#!/usr/bin/env python3
"""Value differential fuzzer: the datafile's variable values, variable and flag shapes and header fields,
the drop-in `experiment.optimizely` against optimizely-sdk 5.7.0.  Zero differences allowed.

    cd <worktree> && make lib python-speedups
    EXPERIMENT_LIBRARY=$PWD/.build/release/libexperiment.so PYTHONPATH=$PWD/bindings/python \\
        python3 bindings/python/tests/valuefuzz.py --seeds 0:300

Options: --seeds A:B (default 0:100, the slice test_valuefuzz.py runs), --users N, --jobs N, --report FILE,
--replay SEED (every difference of one seed), --quiet.

difffuzz.py and apifuzz.py mutate a datafile's structure (a field deleted or retyped, duplicates,
dangling references) and draw variable values from the generator's fixed pools.  This fuzzer leaves the
structure valid and draws what the reference then typecasts or hands out, from grammars:

* variable texts per type: numbers as Python's int() and float() read them (signs, leading zeros,
  underscores, Unicode digits and spaces, exponents, nan / inf / infinity in any case, past 4300 digits,
  past the double range, hex), booleans in any case and spacing, JSON texts (NaN / Infinity tokens,
  integers past 64 bits and past 4300 digits, 1e400, duplicate names, escapes and unpaired surrogates,
  nesting past 64 levels, BOM, raw control characters, non-JSON whitespace, trailing garbage);
* values that are no string (the reference casts them as they are): integers of any size, doubles
  (1e19, 1e300, -0.0), booleans, null, lists, objects;
* variable types and subTypes of any kind and case; `featureEnabled` of every JSON type;
* duplicates: a variable repeated with the same key (another id, type or value) or the same id (another
  key), a variation's usage repeated, a usage naming another flag's variable, a flag repeated with the
  same key or the same id;
* ids repeated across entity kinds: two rollouts' rules, a group experiment, a holdout, a variation of
  another rule, a flag taking a rule's id;
* header fields: sdkKey, environmentKey, botFiltering, anonymizeIP, sendFlagDecisions, region of every
  JSON type; an "integrations" section of odd entries (ODP twice, without host or key, other types).

Both sides get the same JSON text.  Per user (difffuzz's users of the seed) a random call sequence:
the typed and untyped get_feature_variable getters (on every variable, with every getter),
get_all_feature_variables, is_feature_enabled, get_enabled_features, decide / decide_all (random options),
activate and track; after each call its return value, notifications, events and saved profiles are
compared type-exact (apifuzz.Case.step).  Once per case: get_optimizely_config()'s contents.
"""

from __future__ import annotations

import copy
import json
import random
import sys
from typing import Any, Callable, Dict, List, Optional, Tuple

import os

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import apifuzz  # noqa: E402  (sets up the state directory and the event endpoint first)
import difffuzz  # noqa: E402
from datafile_generator import generate_datafile  # noqa: E402
from test_differential import random_tags  # noqa: E402

DEFAULT_SEEDS = (0, 100)
DEFAULT_USERS = 4
OPS_PER_USER = (10, 24)

# ===================================================================================================
# Value grammars
# ===================================================================================================

# Decimal digits of other scripts (Python's int() and float() read every Unicode decimal digit).
DIGIT_ZEROS = [0x30] * 12 + [0x660, 0x6F0, 0x966, 0xFF10, 0x1D7CE, 0x0E50]
# Whitespace Python strips around a number (and some it does not: U+200B, U+FEFF are no space).
SPACES = [" ", " ", "\t", "\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x1f", "\x85", "\xa0",
          "\u1680", "\u2003", "\u2028", "\u3000", "\u200b", "\ufeff"]
SPECIAL_WORDS = ["nan", "inf", "infinity", "NaN", "Inf", "INFINITY", "iNfInItY", "nAn", "infinite", "in f"]


def _digits(rng: random.Random, n: int) -> str:
    zero = rng.choice(DIGIT_ZEROS) if rng.random() < 0.15 else 0x30
    return "".join(chr(zero + rng.randrange(10)) for _ in range(n))


def _digit_run(rng: random.Random) -> str:
    r = rng.random()
    n = rng.choice([1, 1, 2, 3, 5, 10, 16, 19, 20, 25]) if r < 0.93 else rng.choice([309, 400, 4299, 4300, 4301, 5000])
    text = _digits(rng, n)
    if rng.random() < 0.1 and len(text) > 1:
        i = rng.randrange(1, len(text))
        text = text[:i] + rng.choice(["_", "_", "__", "_"]) + text[i:]
    if rng.random() < 0.03:
        text = text + "_"
    return text


def number_text(rng: random.Random, floating: bool) -> str:
    r = rng.random()
    if r < 0.08:
        body = rng.choice(SPECIAL_WORDS)
    elif r < 0.11:
        body = rng.choice(["0x10", "0X1f", "0b1", "0o7", "1j", "٫5", "1,5", ".", "e5", "1e", "1e+", "--1", "+-1"])
    else:
        body = _digit_run(rng) if rng.random() < 0.9 else ""
        if floating or rng.random() < 0.2:
            if rng.random() < 0.5:
                body += "." + (_digit_run(rng) if rng.random() < 0.8 else "")
            if rng.random() < 0.3:
                body += rng.choice(["e", "E"]) + rng.choice(["", "+", "-"]) + rng.choice(
                    ["0", "3", "16", "308", "309", "400", "-5", "99999", _digit_run(rng)])
        if not body:
            body = _digit_run(rng)
    if rng.random() < 0.3:
        body = rng.choice(["+", "-"]) + body
    if rng.random() < 0.15:
        body = rng.choice(["0", "00"]) + body if body[:1].isdigit() else body
    if rng.random() < 0.2:
        body = "".join(rng.choice(SPACES) for _ in range(rng.randint(1, 2))) + body
    if rng.random() < 0.2:
        body = body + "".join(rng.choice(SPACES) for _ in range(rng.randint(1, 2)))
    return body


def bool_text(rng: random.Random) -> str:
    word = rng.choice(["true", "false", "true", "True", "TRUE", "tRue", "1", "0", "yes", "", "t", "truee"])
    if rng.random() < 0.15:
        word = rng.choice(SPACES) + word
    if rng.random() < 0.15:
        word += rng.choice(SPACES)
    return word


def _json_string(rng: random.Random) -> str:
    pieces = ['"']
    for _ in range(rng.randint(0, 4)):
        pieces.append(rng.choice(["a", "é", "日本", "😀", "\\n", "\\\"", "\\\\", "\\u00e9", "\\u0000", "\\ud83d\\ude00",
                                  "\\ud800", "\\udfff", "\\/", "\\t", " ", "\\u2028"]))
    pieces.append('"')
    return "".join(pieces)


def _json_number(rng: random.Random) -> str:
    return rng.choice(["0", "-0", "1", "-1", "2.5", "-0.0", "1e2", "1E-3", "1e400", "-1e400", "1e-400",
                       "NaN", "Infinity", "-Infinity", "9007199254740993", "18446744073709551616",
                       "123456789012345678901234567890", "0.1", "1.0", "5e-324", "1.7976931348623157e308",
                       "1" * rng.choice([20, 100, 4300, 4301]), "-" + "9" * rng.choice([20, 4301]),
                       "1" * 400 + ".5"])


def json_value(rng: random.Random, depth: int = 0) -> str:
    r = rng.random()
    if depth > 3 or r < 0.4:
        return rng.choice([_json_number, _json_string, lambda g: g.choice(["true", "false", "null"])])(rng)
    items = [json_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    ws = rng.choice(["", " ", "\n  ", "\t"])
    if r < 0.7:
        return "[" + ("," + ws).join(items) + "]"
    names = [_json_string(rng) if rng.random() < 0.3 else '"' + rng.choice("abcab") + '"' for _ in items]
    return "{" + ("," + ws).join(f"{n}:{ws}{v}" for n, v in zip(names, items)) + "}"


def json_text(rng: random.Random) -> str:
    text = json_value(rng)
    r = rng.random()
    if r < 0.06:
        depth = rng.choice([40, 62, 63, 64, 65, 70, 100, 200])
        inner = rng.choice(["", "1", "{}", '"x"'])
        text = "[" * depth + inner + "]" * depth if rng.random() < 0.5 else \
            '{"a":' * depth + (inner or "1") + "}" * depth
    elif r < 0.2:
        broken = [text[:-1] if len(text) > 1 else "{", text + " x", text + ",", "\ufeff" + text, "'a'",
                  "{'a': 1}", '{"a": 1,}', "[1,]", '"a\x01b"', '"tab\there"', "\x0c" + text, text + "\x0b",
                  "\u00a0" + text, "undefined", "nan", "inf", "-", "", " ", "01", "1.", ".5", "+1", "-Infinity",
                  "NaN", "[NaN]", "{\"a\": Infinity}", "[-nan]", "True", "None"]
        text = rng.choice(broken)
    if rng.random() < 0.15:
        text = rng.choice([" ", "\n", "\r\n", "\t"]) + text + rng.choice(["", " ", "\n"])
    return text


def literal_value(rng: random.Random) -> Any:
    """A value that is no string."""
    return rng.choice([0, 1, -1, 42, 2 ** 31, 2 ** 53 + 1, 2 ** 63 - 1, 2 ** 63, -(2 ** 63), 2 ** 64, -(2 ** 64) - 1,
                       10 ** 19, 10 ** 30, -(10 ** 30), 10 ** 400, 0.0, -0.0, 2.5, -2.5, 1e16, 1.5e16, 9.2e18,
                       9.3e18, 1e19, -1e19, 1e300, -1e300, 5e-324, 0.1, True, False, None, [], [1, "a"], {},
                       {"a": [1, 2.5, None]}, ["x"], {"": 0}])


def variable_text(rng: random.Random, vtype: Any) -> Any:
    if rng.random() < 0.12:
        return literal_value(rng)
    kind = vtype if vtype in ("boolean", "integer", "double", "json", "string") and rng.random() < 0.8 else \
        rng.choice(["boolean", "integer", "double", "json", "string"])
    if kind == "boolean":
        return bool_text(rng)
    if kind == "integer":
        return number_text(rng, False)
    if kind == "double":
        return number_text(rng, True)
    if kind == "json":
        return json_text(rng)
    return rng.choice(["", "x", "日本語", "a\u0000b", "true", "1.5", json_text(rng), number_text(rng, False)])


TYPES = ["boolean", "integer", "double", "string", "json"]
ODD_TYPES = ["", "Integer", "JSON", "float", "int", "bool", None, 5, True, ["string"], {"t": 1}]
SUBTYPES = ["json", "json", "", "JSON", "string", None, 5, "Json"]
FEATURE_ENABLED = [True, False, True, False, 0, 1, 2, "", "false", "true", None, [], [0], {}, {"a": 1}, 0.0, 0.5]
HEADER_VALUES = {
    "sdkKey": ["", "sdk-key", "ü", None, 0, 5, True, False, [], ["k"], {}, {"k": 1}, 2.5],
    "environmentKey": ["", "production", None, 0, 7, True, [], {}, ["e"], 1.5],
    "botFiltering": [True, False, None, 0, 1, "", "true", "false", [], {}, 2.5],
    "anonymizeIP": [True, False, None, 0, 1, -1, "", "yes", [], {}, 0.0],
    "sendFlagDecisions": [True, False, None, 0, 1, "", "false", [], [0], {}, {"a": 1}, 0.5],
    "region": ["US", "EU", "eu", "", None, 0, 1, True, [], {}, "APAC", "us"],
}

# ===================================================================================================
# Mutations: each changes the datafile in place and returns a short description
# ===================================================================================================


def _flags(df: dict) -> List[dict]:
    return [f for f in df.get("featureFlags") or [] if isinstance(f, dict)]


def _variables(df: dict) -> List[Tuple[dict, dict]]:
    return [(f, v) for f in _flags(df) for v in f.get("variables") or [] if isinstance(v, dict)]


def _variations(df: dict) -> List[dict]:
    out = []
    for _path, rule in difffuzz.experiments_of(df) + difffuzz.holdouts_of(df):
        out += [v for v in rule.get("variations") or [] if isinstance(v, dict)]
    return out


def _usages(df: dict) -> List[Tuple[dict, dict]]:
    return [(var, u) for var in _variations(df) for u in var.get("variables") or [] if isinstance(u, dict)]


def m_default(df: dict, rng: random.Random) -> Optional[str]:
    pairs = _variables(df)
    if not pairs:
        return None
    _, v = rng.choice(pairs)
    v["defaultValue"] = variable_text(rng, v.get("type") if v.get("subType") != "json" else "json")
    return f"defaultValue of {v.get('key')!r} = {v['defaultValue']!r:.60}"


def m_usage(df: dict, rng: random.Random) -> Optional[str]:
    usages = _usages(df)
    if not usages:
        return None
    types = {v.get("id"): (v.get("type") if v.get("subType") != "json" else "json") for _, v in _variables(df)}
    _, u = rng.choice(usages)
    u["value"] = variable_text(rng, types.get(u.get("id"), "string"))
    return f"usage value of {u.get('id')!r} = {u['value']!r:.60}"


def m_many_values(df: dict, rng: random.Random) -> Optional[str]:
    """Most values of the datafile drawn from the grammars at once."""
    n = 0
    for _ in range(rng.randint(3, 12)):
        if (m_default if rng.random() < 0.4 else m_usage)(df, rng):
            n += 1
    return f"{n} values" if n else None


def m_type(df: dict, rng: random.Random) -> Optional[str]:
    pairs = _variables(df)
    if not pairs:
        return None
    _, v = rng.choice(pairs)
    r = rng.random()
    if r < 0.4:
        v["type"] = rng.choice(TYPES + ODD_TYPES)
    elif r < 0.8:
        v["type"] = rng.choice(["string", "string", "json"] + TYPES)
        v["subType"] = rng.choice(SUBTYPES)
    else:
        v.pop("type", None) if rng.random() < 0.3 else v.pop("subType", None)
    return f"type of {v.get('key')!r} = {v.get('type')!r}/{v.get('subType', '-')!r}"


def m_feature_enabled(df: dict, rng: random.Random) -> Optional[str]:
    variations = _variations(df)
    if not variations:
        return None
    var = rng.choice(variations)
    if rng.random() < 0.1:
        var.pop("featureEnabled", None)
        return f"featureEnabled of {var.get('key')!r} removed"
    var["featureEnabled"] = rng.choice(FEATURE_ENABLED)
    return f"featureEnabled of {var.get('key')!r} = {var['featureEnabled']!r}"


def m_duplicate_variable(df: dict, rng: random.Random) -> Optional[str]:
    pairs = _variables(df)
    if not pairs:
        return None
    flag, v = rng.choice(pairs)
    dup = copy.deepcopy(v)
    mode = rng.choice(["same key", "same key", "same id", "identical"])
    if mode == "same key":
        dup["id"] = str(rng.randrange(10 ** 9, 2 * 10 ** 9))
        if rng.random() < 0.5:
            dup["type"] = rng.choice(TYPES)
            dup.pop("subType", None)
        dup["defaultValue"] = variable_text(rng, dup.get("type"))
        if rng.random() < 0.4:
            # a variation gives the copy a value too
            for var in _variations(df):
                if isinstance(var.get("variables"), list) and rng.random() < 0.5:
                    var["variables"].append({"id": dup["id"], "value": variable_text(rng, dup.get("type"))})
    elif mode == "same id":
        dup["key"] = f"{v.get('key')}_twin"
        dup["defaultValue"] = variable_text(rng, dup.get("type"))
    variables = flag["variables"]
    variables.insert(rng.randint(0, len(variables)), dup)
    return f"variable {v.get('key')!r} duplicated ({mode}) in flag {flag.get('key')!r}"


def m_duplicate_usage(df: dict, rng: random.Random) -> Optional[str]:
    usages = _usages(df)
    if not usages:
        return None
    var, u = rng.choice(usages)
    dup = dict(u, value=variable_text(rng, "string"))
    var["variables"].insert(rng.randint(0, len(var["variables"])), dup)
    return f"usage {u.get('id')!r} repeated in variation {var.get('key')!r}"


def m_foreign_usage(df: dict, rng: random.Random) -> Optional[str]:
    pairs = _variables(df)
    variations = [v for v in _variations(df) if isinstance(v.get("variables"), list)]
    if not pairs or not variations:
        return None
    _, v = rng.choice(pairs)
    var = rng.choice(variations)
    var["variables"].append({"id": v.get("id"), "value": variable_text(rng, v.get("type"))})
    return f"variation {var.get('key')!r} gives a value to {v.get('key')!r} (maybe of another flag)"


def m_duplicate_flag(df: dict, rng: random.Random) -> Optional[str]:
    flags = df.get("featureFlags")
    if not isinstance(flags, list) or not flags:
        return None
    f = rng.choice(_flags(df))
    dup = copy.deepcopy(f)
    mode = rng.choice(["same key", "same id"])
    if mode == "same key":
        dup["id"] = str(rng.randrange(10 ** 9, 2 * 10 ** 9))
    else:
        dup["key"] = f"{f.get('key')}_twin"
    if isinstance(dup.get("variables"), list):
        rng.shuffle(dup["variables"])
        for v in dup["variables"][: rng.randint(0, len(dup["variables"]))]:
            if rng.random() < 0.5:
                v["defaultValue"] = variable_text(rng, v.get("type"))
            else:
                v["type"] = rng.choice(TYPES)
        if rng.random() < 0.3:
            dup["variables"] = dup["variables"][:-1]
    if rng.random() < 0.3:
        dup["experimentIds"] = []
    flags.insert(rng.randint(0, len(flags)), dup)
    return f"flag {f.get('key')!r} duplicated ({mode})"


def m_header(df: dict, rng: random.Random) -> Optional[str]:
    name = rng.choice(sorted(HEADER_VALUES))
    if rng.random() < 0.1:
        df.pop(name, None)
        return f"without {name}"
    df[name] = rng.choice(HEADER_VALUES[name])
    return f"{name} = {df[name]!r}"


def m_cross_kind_id(df: dict, rng: random.Random) -> Optional[str]:
    """One entity takes the id of an entity of another kind or place: an experiment, a group's experiment, a
    delivery rule or a holdout the id of another one; a variation the id of a variation of another rule; a
    flag the id of an experiment."""
    rules = [r for _p, r in difffuzz.experiments_of(df) + difffuzz.holdouts_of(df) if isinstance(r.get("id"), str)]
    r = rng.random()
    if r < 0.5 and len(rules) >= 2:
        a, b = rng.sample(rules, 2)
        a["id"] = b["id"]
        return f"rule {a.get('key')!r} takes the id of {b.get('key')!r}"
    variations = [v for v in _variations(df) if isinstance(v.get("id"), str)]
    if r < 0.85 and len(variations) >= 2:
        a, b = rng.sample(variations, 2)
        old_id, a["id"] = a["id"], b["id"]
        # the ranges that named the old id name the new one (or keep naming the old one: nothing)
        if rng.random() < 0.7:
            for _p, rule in difffuzz.experiments_of(df) + difffuzz.holdouts_of(df):
                for t in rule.get("trafficAllocation") or []:
                    if isinstance(t, dict) and t.get("entityId") == old_id:
                        t["entityId"] = b["id"]
        return f"variation {a.get('key')!r} takes the id of variation {b.get('key')!r}"
    flags = _flags(df)
    if flags and rules:
        f = rng.choice(flags)
        f["id"] = rng.choice(rules)["id"]
        return f"flag {f.get('key')!r} takes a rule's id"
    return None


INTEGRATION_ENTRIES: List[Any] = [
    {"key": "odp", "host": "https://api.zaius.com", "publicKey": "W4WzcEs-ABgXorzY7h1LCQ"},
    {"key": "odp", "host": "https://other.example", "publicKey": "other"}, {"key": "odp"}, {"key": "odp", "host": ""},
    {"key": "odp", "publicKey": "k"}, {"key": "other", "host": "h"}, {"key": ""}, {"key": "ODP", "host": "h"},
    {"key": "odp", "host": "h", "publicKey": "k", "extra": [1, {"a": None}]}, {"key": "odp", "host": 5},
    {"key": "odp", "publicKey": None}, {"host": "h"}, {"key": 1}, {}, "odp", None, [],
]


def m_integrations(df: dict, rng: random.Random) -> Optional[str]:
    """An "integrations" section of odd entries: ODP twice, without host or key, fields of other types."""
    r = rng.random()
    if r < 0.1:
        df["integrations"] = rng.choice([[], {}, None, "", "odp", 0])
    else:
        df["integrations"] = [copy.deepcopy(rng.choice(INTEGRATION_ENTRIES)) for _ in range(rng.randint(1, 3))]
    return f"integrations = {json.dumps(df['integrations'])[:80]}"


MUTATORS: List[Tuple[Callable[[dict, random.Random], Optional[str]], float]] = [
    (m_default, 3), (m_usage, 3), (m_many_values, 3), (m_type, 1.5), (m_feature_enabled, 1.5),
    (m_duplicate_variable, 1.2), (m_duplicate_usage, 0.8), (m_foreign_usage, 0.8), (m_duplicate_flag, 1),
    (m_header, 1.5), (m_cross_kind_id, 1.2), (m_integrations, 0.6),
]


def mutate(df: dict, rng: random.Random) -> List[str]:
    """1-5 mutations of `df` (in place); what was done."""
    mutators, weights = zip(*MUTATORS)
    done: List[str] = []
    for _ in range(rng.choice([1, 2, 2, 3, 4, 5])):
        for _attempt in range(5):
            what = rng.choices(mutators, weights)[0](df, rng)
            if what:
                done.append(what)
                break
    return done


def case_datafile(seed: int) -> Tuple[dict, dict, List[str]]:
    """The seed's generated datafile, and the same with its value mutations (and what they were)."""
    base = generate_datafile(seed)
    df = copy.deepcopy(base)
    done = mutate(df, random.Random(f"valuefuzz-{seed}"))
    return base, df, done


# ===================================================================================================
# Calls
# ===================================================================================================

GETTERS = [None, "boolean", "double", "integer", "string", "json"]
OPTIONS = ["INCLUDE_REASONS", "EXCLUDE_VARIABLES", "DISABLE_DECISION_EVENT", "ENABLED_FLAGS_ONLY"]


def draw_calls(u: apifuzz.Universe, rng: random.Random, n: int) -> List[List[Any]]:
    def flag() -> Any:
        return rng.choice(u.flag_keys) if u.flag_keys and rng.random() < 0.95 else "no_such_flag"

    def variable_call() -> List[Any]:
        f = flag()
        keys = [v.get("key") for v in u.variables.get(f, [])]
        var = rng.choice(keys) if keys and rng.random() < 0.95 else "no_such_variable"
        return ["get_feature_variable", rng.choice(GETTERS), f, var]

    def options() -> List[str]:
        return rng.sample(OPTIONS, rng.randint(0, 2))

    def experiment_key() -> Any:
        keys = [e["key"] for e in u.experiments + u.rules]
        return rng.choice(keys) if keys else "no_such_experiment"

    menu: List[Tuple[float, Callable[[], List[Any]]]] = [
        (8, variable_call),
        (2, lambda: ["get_all_feature_variables", flag()]),
        (1.5, lambda: ["is_feature_enabled", flag()]),
        (0.5, lambda: ["get_enabled_features"]),
        (4, lambda: ["decide", flag(), options()]),
        (1, lambda: ["decide_all", options()]),
        (0.7, lambda: ["activate", experiment_key()]),
        (0.5, lambda: ["track", rng.choice(u.events) if u.events else "no_such_event", random_tags(rng)]),
    ]
    weights = [w for w, _ in menu]
    return [rng.choices(menu, weights)[0][1]() for _ in range(n)]


# ===================================================================================================
# One case: apifuzz's, over this fuzzer's datafile and calls
# ===================================================================================================


Tally = apifuzz.Tally


class Case(apifuzz.Case):
    def __init__(self, seed: int, n_users: int, tally: Tally) -> None:  # noqa: super().__init__ not wanted
        self.seed = seed
        self.n_users = n_users
        self.tally = tally
        self.base, df, done = case_datafile(seed)
        self.mutations = [{"kind": d} for d in done]
        self.segments = False
        self.df = df
        self.text = json.dumps(df)
        self.key_texts = difffuzz.nonstring_key_texts(df)
        self.users = difffuzz.fuzz_users(seed, self.base, n_users)
        self.universe = apifuzz.Universe(df)
        self.default_options = None
        self.profiles, self.raising = {}, set()
        self.history: List[Any] = []
        self.user: Tuple[int, Any, Dict[str, Any]] = (-1, "", {})

    def run(self) -> None:
        # apifuzz.Case.run with this fuzzer's calls
        saved = apifuzz.draw_calls
        apifuzz.draw_calls = draw_calls  # type: ignore[assignment]
        try:
            super().run()
        finally:
            apifuzz.draw_calls = saved  # type: ignore[assignment]


def run(seeds: Any, n_users: int = DEFAULT_USERS, jobs: int = 1) -> Tally:
    return apifuzz.run(seeds, n_users, jobs, case_type=Case)


def summary_line(tally: Tally, seeds: range, seconds: float) -> str:
    return apifuzz.summary_line(tally, seeds, seconds, "valuefuzz")


def main(argv: Optional[List[str]] = None) -> int:
    return apifuzz.main(argv, case_type=Case, name="valuefuzz", description=__doc__, default_seeds=DEFAULT_SEEDS,
                        default_users=DEFAULT_USERS)


if __name__ == "__main__":
    sys.exit(main())
