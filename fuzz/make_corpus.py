#!/usr/bin/env python3
"""Writes the committed seed corpus of the fuzz harnesses: fuzz/corpus/<harness>/.

    python3 fuzz/make_corpus.py          # from the repository root (or anywhere: paths are resolved)

Deterministic: running it again rewrites the same files (datafiles from
bindings/python/tests/datafile_generator.py are driven by fixed seeds). It only (re)writes the files it
names; anything else in fuzz/corpus/ is left alone.

Seeds per harness:
  fuzz_datafile  the repository's datafiles, ~10 small generated datafiles, a datafile with holdouts,
                 and hand-made edge cases (truncated, trailing garbage, nesting at and past the limit,
                 invalid UTF-8, huge numbers, duplicate keys, single quotes, NaN, empty, null, BOM, ...)
  fuzz_options   option objects, valid and not
  fuzz_inputs    control byte + NUL-separated fields (see fuzz_inputs.c for the layout)
"""

import copy
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "fuzz", "corpus")
sys.path.insert(0, os.path.join(ROOT, "bindings", "python", "tests"))

import datafile_generator  # noqa: E402  (the differential suite's generator of valid v4 datafiles)

MAX_DEPTH = 64  # EXP_MAX_JSON_DEPTH


def write(harness, name, data):
    if isinstance(data, str):
        data = data.encode("utf-8")
    directory = os.path.join(CORPUS, harness)
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, name), "wb") as f:
        f.write(data)


def read(path):
    with open(os.path.join(ROOT, path), "rb") as f:
        return f.read()


