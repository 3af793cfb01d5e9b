#!/usr/bin/env python3
"""Generates Tests/ExperimentCoreTests/MatcherVectors.swift from Optimizely's reference Python SDK.

Every expectation in the generated file is computed by the reference (`optimizely-sdk`):
  - murmur hashes by optimizely.lib.pymmh3.hash (masked to unsigned, as the bucketer does),
  - bucket values by optimizely.bucketer.Bucketer._generate_bucket_value,
  - semantic-version comparisons by CustomAttributeConditionEvaluator.compare_user_version_with_target_version,
  - leaf conditions by CustomAttributeConditionEvaluator.evaluate.

Usage:  python3 Tests/ExperimentCoreTests/generate_matcher_vectors.py
(writes MatcherVectors.swift next to this script). Deterministic: fixed random seed.
"""
from __future__ import annotations

import math
import os
import random
import struct
import sys

import optimizely
from optimizely import bucketer as ref_bucketer
from optimizely.helpers import condition as ref_condition
from optimizely.lib import pymmh3
from optimizely.logger import NoOpLogger

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "MatcherVectors.swift")
rng = random.Random(20240611)


# ---------------------------------------------------------------------------------------------
# Swift literal emission


class Rep:
    """A long string written compactly: prefix + ch * count + suffix."""

    def __init__(self, prefix: str, ch: str, count: int, suffix: str = ""):
        self.prefix, self.ch, self.count, self.suffix = prefix, ch, count, suffix

    def value(self) -> str:
        return self.prefix + self.ch * self.count + self.suffix

    def swift(self) -> str:
        parts = []
        if self.prefix:
            parts.append(swift_str(self.prefix))
        parts.append(f"String(repeating: {swift_str(self.ch)}, count: {self.count})")
        if self.suffix:
            parts.append(swift_str(self.suffix))
        return "(" + " + ".join(parts) + ")"


def val(s):
    return s.value() if isinstance(s, Rep) else s


def swift_str(s) -> str:
    if isinstance(s, Rep):
        return s.swift()
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif 0x20 <= o < 0x7F:
            out.append(ch)
        else:
            out.append("\\u{%x}" % o)
    out.append('"')
    return "".join(out)


def swift_number(v) -> str:
    if isinstance(v, float):
        if math.isnan(v):
            return ".nan"
        if math.isinf(v):
            return ".infinity" if v > 0 else "-.infinity"
        if v != 0.0 and abs(v) < sys.float_info.min:  # subnormal: a decimal literal would warn
            return "Double(bitPattern: 0x%016X)" % struct.unpack("<Q", struct.pack("<d", v))[0]
        return repr(v)
    return str(v)


# ---------------------------------------------------------------------------------------------
# Reference oracles


class _UserContext:
    """The two methods CustomAttributeConditionEvaluator uses of OptimizelyUserContext."""

    def __init__(self, attributes):
        self._attributes = attributes

    def get_user_attributes(self):
        return self._attributes

    def is_qualified_for(self, segment):
        return False


def ref_hash(s: str, seed: int) -> int:
    return pymmh3.hash(s, seed) & 0xFFFFFFFF


_bucketer = ref_bucketer.Bucketer()


def ref_bucket_of_key(key: str) -> int:
    return _bucketer._generate_bucket_value(key)


def ref_bucket_of_hash(h: int) -> int:
    b = ref_bucketer.Bucketer()
    b._generate_unsigned_hash_code_32_bit = lambda _key: h  # the reference arithmetic on a chosen hash
    return b._generate_bucket_value("unused")


def ref_semver(target: str, user: str) -> str:
    """'<', '=', '>' (user vs target), 'N' (None) or 'E' (the reference raises)."""
    ev = ref_condition.CustomAttributeConditionEvaluator([], _UserContext({}), NoOpLogger())
    try:
        r = ev.compare_user_version_with_target_version(target, user)
    except Exception:
        return "E"
    return {None: "N", -1: "<", 0: "=", 1: ">"}[r]


ABSENT = object()


def ref_leaf(match, cond_value, user_value) -> str:
    """'T', 'F', 'N' (None) or 'E' (raises) for one leaf condition."""
    attrs = {} if user_value is ABSENT else {"attr": user_value}
    data = [["attr", cond_value, "custom_attribute", match]]
    ev = ref_condition.CustomAttributeConditionEvaluator(data, _UserContext(attrs), NoOpLogger())
    try:
        r = ev.evaluate(0)
    except Exception:
        return "E"
    return {None: "N", True: "T", False: "F"}[r]


