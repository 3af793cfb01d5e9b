#!/usr/bin/env python3
"""Edge-axis differential fuzzer: the inputs difffuzz.py and apifuzz.py do not reach, our library against
the reference SDK (optimizely-sdk 5.7.0).  Zero differences allowed.

difffuzz builds every datafile with `json.dumps`, so its text only ever has Python's canonical spellings, and
draws versions, strings and numbers from fixed pools.  This fuzzer writes datafile *text* and draws from
grammars instead:

* numbers spelled as a person or another JSON writer may spell them, written into the text as raw tokens
  (`1E2`, `-0`, `1.0e0`, `1e400`, `5e-324`, integers past 64 bits, `NaN`, `-Infinity`): as condition values
  of every match type, and as the ids the reference keeps unchecked and formats with `str()` -- delivery
  rules' and holdouts' ids (their bucketing keys), rollout variations' ids, audience ids in a rule's
  audienceConditions (its reasons);
* strings with lone surrogate escapes (`\\ud800`), escaped and raw non-ASCII, combining sequences and their
  precomposed twins, NUL: as condition values (exact, substring) and as user values;
* semantic versions from a grammar (digits with leading zeros, huge parts, letters, '-', '+', '.', empty
  parts, other whitespace than ' ', Unicode digits), target and user alike, against every semver match;
* users: numbers around 2**53 and 2**63, floats next to the condition's value, strings near the condition's
  (prefix, suffix, case, normalization), ids that are empty, non-ASCII or long, `$opt_bucketing_id`.

Per seed: one datafile (2-4 flags, experiments, delivery rules, maybe holdouts) and `--users` users; for each
user `decide_all` with INCLUDE_REASONS (every decision and its reasons) and one `decide` that sends its
impression (the event payloads are compared).  Calls on which the reference raises have no answer: counted
apart and skipped.

    EXPERIMENT_LIBRARY=$PWD/.build/release/libexperiment.so PYTHONPATH=$PWD/bindings/python \\
        python3 bindings/python/tests/edgefuzz.py --seeds 0:300

`--replay SEED` prints the seed's datafile text and every difference.  test_edgefuzz.py runs a fixed slice.
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import os
import random
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

os.environ.setdefault("EXPERIMENT_EVENT_ENDPOINT", "none")
if "XDG_STATE_HOME" not in os.environ:
    os.environ["XDG_STATE_HOME"] = tempfile.mkdtemp(prefix="edgefuzz-state-")

from test_differential import RecordingDispatcher, normalize_event, typed_diff  # noqa: E402
from difffuzz import make_ours, make_reference, reference_accepts  # noqa: E402
from optimizely.decision.optimizely_decide_option import OptimizelyDecideOption  # noqa: E402

DEFAULT_SEEDS = (0, 60)
DEFAULT_USERS = 16

# ===================================================================================================
# Raw tokens: the datafile is built as a dict with placeholders, then each placeholder string is replaced
# by its token in the text (so the text holds spellings json.dumps never writes).
# ===================================================================================================

NUMBER_SPELLINGS = [
    "0", "-0", "0.0", "-0.0", "1", "1.0", "1E0", "1.0e0", "10", "1E1", "1e+1", "100", "1E2", "100.0",
    "0.5", "5e-1", "-1", "-1.5", "18", "18.0", "1.8e1", "42", "4.2E1", "9007199254740992", "9007199254740993",
    "9.007199254740992e15", "-9007199254740992", "9007199254740992.0", "1e16", "9223372036854775807",
    "9223372036854775808", "-9223372036854775808", "-9223372036854775809", "18446744073709551615",
    "18446744073709551616", "100000000000000000000000", "-100000000000000000000000", "1e308", "1e400",
    "-1e400", "5e-324", "1e-400", "0.30000000000000004", "123456789.123456789", "NaN", "Infinity",
    "-Infinity",
]
ID_SPELLINGS = [
    "7", "-7", "0", "-0", "7.0", "7.5", "1E2", "1e22", "1.5e-7", "1e16", "0.1", "12345678901234567890",
    "9223372036854775808", "-9223372036854775809", "100000000000000000000000", "1e400", "-1e400", "NaN",
    "true", "false", "null", "\"7\"", "\"\"", "\"\\u00e9\"", "\"e\\u0301\"",
]
# (Not "\ud800" as an id or key: a datafile string with an unpaired surrogate escape is read as U+FFFD, a
# documented difference -- README "Deliberate differences". As a condition value it decides as the reference.)
STRING_SPELLINGS = [  # JSON string tokens (escapes as written in the text)
    "\"\"", "\"a\"", "\"A\"", "\"\\u00e9\"", "\"e\\u0301\"", "\"\\u00c9\"", "\"\\ud800\"", "\"\\udfff\"",
    "\"x\\ud800y\"", "\"\\ud83d\\ude00\"", "\"\\ufffd\"", "\"\\u0000\"", "\"a\\u0000b\"", "\"\\u00df\"",
    "\"ss\"", "\"\\u0130\"", "\"i\\u0307\"", "\"\\u212b\"", "\"\\u00c5\"", "\"ab\"", "\"b\"", "\" \"",
    "\"\\t\"", "\"1\"", "\"1.0\"", "\"true\"", "\"\\/\"", "\"/\"",
]
# Python values of the strings above (what json.loads makes of them), for users: not those with a lone
# surrogate (a str the library cannot hold: a documented difference, README "Inputs and answers").
STRING_VALUES = [v for v in (json.loads(t) for t in STRING_SPELLINGS)
                 if not any(0xD800 <= ord(c) <= 0xDFFF for c in v)]  # (see _holdable) + ["\ufffd", "\U0001F600", "e\u0301x", "xab"]

VERSION_ATOMS = ["0", "1", "2", "3", "9", "10", "01", "00", "007", "99999999999999999999", "a", "b", "z", "A",
                 "beta", "alpha", "rc", "-", "+", ".", ".", ".", "..", "", "\t", "_", "1_0", "x1", "1x",
                 "\u0661", "\u0663", "\u00b2", "\u00e9", "v", "\u00a0", "\u2003", "\n"]


def random_version(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.45:
        parts = [rng.choice(["0", "1", "2", "3", "10", "01", "00", "99999999999999999999"])
                 for _ in range(rng.randint(1, 4))]
        version = ".".join(parts)
        q = rng.random()
        if q < 0.3:
            version += "-" + rng.choice(["beta", "alpha", "1", "beta.1", "beta.10", "beta.9", "rc-1", "x+y", "",
                                         "Beta", "beta.2", "0", "a.b.c", "-"])
        elif q < 0.5:
            version += "+" + rng.choice(["build", "1", "b.2", "x-y", "", "001", "+"])
        return version
    return "".join(rng.choice(VERSION_ATOMS) for _ in range(rng.randint(0, 7)))


def crashes_reference_semver(target: str, user: str) -> bool:
    """Whether the reference's comparison raises (it calls int() on a target part where the user's part
    isdigit(), and str.isdigit() takes characters int() refuses such as '\u00b2'). The fuzzer still runs
    such pairs: the reference raising is detected and skipped; this only keeps them from being most."""
    return False


# ===================================================================================================
# The datafile
# ===================================================================================================

def _same_key(a: Any, b: Any) -> bool:
    """Whether two ids name one entry of a Python dict (== and, for NaN, the one json constant)."""
    try:
        return a is b or (hash(a) == hash(b) and a == b)
    except TypeError:
        return False


class Raw:
    """Placeholders for raw tokens."""

    def __init__(self) -> None:
        self.tokens: Dict[str, str] = {}

    def __call__(self, token: str) -> str:
        name = f"@@raw{len(self.tokens)}@@"
        self.tokens[name] = token
        return name

    def render(self, df: dict) -> str:
        text = json.dumps(df, ensure_ascii=False)
        for name, token in self.tokens.items():
            # as a member value / element of the datafile itself
            text = text.replace(json.dumps(name), token)
            # inside an audience's "conditions" string: the token escaped as string content
            text = text.replace(json.dumps(json.dumps(name))[1:-1], json.dumps(token)[1:-1])
        return text


MATCHES = ["exact", "substring", "gt", "ge", "lt", "le", "semver_eq", "semver_gt", "semver_ge", "semver_lt",
           "semver_le", "exists"]


class Builder:
    def __init__(self, seed: int):
        self.rng = random.Random(f"edgefuzz-{seed}")
        self.raw = Raw()
        self.counter = 100
        self.leaves: List[Tuple[str, str, Any]] = []   # (attribute, match, python value or None)
        self.rule_ids: List[Any] = []                  # the rules' ids as Python reads them

    def uid(self) -> str:
        self.counter += 1
        return str(self.counter)

    def lenient_id(self, rule: bool = False, holdout: bool = False) -> str:
        """An id for a place the reference keeps unchecked: usually a string, sometimes a raw token. Rules of
        different rollouts may share one (decided as the reference does); a holdout never takes a rule's
        (the reference's maps by id then mix the two: a documented difference, README)."""
        if self.rng.random() < 0.35:
            token = self.rng.choice(ID_SPELLINGS)
            value = json.loads(token)
            if holdout and any(_same_key(value, other) for other in self.rule_ids):
                return self.uid()
            if rule:
                self.rule_ids.append(value)
            return self.raw(token)
        return self.uid()

    def leaf(self) -> dict:
        rng = self.rng
        name = rng.choice(["n", "s", "v", "b"])
        match = rng.choice(MATCHES)
        leaf: Dict[str, Any] = {"name": name, "type": "custom_attribute", "match": match}
        r = rng.random()
        if match.startswith("semver"):
            value: Any = random_version(rng) if r < 0.9 else self.raw(rng.choice(NUMBER_SPELLINGS))
            if isinstance(value, str) and not value.startswith("@@"):
                self.leaves.append((name, match, value))
        elif match == "substring" or (match == "exact" and r < 0.4):
            token = rng.choice(STRING_SPELLINGS)
            value = self.raw(token)
            self.leaves.append((name, match, json.loads(token)))
        elif match == "exists":
            value = None
            if r < 0.5:
                leaf.pop("match") if False else None
        else:
            token = rng.choice(NUMBER_SPELLINGS)
            value = self.raw(token)
            try:
                self.leaves.append((name, match, json.loads(token)))
            except ValueError:
                pass
        if value is not None or rng.random() < 0.5:
            leaf["value"] = value
        if rng.random() < 0.05:
            leaf.pop("match")
        return leaf

    def conditions(self) -> Any:
        rng = self.rng
        n = rng.randint(1, 3)
        leaves = [self.leaf() for _ in range(n)]
        op = rng.choice(["and", "or", "or", "not"])
        if op == "not":
            return ["and", ["not", leaves[0]]] + leaves[1:]
        return [op] + leaves

    def variations(self, n: int, lenient: bool) -> List[dict]:
        out = []
        for i in range(n):
            vid = self.lenient_id() if lenient else self.uid()
            if self.raw.tokens.get(vid) == "NaN":
                # (a NaN variation id: the reference's impression names no variation, ours does -- a
                # documented difference, README)
                vid = self.uid()
            out.append({"id": vid, "key": f"var_{self.counter}_{i}",
                        "featureEnabled": self.rng.random() < 0.7, "variables": []})
        return out

    def traffic(self, variations: List[dict]) -> List[dict]:
        rng = self.rng
        out, end = [], 0
        for v in variations:
            end = min(10000, end + rng.choice([0, 1, 1000, 2500, 5000, 9999, 10000]))
            out.append({"entityId": v["id"], "endOfRange": end})
        return out

    def rule(self, key: str, layer: str, lenient: bool, audience_ids: List[str]) -> dict:
        rng = self.rng
        variations = self.variations(rng.randint(1, 3), lenient)
        rule: Dict[str, Any] = {
            "id": self.lenient_id(rule=True) if lenient else self.uid(), "key": key, "status": "Running", "layerId": layer,
            "audienceIds": [], "forcedVariations": {}, "variations": variations,
            "trafficAllocation": self.traffic(variations)}
        if audience_ids and rng.random() < 0.7:
            chosen = rng.sample(audience_ids, rng.randint(1, min(2, len(audience_ids))))
            if lenient and rng.random() < 0.3:
                chosen = chosen + [self.raw(rng.choice(["7", "1e2", "12345678901234567890", "-0", "7.0"]))]
            rule["audienceConditions"] = [rng.choice(["or", "and"])] + chosen
            rule["audienceIds"] = [c for c in chosen if not c.startswith("@@")]
        return rule

    def build(self) -> Tuple[dict, str]:
        rng = self.rng
        audiences, typed = [], []
        audience_ids = []
        for _ in range(rng.randint(1, 4)):
            aid = self.uid()
            audience_ids.append(aid)
            cond = self.conditions()
            if rng.random() < 0.5:
                typed.append({"id": aid, "name": f"aud{aid}", "conditions": cond})
            else:
                audiences.append({"id": aid, "name": f"aud{aid}", "conditions": json.dumps(cond)})
        experiments, rollouts, flags = [], [], []
        for f in range(rng.randint(2, 4)):
            exp_ids = []
            for e in range(rng.randint(0, 2)):
                exp = self.rule(f"exp_{f}_{e}", self.uid(), False, audience_ids)
                if "audienceConditions" in exp and any(str(c).startswith("@@") for c in exp["audienceConditions"]):
                    exp["audienceConditions"] = exp["audienceConditions"][:1] + exp["audienceIds"]
                experiments.append(exp)
                exp_ids.append(exp["id"])
            rules = [self.rule(f"rule_{f}_{r}", self.uid(), True, audience_ids) for r in range(rng.randint(0, 2))]
            everyone = self.rule(f"everyone_{f}", self.uid(), True, [])
            rollout_id = self.uid()
            rollouts.append({"id": rollout_id, "experiments": rules + [everyone]})
            flags.append({"id": self.uid(), "key": f"flag_{f}", "rolloutId": rollout_id, "experimentIds": exp_ids,
                          "variables": []})
        holdouts = []
        if rng.random() < 0.3:
            variations = self.variations(1, True)
            variations[0]["key"] = "off"
            variations[0]["featureEnabled"] = False
            holdout: Dict[str, Any] = {
                "id": self.lenient_id(holdout=True), "key": f"holdout_{self.counter}", "status": "Running",
                "audienceIds": [], "audienceConditions": [], "variations": variations,
                "trafficAllocation": [{"entityId": variations[0]["id"], "endOfRange": rng.choice([500, 3000, 10000])}]}
            if rng.random() < 0.4:
                holdout["includedFlags"] = [flags[0]["id"]]
            holdouts.append(holdout)
        df = {
            "version": "4", "projectId": "9000", "accountId": "9001", "revision": str(rng.randint(1, 99)),
            "anonymizeIP": rng.random() < 0.5, "botFiltering": False, "sendFlagDecisions": rng.random() < 0.8,
            "attributes": [{"id": f"90{i}", "key": k} for i, k in enumerate(["n", "s", "v", "b"])],
            "events": [{"id": "9100", "key": "ev", "experimentIds": []}],
            "audiences": audiences, "typedAudiences": typed, "groups": [], "experiments": experiments,
            "rollouts": rollouts, "featureFlags": flags}
        if holdouts:
            df["holdouts"] = holdouts
        return df, self.raw.render(df)


# ===================================================================================================
# Users
# ===================================================================================================

NUMBER_VALUES: List[Any] = [0, -0.0, 0.0, 1, 1.0, 10, 18, 18.0, 42, 100, 100.0, 0.5, -1, -1.5, 2 ** 53 - 1,
                            2 ** 53, 2 ** 53 + 1, -(2 ** 53), 2.0 ** 53, 2 ** 63, 2 ** 64, 10 ** 23, 1e16,
                            1e308, 5e-324, float("nan"), float("inf"), float("-inf"), True, False]


def near_number(value: Any, rng: random.Random) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return rng.choice(NUMBER_VALUES)
    if isinstance(value, float) and not math.isfinite(value):
        return rng.choice([value, 0, 1e308])
    choices: List[Any] = [value, -value, float(value), value + 1, value - 1]
    if isinstance(value, float):
        choices += [math.nextafter(value, math.inf), math.nextafter(value, -math.inf)]
        if abs(value) < 1e18:
            choices.append(int(value))
    return rng.choice(choices)


def _holdable(value: str) -> bool:
    """A str the library can hold (no lone surrogate: README "Inputs and answers", a documented difference)."""
    return not any(0xD800 <= ord(c) <= 0xDFFF for c in value)


def near_string(value: str, rng: random.Random) -> Any:
    near = rng.choice([value, value + "x", "x" + value, value.upper(), value.lower(), value[1:], value[:-1],
                       value + value, rng.choice(STRING_VALUES)])
    return near if _holdable(near) else near.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def users_for(seed: int, leaves: List[Tuple[str, str, Any]], n: int) -> List[Tuple[str, Dict[str, Any]]]:
    rng = random.Random(f"edgefuzz-users-{seed}")
    users = []
    for i in range(n):
        attrs: Dict[str, Any] = {}
        for name in ("n", "s", "v", "b"):
            if rng.random() < 0.2:
                continue
            own = [leaf for leaf in leaves if leaf[0] == name]
            r = rng.random()
            if own and r < 0.6:
                _, match, value = rng.choice(own)
                if match.startswith("semver"):
                    attrs[name] = random_version(rng) if rng.random() < 0.5 else near_string(str(value), rng)
                elif isinstance(value, str):
                    attrs[name] = near_string(value, rng)
                else:
                    attrs[name] = near_number(value, rng)
            elif r < 0.75:
                attrs[name] = random_version(rng)
            elif r < 0.9:
                attrs[name] = rng.choice(STRING_VALUES)
            else:
                attrs[name] = rng.choice(NUMBER_VALUES + [None])
        if rng.random() < 0.1:
            attrs["$opt_bucketing_id"] = rng.choice(["b1", "", "\u00e9", 5, None, 2 ** 64, 1.5])
        r = rng.random()
        if r < 0.1:
            user_id = rng.choice(["", "\u00e9", "e\u0301", "\U0001F600", "u" * 300, "7", "None"])
        else:
            user_id = f"user_{rng.randrange(10 ** 6)}"
        users.append((user_id, attrs))
    return users


# ===================================================================================================
# Comparison
# ===================================================================================================

class Tally:
    def __init__(self) -> None:
        self.comparisons = 0
        self.crashes: collections.Counter = collections.Counter()
        self.differences: collections.Counter = collections.Counter()
        self.examples: Dict[str, dict] = {}

    def merge(self, other: "Tally") -> None:
        self.comparisons += other.comparisons
        self.crashes.update(other.crashes)
        self.differences.update(other.differences)
        for k, v in other.examples.items():
            self.examples.setdefault(k, v)


def _decision(d: Any) -> dict:
    return {"flag_key": d.flag_key, "enabled": d.enabled, "variation_key": d.variation_key,
            "rule_key": d.rule_key, "variables": d.variables, "reasons": list(d.reasons)}


def run_seed(seed: int, n_users: int = DEFAULT_USERS, verbose: bool = False) -> Tally:
    tally = Tally()
    builder = Builder(seed)
    _, text = builder.build()
    users = users_for(seed, builder.leaves, n_users)
    rd, od = RecordingDispatcher(), RecordingDispatcher()

    def differ(sig: str, user: Any, call: str, ref: Any, ours: Any, detail: str) -> None:
        tally.differences[sig] += 1
        example = {"seed": seed, "user": repr(user), "call": call, "detail": detail,
                   "reference": repr(ref)[:1500], "ours": repr(ours)[:1500]}
        tally.examples.setdefault(sig, example)
        if verbose:
            print(json.dumps(example, ensure_ascii=False, indent=1))

    try:
        ref = make_reference(text, rd)
        ref_ok = reference_accepts(ref)
    except Exception:  # noqa: BLE001
        ref_ok = False
    try:
        ours = make_ours(text, od)
        ours_ok = True
    except Exception:  # noqa: BLE001
        ours_ok = False
    tally.comparisons += 1
    if ref_ok != ours_ok:
        differ(f"acceptance: reference {ref_ok} / ours {ours_ok}", None, "load", ref_ok, ours_ok, text[:3000])
        return tally
    if not ref_ok:
        return tally
    flags = [f"flag_{i}" for i in range(6)]
    try:
        for user in users:
            user_id, attrs = user
            # decide_all with reasons, no events
            try:
                uc = ref.create_user_context(user_id, dict(attrs))
                r_all = {k: _decision(v) for k, v in uc.decide_all(
                    [OptimizelyDecideOption.INCLUDE_REASONS, OptimizelyDecideOption.DISABLE_DECISION_EVENT]).items()}
            except Exception as exc:  # noqa: BLE001
                tally.crashes[f"decide_all: {type(exc).__name__}"] += 1
                r_all = None
            o_all = ours.create_user_context(user_id, dict(attrs)).decide_all(
                ["INCLUDE_REASONS", "DISABLE_DECISION_EVENT"])
            if r_all is not None:
                o_all = {k: _decision(v) for k, v in o_all.items()}
                tally.comparisons += max(1, len(r_all))
                if sorted(r_all) != sorted(o_all):
                    differ("decide_all keys", user, "decide_all", sorted(r_all), sorted(o_all), "")
                for key in r_all:
                    if key not in o_all:
                        continue
                    for field in ("enabled", "variation_key", "rule_key", "variables", "reasons", "flag_key"):
                        d = typed_diff(r_all[key][field], o_all[key][field], field)
                        if d:
                            differ(f"decide_all {field}", user, f"decide_all[{key}]", r_all[key], o_all[key], d)
                            break
            # one decide that sends its impression
            flag = random.Random(f"{seed}-{user_id}").choice(flags)
            rd.events.clear()
            od.events.clear()
            try:
                r_one = _decision(ref.create_user_context(user_id, dict(attrs)).decide(flag))
            except Exception as exc:  # noqa: BLE001
                tally.crashes[f"decide: {type(exc).__name__}"] += 1
                ours.create_user_context(user_id, dict(attrs)).decide(flag)
                ours.flush()
                continue
            o_one = _decision(ours.create_user_context(user_id, dict(attrs)).decide(flag))
            ours.flush()
            tally.comparisons += 2
            d = typed_diff(r_one, o_one, "decide")
            if d:
                differ("decide", user, f"decide({flag})", r_one, o_one, d)
            r_events = [normalize_event(e)[0] for e in rd.events]
            o_events = [normalize_event(e)[0] for e in od.events]
            d = typed_diff(r_events, o_events, "events")
            if d:
                differ("decide events", user, f"decide({flag})", r_events, o_events, d)
    finally:
        ours.close()
        try:
            ref.close()
        except Exception:  # noqa: BLE001
            pass
    return tally


def run(seeds: range, n_users: int = DEFAULT_USERS, verbose: bool = False) -> Tally:
    total = Tally()
    for seed in seeds:
        total.merge(run_seed(seed, n_users, verbose))
    return total


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", default=f"{DEFAULT_SEEDS[0]}:{DEFAULT_SEEDS[1]}")
    parser.add_argument("--users", type=int, default=DEFAULT_USERS)
    parser.add_argument("--replay", type=int, default=None)
    args = parser.parse_args(argv)
    if args.replay is not None:
        builder = Builder(args.replay)
        print(builder.build()[1])
        tally = run_seed(args.replay, args.users, verbose=True)
        print(f"{tally.comparisons} comparisons, {sum(tally.differences.values())} differences")
        return 1 if tally.differences else 0
    a, b = (int(x) for x in args.seeds.split(":"))
    started = time.time()
    tally = run(range(a, b), args.users)
    for sig, count in tally.differences.most_common():
        ex = tally.examples[sig]
        print(f"{count:6d}  {sig}\n        seed {ex['seed']} user {ex['user'][:200]} {ex['call']}\n"
              f"        {ex['detail'][:400]}")
    from optimizely.version import __version__ as reference_version
    print(f"edgefuzz: {tally.comparisons:,} comparisons against optimizely-sdk {reference_version}, seeds {a}:{b}, "
          f"{time.strftime('%Y-%m-%d', time.gmtime())}, "
          f"{sum(tally.differences.values())} differences ({len(tally.differences)} signatures), "
          f"{sum(tally.crashes.values())} reference crashes skipped "
          f"({dict(tally.crashes)}), {time.time() - started:.0f} s")
    return 1 if tally.differences else 0


if __name__ == "__main__":
    sys.exit(main())
