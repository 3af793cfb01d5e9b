"""The value differential fuzzer's fixed-seed slice: over datafiles whose variable values, variable and flag
duplicates and header fields come from valuefuzz.py's grammars, the drop-in experiment.optimizely must answer
like optimizely-sdk 5.7.0 (return values, notifications, events, get_optimizely_config()).

    EXPERIMENT_LIBRARY=$PWD/.build/release/libexperiment.so PYTHONPATH=$PWD/bindings/python \\
        python3 -m pytest -q bindings/python/tests/test_valuefuzz.py

The slice is valuefuzz.DEFAULT_SEEDS (about 15 s); VALUEFUZZ_REPORT=out.json also writes the full report.
`python3 bindings/python/tests/valuefuzz.py --replay SEED` prints every difference of one seed.
"""

from __future__ import annotations

import json
import os
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import apifuzz  # noqa: E402
import valuefuzz  # noqa: E402

SLICE = range(*valuefuzz.DEFAULT_SEEDS)
MIN_COMPARISONS = 12_000


@pytest.fixture(scope="module")
def slice_run() -> valuefuzz.Tally:
    if apifuzz.dropin is None:
        pytest.fail("cannot import experiment.optimizely (EXPERIMENT_LIBRARY=%r): %r"
                    % (os.environ.get("EXPERIMENT_LIBRARY"), apifuzz.IMPORT_ERROR))
    started = time.time()
    tally = valuefuzz.run(SLICE, valuefuzz.DEFAULT_USERS)
    seconds = time.time() - started
    report = os.environ.get("VALUEFUZZ_REPORT")
    if report:
        with open(report, "w") as fh:
            json.dump({"summary": valuefuzz.summary_line(tally, SLICE, seconds), **tally.to_json()}, fh, indent=1,
                      default=repr)
    print("\n" + valuefuzz.summary_line(tally, SLICE, seconds))
    return tally


def test_the_slice_compares_every_call(slice_run: valuefuzz.Tally) -> None:
    tally = slice_run
    assert tally.total_comparisons >= MIN_COMPARISONS, tally.comparisons
    for what in ("get_feature_variable result", "get_feature_variable notifications",
                 "get_all_feature_variables result", "decide result", "decide_all result", "decide events",
                 "is_feature_enabled result", "get_enabled_features result", "activate result", "track events",
                 "get_optimizely_config contents"):
        assert tally.comparisons[what] > 0, (what, tally.comparisons)
    assert tally.cases["mutated datafile, reference accepts"] >= len(SLICE) * 0.9, tally.cases


def test_the_grammars_reach_their_axes() -> None:
    """Each mutation kind is drawn in the slice (the fuzzer cannot silently stop making one)."""
    seen = set()
    for seed in SLICE:
        _base, _df, done = valuefuzz.case_datafile(seed)
        for what in done:
            seen.add(what.split(" ", 1)[0])
    for first_word in ("defaultValue", "usage", "type", "featureEnabled", "variable", "flag", "variation"):
        assert first_word in seen, (first_word, sorted(seen))
    assert any(name in seen for name in valuefuzz.HEADER_VALUES), sorted(seen)


def test_no_differences(slice_run: valuefuzz.Tally) -> None:
    tally = slice_run
    if tally.differences:
        pytest.fail(f"{tally.total_differences} differences from optimizely-sdk:\n" + apifuzz.format_report(tally))
