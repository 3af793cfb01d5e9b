"""A first look at the Python binding: decisions, experiments, conversions and events on the demo datafile.

    PYTHONPATH=bindings/python python3 examples/python/quickstart.py [DATAFILE]

Without a DATAFILE it uses the demo datafile shipped in the package (experiment.demo_datafile()), so it runs
from any directory.

(or `pip install ./bindings/python` and run it with that Python).
"""
import json
import sys

import experiment


class PrintingDispatcher:
    """Receives every outgoing event batch instead of the network."""

    def __init__(self):
        self.count = 0

    def dispatch_event(self, event):
        self.count += 1
        visitor = event.params["visitors"][0]
        kind = visitor["snapshots"][0]["events"][0]["key"]
        print("  event -> %s %s (%s for %s)" % (event.http_verb, event.url, kind, visitor["visitor_id"]))


def main(datafile):
    dispatcher = PrintingDispatcher()
    with experiment.Client(datafile=datafile, event_dispatcher=dispatcher) as client:
        print("datafile revision", client.config["revision"], "flags:", ", ".join(client.config["flags"]))

        # A user context, as optimizely-sdk's: the id and attributes once, then decide / track for that user.
        for user_id, attributes in [("alice", {"country": "NL", "age": 31, "app_version": "2.4.0"}),
                                    ("bob", {"country": "US", "age": 17})]:
            user = client.create_user_context(user_id, attributes)
            print("\n%s %s" % (user_id, json.dumps(attributes)))
            for key, decision in user.decide_all().items():
                print("  %-20s enabled=%-5s variation=%-12s rule=%s variables=%s" % (
                    key, decision.enabled, decision.variation_key, decision.rule_key, json.dumps(decision.variables)))

        alice = client.create_user_context("alice", {"country": "NL"})
        decision = alice.decide("free_shipping", ["INCLUDE_REASONS"])
        print("\nwhy alice gets free_shipping=%s:" % decision.enabled)
        for reason in decision.reasons:
            print("  -", reason)

        # Forced decisions live in the context (a QA preview): other contexts of alice are not affected.
        flag = experiment.OptimizelyDecisionContext("checkout_redesign")
        alice.set_forced_decision(flag, experiment.OptimizelyForcedDecision("on"))
        print("\nalice, forced:", alice.decide("checkout_redesign").variation_key,
              "/ another context of alice:", client.create_user_context("alice", {"country": "NL"})
              .decide("checkout_redesign").variation_key)
        alice.track_event("purchase", {"revenue": 4200, "category": "shoes"})

        # The id-based calls are shortcuts for one call each.
        print("client.decide(alice, free_shipping):", client.decide("alice", "free_shipping", {"country": "NL"}).enabled)

        experiment_key = client.config["experiments"][0]
        print("\nget_variation(%s, alice) = %s" % (experiment_key, client.get_variation(experiment_key, "alice")))

        client.set_user_property("carol", "country", "DE")
        print("carol (country from her stored properties):",
              client.decide("carol", "free_shipping").variation_key)

        client.track("add_to_cart", "alice", {"country": "NL"})

        # A typo in a flag key does not crash the request: as the reference SDK, decide answers with an
        # error decision (disabled, no variation) whose reason says why, and logs it.
        typo = client.decide("alice", "no_such_flag")
        print("\nunknown flag:", typo.enabled, typo.reasons)

    print("\n%d events dispatched" % dispatcher.count)
    return 0 if dispatcher.count > 0 else 1


if __name__ == "__main__":
    if len(sys.argv) > 1:
        with open(sys.argv[1]) as handle:
            text = handle.read()
    else:
        text = experiment.demo_datafile()
    sys.exit(main(text))