# ---------------------------------------------------------------------------------------------
# MurmurHash3


def random_ascii(n: int) -> str:
    return "".join(chr(rng.randint(0x20, 0x7E)) for _ in range(n))


UNICODE_RANGES = [
    (0x00A0, 0x00FF),  # Latin-1
    (0x0100, 0x017F),  # Latin Extended-A
    (0x0370, 0x03FF),  # Greek
    (0x0400, 0x04FF),  # Cyrillic
    (0x0300, 0x036F),  # combining marks
    (0x0660, 0x0669),  # Arabic-Indic digits
    (0x4E00, 0x9FFF),  # CJK
    (0xAC00, 0xD7A3),  # Hangul
    (0xE000, 0xF8FF),  # private use
    (0xFFF0, 0xFFFD),
    (0x1F300, 0x1F6FF),  # emoji (4-byte UTF-8)
    (0x10000, 0x1007F),
    (0x10FFF0, 0x10FFFF),
]


def random_unicode(n: int) -> str:
    out = []
    for _ in range(n):
        if rng.random() < 0.3:
            out.append(chr(rng.randint(0x20, 0x7E)))
        else:
            lo, hi = rng.choice(UNICODE_RANGES)
            out.append(chr(rng.randint(lo, hi)))
    return "".join(out)


def murmur_strings():
    strings = ["", "a", "ab", "abc", "abcd", "abcde", "abcdef", "abcdefg", "abcdefgh", "abcdefghi",
               "\x00", "\x00\x00\x00\x00", "\x7f", "\u00ff", "\u00e9", "\u20ac", "\U0001F600",
               "user_1", "test_user_1111134", "ppid111127", "$opt_bucketing_id", "1" * 64]
    for n in range(0, 10):          # every length 0..9, several times each
        for _ in range(8):
            strings.append(random_ascii(n))
    for n in range(10, 65):
        strings.append(random_ascii(n))
    for n in range(1, 10):          # Unicode, 1..9 characters
        for _ in range(8):
            strings.append(random_unicode(n))
    for n in range(10, 40, 3):
        strings.append(random_unicode(n))
    for _ in range(40):             # realistic bucketing keys
        strings.append(f"user{rng.randint(0, 10**9)}{rng.randint(10**9, 10**11)}")
    seen, out = set(), []
    for s in strings:
        if s not in seen:
            seen.add(s)
            out.append(s)
    return out


def gen_murmur():
    rows = []
    for s in murmur_strings():
        rows.append((s, 1, ref_hash(s, 1)))
    for s in murmur_strings()[:60]:
        for seed in (0, 0x9747B28C, 0xFFFFFFFF):
            rows.append((s, seed, ref_hash(s, seed)))
    return rows


def gen_bucketing_keys():
    rows = []
    ids = ["", "a", "user", "test_user_1", "\u00fcser", "\U0001F600x", "123456789", "user@example.com"]
    ids += [random_ascii(rng.randint(1, 20)) for _ in range(30)]
    ids += [random_unicode(rng.randint(1, 8)) for _ in range(12)]
    parents = ["", "1", "12", "123", "1234", "7716830082", "10390977673", "group_1", "\u00e9"]
    parents += [str(rng.randint(0, 10**12)) for _ in range(10)]
    for uid in ids:
        for pid in rng.sample(parents, 5):
            key = ref_bucketer.BUCKETING_ID_TEMPLATE.format(bucketing_id=uid, parent_id=pid)
            rows.append((uid, pid, ref_hash(key, ref_bucketer.HASH_SEED), ref_bucket_of_key(key)))
    return rows


def gen_bucket_hashes():
    hashes = {0, 1, 2, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, 0xFFFFFFFF}
    # around every bucket boundary of a sample of buckets, and the first and last ones
    buckets = list(range(0, 20)) + list(range(9980, 10000)) + rng.sample(range(20, 9980), 120)
    for b in buckets:
        edge = (b * 2 ** 32) // 10000
        for d in (-2, -1, 0, 1, 2):
            h = edge + d
            if 0 <= h <= 0xFFFFFFFF:
                hashes.add(h)
    for _ in range(200):
        hashes.add(rng.randint(0, 0xFFFFFFFF))
    return [(h, ref_bucket_of_hash(h)) for h in sorted(hashes)]


# ---------------------------------------------------------------------------------------------
# Semantic versions

