"""A program written for optimizely-sdk, run by test_dropin.py twice: with the reference's imports and with
experiment.optimizely's (DROPIN=experiment). Everything it prints must be the same line for line.

    python dropin_script.py DATAFILE USERS_JSON

DROPIN_SDK_KEY set: the instance is made with that sdk_key and no datafile (it fetches the datafile from
DROPIN_URL_TEMPLATE, a server the test runs; the library's side gets the same template through
EXPERIMENT_DATAFILE_URL_TEMPLATE) and with no event dispatcher (the default one: the reference's POSTs are
caught here, ours go to the library's pipeline), so LOG_EVENT and ACTIVATE come from the default path.
"""

import json
import os
import sys

SDK_KEY = os.environ.get("DROPIN_SDK_KEY")

if os.environ.get("DROPIN") == "experiment":
    from experiment.optimizely import NotificationCenter, Optimizely, OptimizelyDecideOption, enums
    from experiment.optimizely import OptimizelyUserContext
else:
    from optimizely.optimizely import Optimizely
    from optimizely.config_manager import PollingConfigManager
    from optimizely.decision.optimizely_decide_option import OptimizelyDecideOption
    from optimizely.event_dispatcher import EventDispatcher
    from optimizely.helpers import enums
    from optimizely.notification_center import NotificationCenter
    from optimizely.optimizely_user_context import OptimizelyUserContext

    if SDK_KEY:
        PollingConfigManager.DATAFILE_URL_TEMPLATE = os.environ["DROPIN_URL_TEMPLATE"]
        # The default dispatcher would POST to logx.optimizely.com: the events are caught here instead.
        EventDispatcher.dispatch_event = staticmethod(lambda event: None)  # type: ignore[method-assign]

NotificationTypes = enums.NotificationTypes


def visitors(params):
    """An event batch as one line per visitor: the batch's fields and the visitor, without what differs per
    run (uuids, timestamps) or per SDK (client_name, client_version), with sorted keys. One line per visitor
    because optimizely-sdk batches events on a thread (several visitors to a batch, sent later) while
    experiment.optimizely hands each event to the dispatcher at once: the visitors, in order, are the same."""
    data = json.loads(json.dumps(params))
    data.pop("client_name", None)
    data.pop("client_version", None)
    lines = []
    for visitor in data.pop("visitors", []):
        for snapshot in visitor.get("snapshots", []):
            for event in snapshot.get("events", []):
                event.pop("uuid", None)
                event.pop("timestamp", None)
        lines.append(json.dumps([data, visitor], sort_keys=True))
    return lines


def normalized(params):
    """One event (a batch of one visitor) as a line."""
    return "\n".join(visitors(params))


DISPATCHED = []
LOGGED = []


def show(label, value):
    print(label, json.dumps(value, sort_keys=True, default=str))


class Dispatcher:
    def dispatch_event(self, log_event):
        for line in visitors(log_event.params):
            DISPATCHED.append(" ".join([log_event.url, log_event.http_verb,
                                        json.dumps(log_event.headers, sort_keys=True), line]))


class ProfileService:
    """A user profile service in memory (sticky bucketing): prints what it is asked to save."""

    def __init__(self):
        self.profiles = {}

    def lookup(self, user_id):
        return self.profiles.get(user_id)

    def save(self, user_profile):
        print("profile-save", json.dumps(user_profile, sort_keys=True))
        self.profiles[user_profile["user_id"]] = user_profile


def on_decision(kind, user_id, attributes, decision_info):
    show("notify-decision %s %s" % (kind, user_id), [attributes, decision_info])


def on_track(event_key, user_id, attributes, event_tags, event):
    show("notify-track %s %s" % (event_key, user_id), [attributes, event_tags])
    if event is not None:
        print("notify-track-event", event["url"], event["http_verb"], json.dumps(event["headers"], sort_keys=True),
              normalized(event["params"]))


def entity(value):
    """An experiment or variation argument of ACTIVATE: an entity object's attributes, or a plain dict (a
    holdout's variation)."""
    return ["dict" if isinstance(value, dict) else "entity", value if isinstance(value, dict) else vars(value)]


def on_activate(experiment, user_id, attributes, variation, event):
    show("notify-activate %s %s %s" % (experiment.key, user_id, variation["key"] if isinstance(variation, dict)
                                       else variation.key), [attributes, entity(experiment), entity(variation)])
    print("notify-activate-event", event["url"], event["http_verb"], json.dumps(event["headers"], sort_keys=True),
          normalized(event["params"]))


