"""The API differential fuzzer's fixed-seed slice: the drop-in experiment.optimizely must answer like
optimizely-sdk 5.7.0 over mutated datafiles for random call sequences of its whole API (see apifuzz.py for
what is called and compared).

    EXPERIMENT_LIBRARY=$PWD/.build/release/libexperiment.so PYTHONPATH=$PWD/bindings/python \\
        python3 -m pytest -q bindings/python/tests/test_apifuzz.py

The slice is apifuzz.DEFAULT_SEEDS; APIFUZZ_REPORT=out.json also writes the full report. A failure lists every
difference signature with its count and its first example; `python3 bindings/python/tests/apifuzz.py
--replay SEED` prints every difference of one seed.
"""

from __future__ import annotations

import json
import os
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import apifuzz  # noqa: E402

SLICE = range(*apifuzz.DEFAULT_SEEDS)
MIN_COMPARISONS = 15_000


@pytest.fixture(scope="module")
def slice_run() -> apifuzz.Tally:
    if apifuzz.dropin is None:
        pytest.fail("cannot import experiment.optimizely (EXPERIMENT_LIBRARY=%r): %r"
                    % (os.environ.get("EXPERIMENT_LIBRARY"), apifuzz.IMPORT_ERROR))
    started = time.time()
    tally = apifuzz.run(SLICE, apifuzz.DEFAULT_USERS)
    seconds = time.time() - started
    report = os.environ.get("APIFUZZ_REPORT")
    if report:
        with open(report, "w") as fh:
            json.dump({"summary": apifuzz.summary_line(tally, SLICE, seconds), **tally.to_json()}, fh, indent=1,
                      ensure_ascii=False, default=repr)
    print("\n" + apifuzz.summary_line(tally, SLICE, seconds))
    return tally


def test_the_slice_compares_every_call(slice_run: apifuzz.Tally) -> None:
    tally = slice_run
    assert tally.total_comparisons >= MIN_COMPARISONS, tally.comparisons
    for op in ("is_feature_enabled", "get_enabled_features", "get_feature_variable", "get_all_feature_variables",
               "set_forced_variation", "get_forced_variation", "set_forced_decision", "get_forced_decision",
               "remove_forced_decision", "decide", "decide_for_keys", "decide_all", "set_qualified_segments",
               "get_variation", "activate", "track"):
        assert tally.comparisons["%s result" % op] > 0, (op, tally.comparisons)
    for what in ("decide notifications", "decide events", "activate notifications", "track notifications",
                 "decide profile saves", "get_optimizely_config contents"):
        assert tally.comparisons[what] > 0, (what, tally.comparisons)
    assert tally.cases["mutated datafile, reference accepts"] + tally.cases[
        "mutated datafile +segments, reference accepts"] >= 20, tally.cases


def test_no_difference_from_the_reference(slice_run: apifuzz.Tally) -> None:
    tally = slice_run
    if tally.differences:
        pytest.fail("%d differences from optimizely-sdk 5.7.0 in %d comparisons (seeds %d:%d), grouped by "
                    "signature, each with its first example:\n%s"
                    % (tally.total_differences, tally.total_comparisons, SLICE.start, SLICE.stop,
                       apifuzz.format_report(tally, limit=60, width=900)), pytrace=False)


def test_a_seed_names_one_case() -> None:
    """The same seed gives the same datafile text, users, profiles and call sequences."""
    for seed in (3, 17):
        a, b = apifuzz.Case(seed, 4, apifuzz.Tally()), apifuzz.Case(seed, 4, apifuzz.Tally())
        assert a.text == b.text and repr(a.users) == repr(b.users) and a.profiles == b.profiles
        import random
        first = apifuzz.draw_calls(a.universe, random.Random("apifuzz-ops-%d-0" % seed), 20)
        second = apifuzz.draw_calls(b.universe, random.Random("apifuzz-ops-%d-0" % seed), 20)
        assert repr(first) == repr(second)