SEMVER_POOL = [
    "1", "1.2", "1.2.3", "1.2.3.4", "1..2", ".1", "1.", " 1.2", "1.2 ", "1. 2", "",
    "1.2.3-", "1.2.3+", "1.2.3-beta", "1.2.3-beta.1", "1.2.3-beta.2", "1.2.3-beta.11", "1.2.3-alpha",
    "1.2.3-Beta", "1.2.3-1", "1.2.3-2", "1.2.3-10", "1.2.3-01", "1.2.3+build", "1.2.3+build-1",
    "1.2.3+build.1", "1.2.3-beta+build", "1.2.3-beta-1", "1.2.3--", "1.2.3-+", "1.2.3+-",
    "1.2.4", "1.3", "2", "2.0.0", "1.10", "1.9", "01.2.3", "1.02.3", "0", "0.0.0",
    "1.18446744073709551616", "1.18446744073709551615", "1.018446744073709551616",
    "-1.2", "+1.2", "1.2-", "1.2+", "a.b.c", "1.a", "v1.2.3", "1.2.3_4", "1.2.3-\u00fc", "1.2.3-z",
    "1.2-beta", "1-beta", "1.2.3.4-beta", "1.2.3-beta.1.2.3.4", "1.2.3-\t", "1.2.3\t",
]

SEMVER_SPECIAL = [
    # int() of a target suffix part when the user part is numeric: sign, whitespace, underscores
    ("1.2.3-+5", "1.2.3-5"), ("1.2.3-+5", "1.2.3-4"), ("1.2.3-+5", "1.2.3-6"),
    ("1.2.3--5", "1.2.3-0"), ("1.2.3--0", "1.2.3-0"), ("1.2.3--0", "1.2.3-1"), ("1.2.3-+0", "1.2.3-0"),
    ("1.2.3-1_0", "1.2.3-10"), ("1.2.3-1_0", "1.2.3-9"), ("1.2.3-1_0", "1.2.3-11"),
    ("1.2.3-1_000_000", "1.2.3-1000000"), ("1.2.3-0_0", "1.2.3-0"),
    ("1.2.3-1__0", "1.2.3-10"), ("1.2.3-_10", "1.2.3-10"), ("1.2.3-10_", "1.2.3-10"),
    ("1.2.3--_1", "1.2.3-1"), ("1.2.3-+_1", "1.2.3-1"), ("1.2.3-+-1", "1.2.3-1"),
    ("1.2.3-\t5", "1.2.3-5"), ("1.2.3-5\n", "1.2.3-5"), ("1.2.3-\x0b5\x0c", "1.2.3-5"),
    ("1.2.3-\r\n5", "1.2.3-6"), ("1.2.3-\t-5", "1.2.3-0"), ("1.2.3-\t+5\t", "1.2.3-5"),
    ("1.2.3-\x1c5", "1.2.3-5"), ("1.2.3-5\x1f", "1.2.3-5"), ("1.2.3-5\x00", "1.2.3-5"),
    ("1.2.3-\x7f5", "1.2.3-5"), ("1.2.3-\u00a05", "1.2.3-5"), ("1.2.3-5\u00a0", "1.2.3-5"),
    ("1.2.3-\x855", "1.2.3-5"), ("1.2.3-\u16805", "1.2.3-5"), ("1.2.3-\u20005\u200a", "1.2.3-5"),
    ("1.2.3-\u20285\u2029", "1.2.3-4"), ("1.2.3-\u202f5\u205f", "1.2.3-6"), ("1.2.3-\u30005\u3000", "1.2.3-5"),
    ("1.2.3-\u200b5", "1.2.3-5"), ("1.2.3-5\u2001\t\u3000", "1.2.3-5"), ("1.2.3-\t\u00a0\n5", "1.2.3-5"),
    ("1.2.3-5 6", "1.2.3-5"), ("1.2.3-5\t6", "1.2.3-5"), ("1.2.3-+\t5", "1.2.3-5"),
    ("1.2.3-\t", "1.2.3-5"), ("1.2.3-\u00a0", "1.2.3-5"), ("1.2.3-+", "1.2.3-5"), ("1.2.3--", "1.2.3-5"),
    ("1.2.3-5x", "1.2.3-5"), ("1.2.3-beta", "1.2.3-1"), ("1.2.3-", "1.2.3-1"), ("1.2.3+", "1.2.3+1"),
    ("1.2.3-5.1", "1.2.3-5"), ("1.2.3+build", "1.2.3+7"), ("1.2.3-\u00b2", "1.2.3-2"),
    ("1.2.3-0005", "1.2.3-5"), ("1.2.3-5", "1.2.3-0005"), ("1.2.3-0", "1.2.3-000"),
    # user suffix non-numeric, target numeric
    ("1.2.3-5", "1.2.3-beta"), ("1.2.3-5", "1.2.3-+5"), ("1.2.3-5", "1.2.3-\t5"), ("1.2.3-5", "1.2.3-"),
    # huge numbers (no overflow)
    ("1.18446744073709551616", "1.18446744073709551617"), ("1.18446744073709551617", "1.18446744073709551616"),
    ("1.2.99999999999999999999999999999", "1.2.100000000000000000000000000000"),
    ("1.2.3-99999999999999999999", "1.2.3-0099999999999999999999"),
    ("1.2.3--99999999999999999999", "1.2.3-0"),
    ("1.2.3-9_999_999_999_999_999_999", "1.2.3-9999999999999999999"),
    ("1.2.3-9_999_999_999_999_999_999", "1.2.3-10000000000000000000"),
    # more parts on one side
    ("1.2.3-beta", "1.2.3"), ("1.2.3", "1.2.3-beta"), ("1.2.3+build", "1.2.3"), ("1.2.3", "1.2.3+build"),
    ("1.2", "1.2.3-beta"), ("1.2-beta", "1.2.3"), ("1.2+build", "1.2.3"), ("1-beta", "1.0.0-beta"),
    ("1.2.3-beta", "1.2"), ("1.2.3+build", "1.2"), ("1.2.3", "1.2"),
]