def on_log_event(log_event):
    LOGGED.extend(" ".join([log_event.url, log_event.http_verb, json.dumps(log_event.headers, sort_keys=True),
                            line]) for line in visitors(log_event.params))


CONFIG_UPDATES = []


def on_config_update(*args):
    CONFIG_UPDATES.append(args)


def main():
    datafile = open(sys.argv[1]).read()
    users = json.load(open(sys.argv[2]))
    config = json.loads(datafile)
    # A notification center of the program's own, with a listener before the instance exists: the first
    # datafile's OPTIMIZELY_CONFIG_UPDATE reaches it.
    own_center = NotificationCenter()
    print("config-update listener", own_center.add_notification_listener(NotificationTypes.OPTIMIZELY_CONFIG_UPDATE,
                                                                          on_config_update))
    if SDK_KEY:
        client = Optimizely(sdk_key=SDK_KEY, user_profile_service=ProfileService(), notification_center=own_center,
                            default_decide_options=[OptimizelyDecideOption.INCLUDE_REASONS])
    else:
        client = Optimizely(datafile=datafile, event_dispatcher=Dispatcher(), user_profile_service=ProfileService(),
                            default_decide_options=[OptimizelyDecideOption.INCLUDE_REASONS],
                            notification_center=own_center)
    center = client.notification_center
    print("own center", center is own_center)
    ids = [center.add_notification_listener(NotificationTypes.DECISION, on_decision),
           center.add_notification_listener(NotificationTypes.TRACK, on_track),
           center.add_notification_listener(NotificationTypes.ACTIVATE, on_activate),
           center.add_notification_listener(NotificationTypes.LOG_EVENT, on_log_event)]
    print("listener ids", ids, center.add_notification_listener(NotificationTypes.DECISION, on_decision),
          center.add_notification_listener("nonsense", on_decision))

    experiments = [e["key"] for e in config.get("experiments", [])] + [
        e["key"] for g in config.get("groups", []) for e in g.get("experiments", [])]
    flags = [f["key"] for f in config.get("featureFlags", [])]
    events = [e["key"] for e in config.get("events", [])] + ["no_such_event"]
    variables = [(f["key"], v["key"]) for f in config.get("featureFlags", []) for v in f.get("variables", [])]

    # Invalid inputs: logged, None / False / {}.
    print("invalid", client.activate("", "u"), client.activate(experiments[0] if experiments else "x", 5),
          client.get_variation(None, "u"), client.is_feature_enabled("", "u"),
          client.is_feature_enabled("no_such_flag", "u"), client.get_enabled_features(7),
          client.get_feature_variable("no_such_flag", "v", "u"), client.get_all_feature_variables("", "u"),
          client.track("", "u"), client.track(events[0], "u", attributes="bad"),
          client.create_user_context(42), client.get_forced_variation("", "u"),
          client.set_forced_variation("no_such_experiment", "u", "v"))

    probe = client.create_user_context("probe", {"n": 1})
    show("decide non-str key", probe.decide(5).as_json())
    print("create_user_context bad attributes", client.create_user_context("u", "bad"))
    print("track_event unknown", probe.track_event("no_such_event"))

    for index, (user_id, attributes) in enumerate(users):
        for key in experiments:
            print("get_variation", key, user_id, client.get_variation(key, user_id, attributes))
            if index % 4 == 0:
                print("activate", key, user_id, client.activate(key, user_id, attributes))
        for key in flags:
            print("is_feature_enabled", key, user_id, client.is_feature_enabled(key, user_id, attributes))
        print("get_enabled_features", user_id, client.get_enabled_features(user_id, attributes))
        for flag_key, variable_key in variables[:6]:
            show("get_feature_variable %s %s %s" % (flag_key, variable_key, user_id),
                 client.get_feature_variable(flag_key, variable_key, user_id, attributes))
            for getter in (client.get_feature_variable_boolean, client.get_feature_variable_double,
                           client.get_feature_variable_integer, client.get_feature_variable_string,
                           client.get_feature_variable_json):
                show("%s %s %s" % (getter.__name__, flag_key, variable_key),
                     getter(flag_key, variable_key, user_id, attributes))
        for key in flags[:3]:
            show("get_all_feature_variables %s %s" % (key, user_id),
                 client.get_all_feature_variables(key, user_id, attributes))
        if index % 3 == 0:
            for key in events[:2]:
                client.track(key, user_id, attributes, {"revenue": 4200, "value": 1.5, "category": "shoes"})

        user = client.create_user_context(user_id, attributes)
        for key in flags[:4] + ["no_such_flag"]:
            decision = user.decide(key)
            show("decide %s %s" % (key, user_id), decision.as_json())
        show("decide_all %s" % user_id,
             {k: d.as_json() for k, d in user.decide_all([OptimizelyDecideOption.DISABLE_DECISION_EVENT]).items()})
        print("decide_for_keys order", list(user.decide_for_keys(["no_such_flag"] + flags[:3])))
        show("decide_for_keys %s" % user_id,
             {k: d.as_json() for k, d in user.decide_for_keys(flags[:3], [OptimizelyDecideOption.ENABLED_FLAGS_ONLY,
                                                                           OptimizelyDecideOption.EXCLUDE_VARIABLES]).items()})
        if flags:
            context = OptimizelyUserContext.OptimizelyDecisionContext(flags[0], None)
            flag = config["featureFlags"][0]
            variation_keys = [v["key"] for e in config.get("experiments", []) if e["id"] in flag["experimentIds"]
                              for v in e["variations"]]
            if variation_keys:
                print("set_forced_decision", user.set_forced_decision(
                    context, OptimizelyUserContext.OptimizelyForcedDecision(variation_keys[-1])))
                show("forced decide", user.decide(flags[0]).as_json())
                print("get_forced_decision", user.get_forced_decision(context).variation_key,
                      user.remove_forced_decision(context), user.get_forced_decision(context),
                      user.remove_all_forced_decisions())
        user.set_attribute("extra", "value")
        show("attributes", user.get_user_attributes())
        if index % 3 == 1 and events:
            user.track_event(events[0], {"revenue": 100})

        for key in experiments[:2]:
            experiment = next(e for e in config.get("experiments", []) + [
                e for g in config.get("groups", []) for e in g.get("experiments", [])] if e["key"] == key)
            if experiment["variations"]:
                variation = experiment["variations"][index % len(experiment["variations"])]["key"]
                print("set_forced_variation", key, user_id, client.set_forced_variation(key, user_id, variation),
                      client.get_forced_variation(key, user_id), client.get_variation(key, user_id, attributes))
                print("unset_forced_variation", client.set_forced_variation(key, user_id, None),
                      client.get_forced_variation(key, user_id))


    print("config updates", CONFIG_UPDATES)
    optimizely_config = client.get_optimizely_config()
    print("config", optimizely_config.revision, repr(optimizely_config.sdk_key), repr(optimizely_config.environment_key),
          optimizely_config.get_datafile() == datafile)
    show("config attributes", [vars(a) for a in optimizely_config.attributes])
    show("config events", [vars(e) for e in optimizely_config.events])
    show("config audiences", [vars(a) for a in optimizely_config.audiences])

    def experiment_dict(experiment):
        return {"id": experiment.id, "key": experiment.key, "audiences": experiment.audiences,
                "variations": {k: {"id": v.id, "key": v.key, "feature_enabled": v.feature_enabled,
                                   "variables": {vk: vars(var) for vk, var in v.variables_map.items()}}
                               for k, v in experiment.variations_map.items()}}

    show("config experiments", {k: experiment_dict(e) for k, e in optimizely_config.experiments_map.items()})
    show("config features", {k: {"id": f.id, "key": f.key, "experiments": sorted(f.experiments_map),
                                 "variables": {vk: vars(v) for vk, v in f.variables_map.items()},
                                 "experiment_rules": [experiment_dict(e) for e in f.experiment_rules],
                                 "delivery_rules": [experiment_dict(e) for e in f.delivery_rules]}
                             for k, f in optimizely_config.features_map.items()})
    client.close()  # optimizely-sdk sends its last batch here (so the listeners stay until now)
    for listener_id in ids:
        print("remove", listener_id, center.remove_notification_listener(listener_id))
    print("remove again", center.remove_notification_listener(ids[0]))
    center.clear_notification_listeners(NotificationTypes.DECISION)
    center.clear_all_notification_listeners()
    for line in DISPATCHED:
        print("dispatched", line)
    for line in LOGGED:
        print("notify-log-event", line)


main()