def compact(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def nested(depth, inner="1"):
    return "[" * depth + inner + "]" * depth


# Knobs that keep generated datafiles small (a few KB) while still touching most features.
SMALL_KNOBS = dict(
    n_attributes=(1, 3), n_undeclared_condition_attributes=(0, 1), n_audiences=(1, 3), n_typed_audiences=(0, 2),
    n_events=(1, 2), n_ab_experiments=(1, 2), n_groups=(0, 1), n_group_experiments=(2, 2), n_flags=(1, 3),
    n_flag_experiments=(0, 1), n_delivery_rules=(0, 2), n_variables=(0, 3), n_variations=(1, 3),
)


def datafile_seeds():
    h = "fuzz_datafile"
    demo = read("examples/datafiles/demo.json")
    write(h, "demo.json", demo)
    write(h, "basic_datafile.json", read("bindings/python/tests/data/basic_datafile.json"))
    write(h, "bench_ab_rollout.json", read("benchmarks/data/bench_ab_rollout.json"))

    for seed in range(10):
        df = datafile_generator.generate_datafile(1000 + seed, **SMALL_KNOBS)
        write(h, "gen_%02d.json" % seed, compact(df))

    base = json.loads(demo)

    # Holdouts (global and local) are not produced by the generator.
    holdout = copy.deepcopy(base)
    holdout["holdouts"] = [{
        "id": "9001", "key": "global_holdout", "status": "Running", "audienceIds": [], "audienceConditions": [],
        "variations": [{"id": "9101", "key": "ho_off", "featureEnabled": False, "variables": []}],
        "trafficAllocation": [{"entityId": "9101", "endOfRange": 500}], "excludeTargetedDeliveries": True,
    }]
    holdout["localHoldouts"] = [{
        "id": "9002", "key": "local_holdout", "status": "Running", "audienceIds": ["2001"],
        "variations": [{"id": "9102", "key": "lho_off", "featureEnabled": False, "variables": []}],
        "trafficAllocation": [{"entityId": "9102", "endOfRange": 10000}], "includedRules": ["3001", "5201"],
    }]
    write(h, "holdouts.json", compact(holdout))

    # Smallest accepted shapes.
    minimal = {"version": "4", "projectId": "1", "accountId": "2", "revision": "1", "experiments": [],
               "featureFlags": [], "rollouts": [], "events": [], "audiences": [], "attributes": [], "groups": []}
    minimal_text = compact(minimal)
    write(h, "minimal_v4.json", minimal_text)
    write(h, "minimal_version_only.json", '{"version":"4"}')

    demo_text = demo.decode("utf-8")
    edge = {
        "empty": b"",
        "null": b"null",
        "ws_only": b" \n\t ",
        "array": b"[]",
        "object_empty": b"{}",
        "number": b"4",
        "string": b'"4"',
        "truncated_half": demo[: len(demo) // 2],
        "truncated_one_short": demo.rstrip()[:-1],
        "trailing_garbage": demo + b"garbage",
        "trailing_second_value": demo + b"{}",
        "trailing_nul": demo + b"\x00",
        "leading_bom": b"\xef\xbb\xbf" + demo,
        "version_3": compact(dict(base, version="3")),
        "version_int": compact(dict(base, version=4)),
        "version_missing": compact({k: v for k, v in base.items() if k != "version"}),
        "single_quotes": b"{'version': '4', 'projectId': '1'}",
        "nan": b'{"version":"4","revision":NaN}',
        "infinity": b'{"version":"4","revision":Infinity,"x":-Infinity}',
        "comments": b'{"version":"4" /* c */, "projectId":"1"} // x',
        "trailing_comma": b'{"version":"4",}',
        "duplicate_keys": '{"version":"3","projectId":"9",%s,"featureFlags":[{"x":1}]}' % minimal_text[1:-1],
        "duplicate_keys_last_valid": '{"featureFlags":[{"x":1}],"version":"3","projectId":"9",%s}' % minimal_text[1:-1],
        "huge_numbers": demo_text.replace('"endOfRange": 5000', '"endOfRange": 1e400', 1)
                                 .replace('"endOfRange": 10000', '"endOfRange": 99999999999999999999999', 1),
        "negative_range": demo_text.replace('"endOfRange": 5000', '"endOfRange": -5000', 1),
        "float_range": demo_text.replace('"endOfRange": 5000', '"endOfRange": 5000.5', 1),
        "depth_64": '{%s,"x":%s}' % (minimal_text[1:-1], nested(MAX_DEPTH - 1)),
        "depth_65": '{%s,"x":%s}' % (minimal_text[1:-1], nested(MAX_DEPTH)),
        "depth_1000": nested(1000),
        "invalid_utf8_key": b'{"version":"4","revision":"\xff\xfe"}',
        "invalid_utf8_overlong": b'{"version":"4","revision":"\xc0\xaf"}',
        "cesu_surrogate": b'{"version":"4","revision":"\xed\xa0\x80"}',
        "lone_surrogate_escape": demo_text.replace('"revision": "42"', '"revision": "\\ud800"', 1),
        "nul_escape": demo_text.replace('"revision": "42"', '"revision": "4\\u00002"', 1),
        "control_char": b'{"version":"4","revision":"a\x01b"}',
        "unicode_keys": demo_text.replace("checkout_redesign", "\u00e7heckout_\u65e5\u672c\U0001F600"),
        "conditions_not_json": demo_text.replace('"conditions": "[\\"and\\"', '"conditions": "[\\"and\\" garbage', 1),
        "conditions_deep": demo_text.replace(
            '"conditions": "[\\"or\\", {\\"match\\"',
            '"conditions": "%s[\\"or\\", {\\"match\\"' % ("[\\\"and\\\", " * 70), 1),
        "audience_empty_list": demo_text.replace('"audienceConditions": ["or", "2001"', '"audienceConditions": ["or", []', 1),
        "unknown_rollout": demo_text.replace('"rolloutId": "5002"', '"rolloutId": "99"', 1),
        "types_swapped": demo_text.replace('"featureEnabled": true', '"featureEnabled": "true"', 1),
        "variable_bad_json": demo_text.replace('"type": "integer"', '"type": "json"', 1),
    }
    for name, data in edge.items():
        write(h, "edge_%s.json" % name, data)


def options_seeds():
    h = "fuzz_options"
    seeds = {
        "empty": "",
        "empty_object": "{}",
        "sdk_key": '{"sdk_key": "DemoShopProduction1234"}',
        "all": '{"sdk_key": "k", "default_decide_options": ["DISABLE_DECISION_EVENT", "ENABLED_FLAGS_ONLY", '
               '"IGNORE_USER_PROFILE_SERVICE", "INCLUDE_REASONS", "EXCLUDE_VARIABLES"], "user_store_capacity": 1}',
        "reasons": '{"default_decide_options": ["INCLUDE_REASONS"]}',
        "capacity_big": '{"user_store_capacity": 9223372036854775807}',
        "capacity_zero": '{"user_store_capacity": 0}',
        "capacity_negative": '{"user_store_capacity": -1}',
        "capacity_float": '{"user_store_capacity": 1.5}',
        "capacity_huge": '{"user_store_capacity": 1e400}',
        "capacity_string": '{"user_store_capacity": "10"}',
        "log_level_debug": '{"sdk_key": "DemoShopProduction1234", "log_level": "debug"}',
        "log_level_info_long_key": '{"sdk_key": "a-rather-long-secret-sdk-key-0123456789", "log_level": "info"}',
        "log_level_bad": '{"log_level": "verbose"}',
        "log_level_number": '{"log_level": 4}',
        "sdk_key_twice": '{"sdk_key": "FirstSecretKey000111", "sdk_key": "SecondSecretKey000222", "log_level": "info"}',
        "unknown_key": '{"polling_interval_s": 5}',
        "unknown_option_name": '{"default_decide_options": ["NOPE"]}',
        "options_not_array": '{"default_decide_options": "INCLUDE_REASONS"}',
        "duplicate_keys": '{"sdk_key": "a", "sdk_key": "b"}',
        "null": "null",
        "array": "[]",
        "sdk_key_number": '{"sdk_key": 5}',
        "sdk_key_null": '{"sdk_key": null}',
        "trailing_garbage": '{"sdk_key": "a"} x',
        "single_quotes": "{'sdk_key': 'a'}",
        "nan": '{"user_store_capacity": NaN}',
        "truncated": '{"sdk_key": "a',
        "depth_64": '{"sdk_key": %s}' % nested(MAX_DEPTH - 1),
        "depth_65": '{"sdk_key": %s}' % nested(MAX_DEPTH),
        "escapes": '{"sdk_key": "\\u00e9\\ud83d\\ude00\\n\\"\\\\"}',
        "lone_surrogate": '{"sdk_key": "\\udc00"}',
        "nul_escape": '{"sdk_key": "a\\u0000b"}',
    }
    for name, text in seeds.items():
        write(h, name + ".json", text)
    write(h, "invalid_utf8.json", b'{"sdk_key": "\xff"}')
    write(h, "overlong_utf8.json", b'{"sdk_key": "\xc0\x80"}')
    write(h, "bom.json", b'\xef\xbb\xbf{}')


# fuzz_inputs layout: control byte, then NUL-separated fields:
#   user, flag, attributes JSON, event, tags JSON, property key, property value JSON, decide option names
#   JSON, flag keys JSON, experiment key/id, variation key, rule key, "<log level>[,<dispatcher result>]"
def inputs_record(control, *fields):
    return bytes([control]) + b"\x00".join(f.encode("utf-8") if isinstance(f, str) else f for f in fields)


def inputs_seeds():
    h = "fuzz_inputs"
    valid = ["user-1", "checkout_redesign", '{"country": "NL", "age": 31, "cart_value": 120.5, "beta_tester": true, '
             '"app_version": "2.4.1", "plan": null}', "purchase", '{"revenue": 4200, "value": "12.5", "category": "shoes"}',
             "plan", '"premium"', '["INCLUDE_REASONS", "EXCLUDE_VARIABLES"]', '["free_shipping", "dark_mode", "nope"]',
             "checkout_redesign_ab", "one_page_checkout", "checkout_redesign_employees"]
    seeds = {
        "defaults": bytes([0]),
        "defaults_reasons": bytes([0x08]),
        "defaults_null_json": bytes([0x40]),
        "all_valid": inputs_record(0x08, *valid),
        "all_valid_typed": inputs_record(0x88, *valid),
        "trigger_by_id": inputs_record(0x00, "user-1", "search_ranking", "{}", "add_to_cart", "{}", "country", '"DE"',
                                       "[]", "[]", "3002", "semantic", "search_ranking_semantic"),
        "forced_whitelisted": inputs_record(0x08, "qa-alice", "checkout_redesign", "{}", "purchase", "null", "email",
                                            '"a@b.c"', '["IGNORE_USER_PROFILE_SERVICE"]', "null", "checkout_redesign_ab",
                                            "control"),
        "enabled_only": inputs_record(0x02, "user-2", "dark_mode", '{"beta_tester": true, "app_version": "3.0.0-beta"}'),
        "bad_option_bit": inputs_record(0x20, *valid),
        "invalid_utf8_user": inputs_record(0x08, b"\xff\xfeuser", *valid[1:]),
        "invalid_utf8_flag": inputs_record(0x08, "user-1", b"checkout\xc3", *valid[2:]),
        "overlong_user": inputs_record(0x00, b"\xc0\xaf"),
        "surrogate_user": inputs_record(0x00, b"\xed\xa0\x80"),
        "above_max_user": inputs_record(0x00, b"\xf4\x90\x80\x80"),
        "invalid_utf8_event": inputs_record(0x00, "user-1", "checkout_redesign", "{}", b"purch\x80ase"),
        "invalid_utf8_in_json": inputs_record(0x00, "user-1", "checkout_redesign", b'{"country": "\xff"}', "purchase",
                                              b'{"k\xfe": 1}', "k", b'"\xc3"'),
        "invalid_utf8_property_key": inputs_record(0x80, "user-1", "checkout_redesign", "{}", "purchase", "{}",
                                                   b"pl\xe2\x82an", '"x"'),
        "long_user": inputs_record(0x00, "u" * 1025),
        "long_flag_1024": inputs_record(0x00, "user-1", "f" * 1024),
        "attrs_nested": inputs_record(0x00, "user-1", "checkout_redesign", '{"country": {"a": 1}, "age": [1]}'),
        "attrs_deep": inputs_record(0x00, "user-1", "checkout_redesign", '{"a": %s}' % nested(MAX_DEPTH)),
        "attrs_depth_64": inputs_record(0x00, "user-1", "checkout_redesign", '{"a": %s}' % nested(MAX_DEPTH - 1)),
        "attrs_huge_numbers": inputs_record(0x08, "user-1", "checkout_redesign",
                                            '{"age": 1e400, "cart_value": -1e400, "x": 99999999999999999999999, '
                                            '"y": -9223372036854775809, "z": 9223372036854775807, "w": 1e-400}'),
        "attrs_dup_keys": inputs_record(0x08, "user-1", "free_shipping", '{"country": "NL", "country": "US"}'),
        "attrs_single_quotes": inputs_record(0x00, "user-1", "checkout_redesign", "{'country': 'NL'}"),
        "attrs_nan": inputs_record(0x00, "user-1", "checkout_redesign", '{"age": NaN, "x": Infinity}'),
        "attrs_trailing": inputs_record(0x00, "user-1", "checkout_redesign", '{"age": 3} {}'),
        "attrs_truncated": inputs_record(0x00, "user-1", "checkout_redesign", '{"age": 3'),
        "attrs_not_object": inputs_record(0x00, "user-1", "checkout_redesign", '["country", "NL"]'),
        "attrs_escapes": inputs_record(0x08, "user-1", "free_shipping",
                                       '{"country": "N\\u004c", "\\u00e9": "\\ud83d\\ude00", "nul": "a\\u0000b", '
                                       '"lone": "\\udc00"}'),
        "attrs_empty": inputs_record(0x00, "user-1", "checkout_redesign", ""),
        "bucketing_id": inputs_record(0x08, "user-1", "checkout_redesign", '{"$opt_bucketing_id": "other", "country": "DE"}'),
        "tags_types": inputs_record(0x00, "user-1", "checkout_redesign", "{}", "purchase",
                                    '{"revenue": 4200.5, "value": "abc", "n": null, "o": {"x": [1, 2]}, "b": true}'),
        "tags_revenue_huge": inputs_record(0x00, "user-1", "checkout_redesign", "{}", "purchase",
                                           '{"revenue": 99999999999999999999, "value": "1e400"}'),
        "tags_not_object": inputs_record(0x00, "user-1", "checkout_redesign", "{}", "purchase", "[1, 2]"),
        "tags_string": inputs_record(0x00, "user-1", "checkout_redesign", "{}", "purchase", '"revenue"'),
        "tags_deep": inputs_record(0x00, "user-1", "checkout_redesign", "{}", "purchase", '{"a": %s}' % nested(MAX_DEPTH)),
        "unknown_event": inputs_record(0x00, "user-1", "checkout_redesign", "{}", "nope", "{}"),
        "property_values": inputs_record(0x00, "user-1", "checkout_redesign", "{}", "purchase", "{}", "age", "31.5e2"),
        "property_object": inputs_record(0x00, "user-1", "checkout_redesign", "{}", "purchase", "{}", "age", '{"a": 1}'),
        "property_null": inputs_record(0x00, "user-1", "checkout_redesign", "{}", "purchase", "{}", "plan", "null"),
        "property_bool_ws": inputs_record(0x00, "user-1", "checkout_redesign", "{}", "purchase", "{}", "beta_tester", " true "),
        "property_bad": inputs_record(0x00, "user-1", "checkout_redesign", "{}", "purchase", "{}", "beta_tester", "True"),
        "options_all": inputs_record(0x00, "user-1", "checkout_redesign", "{}", "purchase", "{}", "plan", '"x"',
                                     '["DISABLE_DECISION_EVENT", "ENABLED_FLAGS_ONLY", "IGNORE_USER_PROFILE_SERVICE", '
                                     '"INCLUDE_REASONS", "EXCLUDE_VARIABLES", "INCLUDE_REASONS"]'),
        "options_unknown": inputs_record(0x00, "user-1", "checkout_redesign", "{}", "purchase", "{}", "plan", '"x"',
                                         '["include_reasons"]'),
        "options_not_strings": inputs_record(0x00, "user-1", "checkout_redesign", "{}", "purchase", "{}", "plan", '"x"',
                                             '[1, null, {}]'),
        "keys_mixed": inputs_record(0x08, "user-1", "checkout_redesign", "{}", "purchase", "{}", "plan", '"x"', "[]",
                                    ),
        "keys_not_strings": inputs_record(0x00, "user-1", "checkout_redesign", "{}", "purchase", "{}", "plan", '"x"',
                                          "[]", '[1, "dark_mode", null, ["x"]]'),
        "keys_dupes": inputs_record(0x0A, "user-1", "checkout_redesign", "{}", "purchase", "{}", "plan", '"x"',
                                    "[]", '["dark_mode", "dark_mode", "", "\\u0000"]'),
        "keys_object": inputs_record(0x00, "user-1", "checkout_redesign", "{}", "purchase", "{}", "plan", '"x"',
                                     "[]", '{"dark_mode": true}'),
        "forced_unknown_variation": inputs_record(0x00, "user-1", "checkout_redesign", "{}", "purchase", "{}", "plan",
                                                  '"x"', "[]", "[]", "checkout_redesign_ab", "nope", "nope_rule"),
        "forced_decision_rule": inputs_record(0x08, "user-1", "free_shipping", "{}", "purchase", "{}", "plan", '"x"',
                                              "[]", "[]", "checkout_redesign_ab", "on", "free_shipping_nl_de"),
        "empty_strings": inputs_record(0x00, "", "", "", "", "", "", "", "", "", "", "", ""),
        "log_debug_dispatch_fails": inputs_record(0x08, *valid, "4,1"),
        "log_bad_level": inputs_record(0x00, *valid, "7"),
        "log_error_level_no_dispatch": inputs_record(0x00, *valid, "1,-1"),
    }
    for name, data in seeds.items():
        write(h, name, data)


def main():
    datafile_seeds()
    options_seeds()
    inputs_seeds()
    total = sum(len(files) for _, _, files in os.walk(CORPUS))
    print("wrote the seed corpus under %s (%d files)" % (os.path.relpath(CORPUS, os.getcwd()), total))


if __name__ == "__main__":
    main()