# digit-count limit of Python's int() (sys.get_int_max_str_digits(), 4300 by default)
SEMVER_LONG = [
    (Rep("1.", "9", 4300), Rep("1.", "9", 4300)),
    (Rep("1.", "9", 4300), Rep("1.", "9", 4299)),
    (Rep("1.", "9", 4299, "8"), Rep("1.", "9", 4300)),
    (Rep("1.", "9", 4301), Rep("1.", "9", 4300)),
    (Rep("1.", "9", 4300), Rep("1.", "9", 4301)),
    (Rep("1.2.3-", "9", 4301), "1.2.3-5"),
    ("1.2.3-5", Rep("1.2.3-", "9", 4301)),
    ("1.2.3-5", Rep("1.2.3-", "0", 4300, "5")),
    ("1.2.3-5", Rep("1.2.3-", "0", 4299, "5")),
    (Rep("1.2.3-", "0", 4300, "5"), "1.2.3-5"),
    (Rep("1.2.3-", "0", 4299, "5"), "1.2.3-5"),
    (Rep("1.2.3-", "1_", 4299, "1"), Rep("1.2.3-", "1", 4300)),
    (Rep("1.2.3-", "1_", 4300, "1"), Rep("1.2.3-", "1", 4300)),
    (Rep("1.2.3-\t", "1", 4300, "\t"), Rep("1.2.3-", "1", 4300)),
    (Rep("1.2.3--", "1", 4300), Rep("1.2.3-", "1", 4300)),
    (Rep("1.2.3--", "1", 4301), Rep("1.2.3-", "1", 4300)),
    ("2.0", Rep("1.", "9", 5000)),          # decided on the first part: the long one is never parsed
    (Rep("1.", "9", 5000), "2.0"),
    (Rep("1.2.3-beta", ".1", 3000), Rep("1.2.3-beta", ".1", 3000)),
    (Rep("1.2.3-", "a", 2000), Rep("1.2.3-", "a", 2001)),
    (Rep("1.", "1", 1000, "1"), Rep("1.", "1", 1000, "2")),
    (Rep("1.", "0", 1000, "12"), "1.12"),
]


def random_version() -> str:
    def num():
        r = rng.random()
        if r < 0.6:
            return str(rng.randint(0, 12))
        if r < 0.75:
            return "0" + str(rng.randint(0, 9))
        if r < 0.9:
            return str(rng.randint(0, 10 ** rng.randint(1, 30)))
        return rng.choice(["", "x", "1a", "-"])
    nparts = rng.choice([1, 2, 3, 3, 3, 4])
    s = ".".join(num() for _ in range(nparts))
    r = rng.random()
    if r < 0.35:
        alphabet = "0123456789abcz.-+_"
        s += "-" + "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8)))
    elif r < 0.55:
        alphabet = "0123456789abcz.-+_"
        s += "+" + "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8)))
    elif r < 0.6:
        s = " " + s if rng.random() < 0.5 else s + " "
    return s


