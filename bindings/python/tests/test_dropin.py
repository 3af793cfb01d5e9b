"""experiment.optimizely is a drop-in for optimizely-sdk: one program (dropin_script.py), written for
optimizely-sdk, runs once with the reference's imports and once with experiment.optimizely's; everything
it prints (variations, features, variables, decisions with reasons, dispatched events with their params,
every notification type's arguments: DECISION, TRACK and ACTIVATE with their events, LOG_EVENT with url, verb,
headers and params, OPTIMIZELY_CONFIG_UPDATE; forced variations, the OptimizelyConfig) must be identical,
line for line, over twelve generated datafiles and 40 users each, once with a datafile and a dispatcher of
the script's own, once with an sdk_key only (the datafile from a local server) and the default dispatcher."""

from __future__ import annotations

import difflib
import json
import os
import subprocess
import sys
from typing import Any, Dict, List, Optional

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from datafile_generator import generate_datafile, generate_users  # noqa: E402
from test_datafile_lifecycle import Answer, new_key, server  # noqa: E402,F401  (server: a fixture)

from experiment import optimizely as dropin  # noqa: E402

SCRIPT = os.path.join(HERE, "dropin_script.py")
# Seed 40: an "fr" experiment whose everyone-else variation's key is also a variation key of another rule of
# the flag's rollout (the facade once named that other variation's id in the DECISION notification).
SEEDS = [int(s) for s in os.environ.get("DROPIN_SEEDS", "1,2,3,4,5,6,7,8,9,10,11,40").split(",")]
USERS = int(os.environ.get("DROPIN_USERS", "40"))
SDK_KEY_SEEDS = [int(s) for s in os.environ.get("DROPIN_SDK_KEY_SEEDS", "1,7,11").split(",")]
DEMO = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(HERE))), "examples", "datafiles", "demo.json")


def _run(implementation: str, datafile_path: str, users_path: str,
         extra_env: Optional[Dict[str, str]] = None) -> List[str]:
    env = dict(os.environ, DROPIN=implementation, **(extra_env or {}))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (os.path.dirname(HERE), env.get("PYTHONPATH")) if p)
    result = subprocess.run([sys.executable, SCRIPT, datafile_path, users_path], env=env, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, "%s run failed:\n%s" % (implementation, result.stderr[-4000:])
    return result.stdout.splitlines()


def _compare(tmp_path: Any, name: str, datafile_text: str, users: List[Any], server: Any = None) -> int:
    """Runs the script through both packages and fails on the first difference. With a datafile ``server``,
    the instances are made with an sdk_key only and fetch the datafile from it (and use the default event
    dispatcher); otherwise with the datafile and a dispatcher of the script's own."""
    datafile_path = tmp_path / ("%s.json" % name)
    datafile_path.write_text(datafile_text)
    users_path = tmp_path / ("%s-users.json" % name)
    users_path.write_text(json.dumps(users))
    extra_env: Dict[str, str] = {}
    if server is not None:
        key = new_key()
        server.serve(key, Answer(datafile_text.encode("utf-8")))
        extra_env = {"DROPIN_SDK_KEY": key, "DROPIN_URL_TEMPLATE": server.template(),
                     "EXPERIMENT_DATAFILE_URL_TEMPLATE": server.template()}
    reference = _run("reference", str(datafile_path), str(users_path), extra_env)
    ours = _run("experiment", str(datafile_path), str(users_path), extra_env)
    if reference != ours:
        diff = list(difflib.unified_diff(reference, ours, "optimizely-sdk", "experiment.optimizely", lineterm="", n=1))
        pytest.fail("%s: outputs differ (%d diff lines):\n%s" % (name, len(diff), "\n".join(diff[:80])))
    return len(reference)


@pytest.mark.parametrize("seed", SEEDS)
def test_same_output_as_optimizely_sdk(tmp_path: Any, seed: int) -> None:
    datafile = generate_datafile(seed)
    users = [[user_id, attributes] for user_id, attributes in generate_users(seed, datafile, USERS)]
    lines = _compare(tmp_path, "seed-%d" % seed, json.dumps(datafile), users)
    assert lines > USERS * 5  # the script really ran through the users


@pytest.mark.parametrize("seed", SDK_KEY_SEEDS)
def test_same_output_with_an_sdk_key_only_and_the_default_dispatcher(tmp_path: Any, server: Any, seed: int) -> None:
    """Optimizely(sdk_key=...) with no datafile: every call waits for the fetched datafile as the reference's
    does, then decides, tracks and reports from it (OptimizelyConfig included); the default event dispatcher's
    LOG_EVENT and ACTIVATE notifications carry the reference's LogEvents."""
    datafile = generate_datafile(seed)
    users = [[user_id, attributes] for user_id, attributes in generate_users(seed, datafile, USERS)]
    lines = _compare(tmp_path, "sdk-key-seed-%d" % seed, json.dumps(datafile), users, server)
    assert lines > USERS * 5


# Seeds 12 (and 44, 45, 60, 72 in longer runs): an "fr" experiment whose own variation shares its key with the
# everyone-else variation optimizely-sdk appends to it. A decision made without an impression (decide_all with
# DISABLE_DECISION_EVENT, here from a sticky profile) names its variation by key only, which names two
# variations: the DECISION notification's variation_id comes from the library, which reports the bucketed one.
def test_same_output_with_a_variation_key_shared_by_two_variations(tmp_path: Any) -> None:
    datafile = generate_datafile(12)
    users = [[user_id, attributes] for user_id, attributes in generate_users(12, datafile, USERS)]
    _compare(tmp_path, "seed-12", json.dumps(datafile), users)


def test_same_output_on_the_demo_datafile(tmp_path: Any) -> None:
    users = [["user-%d" % i, {"country": ["NL", "US", "DE"][i % 3], "age": 18 + i % 50, "plan": "premium"}]
             for i in range(USERS)]
    with open(DEMO) as f:
        _compare(tmp_path, "demo", f.read(), users)


def test_invalid_datafile_gives_the_reference_results() -> None:
    client = dropin.Optimizely(datafile="{not json")
    assert client.activate("exp", "user") is None
    assert client.is_feature_enabled("flag", "user") is False
    assert client.get_enabled_features("user") == []
    assert client.get_optimizely_config() is None
    user = client.create_user_context("user")
    assert user is not None and user.decide("flag").reasons == ["Optimizely SDK not configured properly yet."]
    assert user.decide_all() == {}
    client.close()


def test_factory_and_notification_center() -> None:
    with open(DEMO) as f:
        datafile = f.read()
    client = dropin.OptimizelyFactory.default_instance("demo", datafile=datafile)
    seen: List[Any] = []
    center = client.notification_center
    listener = center.add_notification_listener(dropin.NotificationTypes.DECISION, lambda *args: seen.append(args))
    assert listener == 1
    assert center.add_notification_listener("nonsense", print) == -1
    decision = client.create_user_context("u1", {"country": "NL"}).decide("free_shipping")  # type: ignore[union-attr]
    assert seen and seen[-1][0] == "flag" and seen[-1][3]["flag_key"] == "free_shipping"
    assert decision.flag_key == "free_shipping"
    assert center.remove_notification_listener(listener) and not center.remove_notification_listener(listener)
    config = client.get_optimizely_config()
    assert config is not None and config.get_datafile() == datafile and "free_shipping" in config.features_map
    client.close()
