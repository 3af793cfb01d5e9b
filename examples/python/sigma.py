"""Sigma-style calls from Python: user properties, typed flag values, and a user's flags, experiments and
holdouts on the demo datafile.

    PYTHONPATH=bindings/python python3 examples/python/sigma.py [DATAFILE]

Without a DATAFILE it uses the demo datafile shipped in the package (experiment.demo_datafile()), so it runs
from any directory.
"""
import json
import sys

import experiment


def show_user(client, user_id, attributes=None):
    print(user_id)
    print("  flags:      ", json.dumps(client.user_flags(user_id, attributes)))
    print("  experiments:", repr(client.user_experiments(user_id, attributes)))
    print("  holdouts:   ", repr(client.user_holdouts(user_id, attributes)))
    # check_flag: a value, or None when the user has no value for the flag (not an error)
    print("  checkout_redesign enabled:", client.flag_bool(user_id, "checkout_redesign"))
    print("  checkout_redesign.steps:", client.flag_int(user_id, "checkout_redesign", "steps"))
    print("  search_ranking.ranking_config:",
          client.check_flag(user_id, "search_ranking", dict, "ranking_config", attributes))
    print("  dark_mode.contrast:", client.flag_double(user_id, "dark_mode", "contrast"))
    found = client.get_experiment(user_id, "checkout_redesign_ab", attributes)
    if found is None:
        print("  checkout_redesign_ab: not in it")
    else:
        print("  checkout_redesign_ab: %s (group %d), button_color=%s, show_trust_badges=%s"
              % (found.variation_key, found.group_index, found.param_string("button_color"),
                 found.param_bool("show_trust_badges")))
    print("  in q4_global_holdout:", client.get_holdout(user_id, "q4_global_holdout", attributes))


def main(datafile):
    with experiment.Client(datafile=datafile, bucket_by_profile_id=True,
                           default_decide_options=["DISABLE_DECISION_EVENT"]) as client:
        # Standard keys and custom.<name>; audiences see them under these names.
        client.set_user_properties("anon-1", {"profile_id": "profile-42", "email": "ann@demo-shop.example",
                                              "app_version": "3.1.0", "custom.isAuthorized": True})
        client.edit_user_properties("anon-1", {"geo_country": "NL", "custom.isAuthorized": None})
        print("properties of anon-1:", client.get_user_properties("anon-1"))
        premium = {"plan": "premium"}
        show_user(client, "anon-1", premium)
        held = next(u for u in ("user-%d" % i for i in range(1000)) if client.get_holdout(u, "q4_global_holdout"))
        show_user(client, held, premium)
        try:
            client.flag_int("anon-1", "checkout_redesign", "button_color")
        except experiment.TypeMismatchError as error:
            print("type mismatch:", error)
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1:
        with open(sys.argv[1]) as handle:
            text = handle.read()
    else:
        text = experiment.demo_datafile()
    sys.exit(main(text))