def mutate(v: str) -> str:
    if not v:
        return random_version()
    i = rng.randrange(len(v))
    op = rng.random()
    if op < 0.4 and v[i].isdigit():
        return v[:i] + str(rng.randint(0, 9)) + v[i + 1:]
    if op < 0.6:
        return v[:i]
    if op < 0.8:
        return v + rng.choice(["", ".1", "-1", "+1", "-beta", "0", "a"])
    return random_version()


def gen_semver_pairs():
    pairs = list(SEMVER_SPECIAL) + list(SEMVER_LONG)
    for _ in range(250):
        a = random_version()
        pairs.append((a, mutate(a)))
        pairs.append((mutate(a), a))
    for _ in range(60):
        pairs.append((random_version(), random_version()))
    rows, seen = [], set()
    for t, u in pairs:
        key = (val(t), val(u))
        if key in seen:
            continue
        seen.add(key)
        rows.append((t, u, ref_semver(val(t), val(u))))
    return rows


def gen_semver_matrix():
    return "".join(ref_semver(t, u) for t in SEMVER_POOL for u in SEMVER_POOL)


# ---------------------------------------------------------------------------------------------
# Leaf conditions

# Kinds: ("missing",) ("bool", b) ("int", i) ("double", d) ("string", s) ("unsupported", python_value)
CONDITION_POOL = [
    ("missing", None), ("bool", True), ("bool", False),
    ("int", 0), ("int", 1), ("int", -1), ("int", 5), ("int", 2 ** 53), ("int", -(2 ** 53)),
    ("int", 2 ** 53 + 1), ("int", -(2 ** 53) - 1), ("int", 2 ** 63 - 1), ("int", -(2 ** 63)),
    ("double", 0.0), ("double", -0.0), ("double", 1.0), ("double", 5.0), ("double", 5.5), ("double", -5.5),
    ("double", 9007199254740992.0), ("double", -9007199254740992.0), ("double", 9007199254740994.0),
    ("double", 1e300), ("double", -1e300), ("double", 4.9e-324),
    ("double", float("nan")), ("double", float("inf")), ("double", float("-inf")),
    ("string", ""), ("string", "abc"), ("string", "5"), ("string", "true"), ("string", "1.2.3"),
    ("string", "1.2.3-beta"), ("string", "1.2"), ("string", "\u00fc"), ("string", "a b"),
    ("unsupported", [1]), ("unsupported", {"a": 1}), ("unsupported", []),
]

USER_POOL = [
    ("absent", ABSENT), ("null", None), ("bool", True), ("bool", False),
    ("int", 0), ("int", 1), ("int", -1), ("int", 5), ("int", 6), ("int", 2 ** 53), ("int", -(2 ** 53)),
    ("int", 2 ** 53 + 1), ("int", -(2 ** 53) - 1), ("int", 2 ** 63 - 1), ("int", -(2 ** 63)),
    ("double", 0.0), ("double", -0.0), ("double", 1.0), ("double", 5.0), ("double", 5.5), ("double", 4.999999),
    ("double", -5.5), ("double", 9007199254740992.0), ("double", 9007199254740994.0),
    ("double", -9007199254740994.0), ("double", 1e300), ("double", 4.9e-324),
    ("double", float("nan")), ("double", float("inf")), ("double", float("-inf")),
    ("string", ""), ("string", "abc"), ("string", "xabcx"), ("string", "ab"), ("string", "5"),
    ("string", "true"), ("string", "True"), ("string", "1.2.3"), ("string", "1.2.4"), ("string", "1.2.3-beta"),
    ("string", "1.2"), ("string", "2"), ("string", "1.2.3.4"), ("string", "\u00fc\u00fc"), ("string", "a b c"),
]

MATCH_NAMES = [None, "exact", "exists", "substring", "gt", "ge", "lt", "le",
               "semver_eq", "semver_gt", "semver_ge", "semver_lt", "semver_le", "regex", ""]


def gen_leaf_matrix():
    rows = []
    for m in MATCH_NAMES:
        chars = "".join(ref_leaf(m, c[1], u[1]) for c in CONDITION_POOL for u in USER_POOL)
        rows.append((m, chars))
    return rows


def swift_condition(c) -> str:
    kind, v = c
    if kind == "missing":
        return ".missing"
    if kind == "unsupported":
        return ".unsupported"
    if kind == "bool":
        return ".bool(%s)" % ("true" if v else "false")
    if kind == "string":
        return ".string(configBytes(%s))" % swift_str(v)
    return ".%s(%s)" % (kind, swift_number(v))


def swift_user(u) -> str:
    kind, v = u
    if kind in ("absent", "null"):
        return "." + kind
    if kind == "bool":
        return ".bool(%s)" % ("true" if v else "false")
    if kind == "string":
        return ".string(%s)" % swift_str(v)
    return ".%s(%s)" % (kind, swift_number(v))


# ---------------------------------------------------------------------------------------------


def main():
    out = []
    w = out.append
    w("// GENERATED by Tests/ExperimentCoreTests/generate_matcher_vectors.py from the reference SDK")
    w(f"// optimizely-sdk {optimizely.version.__version__}, Python {sys.version.split()[0]}"
      f" (int max str digits {sys.get_int_max_str_digits()}). Do not edit by hand.")
    w("")
    w("import ExperimentCore")
    w("")

    rows = gen_murmur()
    w("/// (text, seed, pymmh3.hash(text, seed) & 0xFFFFFFFF)")
    w("let murmurVectors: [MurmurVector] = [")
    for s, seed, h in rows:
        w(f"    MurmurVector({swift_str(s)}, seed: 0x{seed:08X}, hash: 0x{h:08X}),")
    w("]")
    w("")

    rows = gen_bucketing_keys()
    w("/// (bucketing id, parent id, hash of BUCKETING_ID_TEMPLATE, Bucketer._generate_bucket_value)")
    w("let bucketingKeyVectors: [BucketingKeyVector] = [")
    for uid, pid, h, b in rows:
        w(f"    BucketingKeyVector({swift_str(uid)}, {swift_str(pid)}, hash: 0x{h:08X}, bucket: {b}),")
    w("]")
    w("")

    rows = gen_bucket_hashes()
    w("/// (unsigned hash, Bucketer._generate_bucket_value with that hash)")
    w("let bucketValueVectors: [BucketValueVector] = [")
    for h, b in rows:
        w(f"    BucketValueVector(hash: 0x{h:08X}, bucket: {b}),")
    w("]")
    w("")

    w("/// Versions compared pairwise in `semverMatrix`.")
    w("let semverPool: [String] = [")
    for s in SEMVER_POOL:
        w(f"    {swift_str(s)},")
    w("]")
    w("")
    w("/// compare_user_version_with_target_version(target: semverPool[i], user: semverPool[j]) at")
    w("/// i * semverPool.count + j: '<' -1, '=' 0, '>' 1, 'N' None, 'E' raises.")
    matrix = gen_semver_matrix()
    w("let semverMatrix: String = [")
    for i in range(0, len(matrix), 100):
        w(f'    "{matrix[i:i + 100]}",')
    w("].joined()")
    w("")

    rows = gen_semver_pairs()
    w("/// (target, user, result) with the result coded as in `semverMatrix`.")
    w("let semverVectors: [SemverVector] = [")
    for t, u, r in rows:
        w(f"    SemverVector({swift_str(t)}, {swift_str(u)}, \"{r}\"),")
    w("]")
    w("")

    w("/// Condition values of `leafMatrix`.")
    w("let leafConditionPool: [ConditionValue] = [")
    for c in CONDITION_POOL:
        w(f"    {swift_condition(c)},")
    w("]")
    w("")
    w("/// User attribute values of `leafMatrix` (.absent: the attribute is not given).")
    w("let leafUserPool: [UserValue] = [")
    for u in USER_POOL:
        w(f"    {swift_user(u)},")
    w("]")
    w("")
    w("/// CustomAttributeConditionEvaluator.evaluate for each match name (nil: \"match\" absent) over")
    w("/// leafConditionPool[i] x leafUserPool[j] at i * leafUserPool.count + j: 'T', 'F', 'N' None, 'E' raises.")
    w("let leafMatrix: [LeafMatrixRow] = [")
    for m, chars in gen_leaf_matrix():
        name = "nil" if m is None else swift_str(m)
        w(f"    LeafMatrixRow(match: {name}, results: [")
        for i in range(0, len(chars), 100):
            w(f'        "{chars[i:i + 100]}",')
        w("    ].joined()),")
    w("]")
    w("")

    with open(OUT, "w", encoding="utf-8") as f:
        f.write("\n".join(out))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
