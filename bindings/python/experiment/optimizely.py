"""A drop-in for optimizely-sdk 5.7.0's public Python API, over libexperiment.

A program written for optimizely-sdk runs unchanged once its imports name this module::

    from experiment.optimizely import Optimizely, OptimizelyDecideOption, NotificationTypes

``Optimizely`` takes the reference's constructor arguments and has its methods (``activate``,
``get_variation``, ``track``, ``is_feature_enabled``, ``get_enabled_features``, ``get_feature_variable*``,
``get_all_feature_variables``, ``set_forced_variation`` / ``get_forced_variation``, ``get_optimizely_config``,
``create_user_context``, ``close``) with its input checks and results: an invalid input is logged and gives
None / False / ``{}``, never an exception. Decisions come from libexperiment; this module only translates.
Event dispatchers receive :class:`LogEvent` objects (``url``, ``http_verb``, ``params``, ``headers``), and the
notification center calls listeners with the reference's arguments.
"""

from __future__ import annotations

import importlib
import json
import logging
import math
import shutil
import tempfile
import threading
from typing import Any, Callable, Dict, List, Optional, Tuple

from .client import Client, _register, _start_sync
from .errors import Error
from .start_modes import SYNC_GIVEN_FIRST, SYNC_UPDATE_NOW
from .user_context import OptimizelyDecisionContext, OptimizelyForcedDecision, UserContext

__all__ = ["Optimizely", "OptimizelyFactory", "OptimizelyDecideOption", "OptimizelyDecision",
           "OptimizelyUserContext", "OptimizelyDecisionContext", "OptimizelyForcedDecision", "NotificationCenter",
           "NotificationTypes", "DecisionNotificationTypes", "LogEvent", "OptimizelyConfig", "enums"]

_INVALID_INPUT = 'Provided "{}" is in an invalid format.'
_INVALID_OPTIMIZELY = 'Optimizely instance is not valid. Failing "{}".'
_SDK_NOT_READY = "Optimizely SDK not configured properly yet."
_FLAG_KEY_INVALID = 'No flag was found for key "{}".'
_DEFAULT_POLLING_INTERVAL_S = 300  # optimizely-sdk's ConfigManager.DEFAULT_UPDATE_INTERVAL
_DEFAULT_BLOCKING_TIMEOUT_S = 10   # optimizely-sdk's ConfigManager.DEFAULT_BLOCKING_TIMEOUT
# OptimizelyFactory's polling interval and blocking timeout for the instance it is creating on this thread
# (the reference hands them to its PollingConfigManager; Optimizely's own signature has no place for them).
_FACTORY_SETTINGS = threading.local()


def _polling_interval_s(value: Any) -> int:
    """The reference's update interval (None or <= 0: 300 s) in whole seconds for the library, which raises
    intervals under 10 s to 10 s (with a warning)."""
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        return _DEFAULT_POLLING_INTERVAL_S
    return max(1, int(math.ceil(value)))


def _blocking_timeout(value: Any) -> float:
    """The reference's blocking timeout (None or < 0: 10 s)."""
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        return float(_DEFAULT_BLOCKING_TIMEOUT_S)
    return float(value)


class NotificationTypes:
    """The notification types of :class:`NotificationCenter` (the reference's strings, which name the
    arguments each listener receives)."""

    ACTIVATE = "ACTIVATE:experiment, user_id, attributes, variation, event"
    DECISION = "DECISION:type, user_id, attributes, decision_info"
    OPTIMIZELY_CONFIG_UPDATE = "OPTIMIZELY_CONFIG_UPDATE"
    TRACK = "TRACK:event_key, user_id, attributes, event_tags, event"
    LOG_EVENT = "LOG_EVENT:log_event"


class DecisionNotificationTypes:
    """The ``type`` argument of DECISION notifications."""

    AB_TEST = "ab-test"
    ALL_FEATURE_VARIABLES = "all-feature-variables"
    FEATURE = "feature"
    FEATURE_TEST = "feature-test"
    FEATURE_VARIABLE = "feature-variable"
    FLAG = "flag"


class _Enums:
    """``enums.NotificationTypes`` / ``enums.DecisionNotificationTypes``, as ``optimizely.helpers.enums``."""

    NotificationTypes = NotificationTypes
    DecisionNotificationTypes = DecisionNotificationTypes


enums = _Enums()
_ALL_TYPES = (NotificationTypes.ACTIVATE, NotificationTypes.DECISION, NotificationTypes.OPTIMIZELY_CONFIG_UPDATE,
              NotificationTypes.TRACK, NotificationTypes.LOG_EVENT)


class OptimizelyDecideOption:
    """The decide option names (plain strings, as the reference's)."""

    DISABLE_DECISION_EVENT = "DISABLE_DECISION_EVENT"
    ENABLED_FLAGS_ONLY = "ENABLED_FLAGS_ONLY"
    IGNORE_USER_PROFILE_SERVICE = "IGNORE_USER_PROFILE_SERVICE"
    INCLUDE_REASONS = "INCLUDE_REASONS"
    EXCLUDE_VARIABLES = "EXCLUDE_VARIABLES"
    IGNORE_CMAB_CACHE = "IGNORE_CMAB_CACHE"
    RESET_CMAB_CACHE = "RESET_CMAB_CACHE"
    INVALIDATE_USER_CMAB_CACHE = "INVALIDATE_USER_CMAB_CACHE"


_OPTION_NAMES = frozenset(v for k, v in vars(OptimizelyDecideOption).items() if k.isupper())


class LogEvent:
    """One event as dispatchers receive it: ``url``, ``params`` (the event batch as a dict), ``http_verb``
    and ``headers``."""

    def __init__(self, url: str, params: Dict[str, Any], http_verb: Optional[str] = None,
                 headers: Optional[Dict[str, str]] = None) -> None:
        self.url = url
        self.params = params
        self.http_verb = http_verb or "GET"
        self.headers = headers or {}

    def __str__(self) -> str:
        return "%s: %s" % (self.__class__, self.__dict__)


class NotificationCenter:
    """Listeners by notification type: ``add_notification_listener(type, callback)`` returns an id (-1 for
    an unknown type or a callback already added), ``remove_notification_listener(id)``,
    ``clear_notification_listeners(type)``, ``clear_all_notification_listeners()``."""

    def __init__(self, logger: Any = None) -> None:
        self.logger = logger if logger is not None else _null_logger()
        self.listener_id = 1
        self.notification_listeners: Dict[str, List[Tuple[int, Callable[..., None]]]] = {t: [] for t in _ALL_TYPES}

    def add_notification_listener(self, notification_type: str, notification_callback: Callable[..., None]) -> int:
        """Adds a listener; its id, or -1 (logged) for an unknown type or a callback already added."""
        if notification_type not in self.notification_listeners:
            self.logger.error("Invalid notification_type: %s provided. Not adding listener." % notification_type)
            return -1
        if any(callback == notification_callback for _, callback in self.notification_listeners[notification_type]):
            self.logger.error("Listener has already been added. Not adding it again.")
            return -1
        listener_id = self.listener_id
        self.listener_id += 1
        self.notification_listeners[notification_type].append((listener_id, notification_callback))
        return listener_id

    def remove_notification_listener(self, notification_id: int) -> bool:
        """Removes the listener with this id; True when there was one."""
        for listeners in self.notification_listeners.values():
            for entry in listeners:
                if entry[0] == notification_id:
                    listeners.remove(entry)
                    return True
        return False

    def clear_notification_listeners(self, notification_type: str) -> None:
        """Removes every listener of one type (an unknown type is logged)."""
        if notification_type not in self.notification_listeners:
            self.logger.error("Invalid notification_type: %s provided. Not removing any listener."
                              % notification_type)
        self.notification_listeners[notification_type] = []

    clear_notifications = clear_notification_listeners

    def clear_all_notification_listeners(self) -> None:
        """Removes every listener."""
        for notification_type in list(self.notification_listeners):
            self.clear_notification_listeners(notification_type)

    clear_all_notifications = clear_all_notification_listeners

    def send_notifications(self, notification_type: str, *args: Any) -> None:
        """Calls every listener of the type with ``args``; a listener's exception is logged and swallowed."""
        if notification_type not in self.notification_listeners:
            self.logger.error("Invalid notification_type: %s provided. Not triggering any notification."
                              % notification_type)
            return
        for _, callback in list(self.notification_listeners[notification_type]):
            try:
                callback(*args)
            except Exception as exc:
                self.logger.exception("Unknown problem when sending \"%s\" type notification: %s"
                                      % (notification_type, exc))


_SILENT_LOGGER = logging.Logger("experiment.optimizely.silent")  # outside the logging tree: no handler hears it
_SILENT_LOGGER.addHandler(logging.NullHandler())


def _null_logger() -> logging.Logger:
    logger = logging.getLogger("experiment.optimizely")
    if not logger.handlers:
        logger.addHandler(logging.NullHandler())
    return logger


class _Entity:
    """A datafile entity (experiment, variation) as the ACTIVATE listener receives it: its datafile fields
    as attributes (``id``, ``key``, ...)."""

    def __init__(self, fields: Dict[str, Any]) -> None:
        self.__dict__.update(fields)

    def __repr__(self) -> str:
        return "Entity(%r)" % (self.__dict__,)


_DEFAULT_EXPERIMENT: Dict[str, Any] = {"id": "", "key": "", "layerId": "", "status": "", "variations": [],
                                       "trafficAllocation": [], "audienceIds": [], "audienceConditions": [],
                                       "forcedVariations": {}, "groupId": None, "groupPolicy": None, "cmab": None,
                                       "type": None}


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _by(items: Any, field: str) -> Dict[Any, Dict[str, Any]]:
    """Datafile entities by a field, as optimizely-sdk's key maps hold them: a repeated value keeps its first
    place and the last definition."""
    found: Dict[Any, Dict[str, Any]] = {}
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and _hashable(item.get(field)):
            found[item.get(field)] = item
    return found


def _experiment_fields(raw: Dict[str, Any], group: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """The attributes of optimizely-sdk's Experiment entity made from a datafile experiment or rule (lists
    copied: an "fr" experiment gets the everyone-else variation appended)."""
    fields = {"id": raw.get("id"), "key": raw.get("key"), "status": raw.get("status"),
              "audienceIds": raw.get("audienceIds"), "audienceConditions": raw.get("audienceConditions"),
              "variations": list(raw.get("variations") or []), "forcedVariations": raw.get("forcedVariations"),
              "trafficAllocation": list(raw.get("trafficAllocation") or []), "layerId": raw.get("layerId"),
              "groupId": raw.get("groupId"), "groupPolicy": raw.get("groupPolicy"), "cmab": raw.get("cmab"),
              "type": raw.get("type")}
    if group is not None:
        fields["groupId"], fields["groupPolicy"] = group.get("id"), group.get("policy")
    return fields


def _holdout_fields(raw: Dict[str, Any], is_global: bool) -> Dict[str, Any]:
    """The attributes of optimizely-sdk's Holdout entity (a global holdout's includedRules are dropped)."""
    return {"id": raw.get("id"), "key": raw.get("key"), "status": raw.get("status"),
            "variations": raw.get("variations"), "trafficAllocation": raw.get("trafficAllocation"),
            "audienceIds": raw.get("audienceIds"), "audienceConditions": raw.get("audienceConditions"),
            "included_rules": None if is_global else raw.get("includedRules"),
            "exclude_targeted_deliveries": raw.get("excludeTargetedDeliveries", False)}


def _variation_fields(raw: Dict[str, Any]) -> Dict[str, Any]:
    """The attributes of optimizely-sdk's Variation entity."""
    return {"id": raw.get("id"), "key": raw.get("key"), "featureEnabled": raw.get("featureEnabled", False),
            "variables": raw.get("variables") or []}


class _Project:
    """What the facade needs from the datafile outside the decision path: flags' experiment keys and
    variables, experiments, events (parsed once with json)."""

    def __init__(self, datafile: Dict[str, Any], text: str) -> None:
        self.datafile = datafile
        self.text = text  # the datafile as the library holds it (OptimizelyConfig.get_datafile)
        self.experiments: Dict[str, Dict[str, Any]] = {}
        self.experiments_by_id: Dict[str, Dict[str, Any]] = {}
        for experiment in list(datafile.get("experiments") or []) + [
                e for g in datafile.get("groups") or [] for e in g.get("experiments") or []]:
            self.experiments[experiment.get("key")] = experiment
            self.experiments_by_id[experiment.get("id")] = experiment
        # Experiments and delivery rules by key as optimizely-sdk's experiment_key_map holds them (what its
        # get_variation / activate know): built from its map by id (experiments, then the rules of each
        # rollout, then group experiments; a repeated id keeps its first place and its last definition).
        by_id: Dict[Any, Dict[str, Any]] = {}
        for raw in datafile.get("experiments") or []:
            if isinstance(raw, dict) and _hashable(raw.get("id")):
                by_id[raw.get("id")] = raw
        for rollout in _by(datafile.get("rollouts"), "id").values():
            for raw in rollout.get("experiments") or []:
                if isinstance(raw, dict) and _hashable(raw.get("id")):
                    by_id[raw.get("id")] = raw
        for group in _by(datafile.get("groups"), "id").values():
            for raw in _by(group.get("experiments"), "id").values():
                by_id[raw.get("id")] = raw
        owners: List[Dict[str, Any]] = list(by_id.values()) + [
            h for h in list(datafile.get("holdouts") or []) + list(datafile.get("localHoldouts") or [])
            if isinstance(h, dict)]
        variations: List[Any] = [v for e in owners if isinstance(e.get("variations"), list) for v in e["variations"]]
        self.has_null_variation_key = any(isinstance(v, dict) and "key" in v and v["key"] is None for v in variations)
        self.experiment_key_map: Dict[Any, Dict[str, Any]] = {}
        for raw in by_id.values():
            if _hashable(raw.get("key")):
                self.experiment_key_map[raw.get("key")] = raw
        self.features: Dict[str, Dict[str, Any]] = {f.get("key"): f for f in datafile.get("featureFlags") or []}
        self.feature_experiment_ids = {i for f in self.features.values() for i in f.get("experimentIds") or []}
        # Every flag's key in datafile order when two flags share a string key (else None): see decide_all.
        flag_keys: List[Any] = [f.get("key") for f in datafile.get("featureFlags") or [] if isinstance(f, dict)]
        self.repeated_flag_keys: Optional[List[str]] = None
        if len(set(map(repr, flag_keys))) < len(flag_keys) and all(isinstance(k, str) for k in flag_keys):
            self.repeated_flag_keys = [str(k) for k in flag_keys]
        self.events = {e.get("key") for e in datafile.get("events") or []}
        self._entities: Optional[Tuple[Dict[Any, Dict[str, Any]], Dict[Any, Dict[str, Any]]]] = None

    def _entity_maps(self) -> Tuple[Dict[Any, Dict[str, Any]], Dict[Any, Dict[str, Any]]]:
        """(experiments and rules by id, running holdouts by id) as optimizely-sdk's entities' attributes,
        built on first use (ACTIVATE listeners only): experiments, then rollout rules, then group experiments
        (with groupId and groupPolicy) by id, the last definition winning; each "fr" experiment of a flag gets
        the flag's everyone-else variation and a traffic range to 10000 appended, as the reference does."""
        if self._entities is not None:
            return self._entities
        datafile = self.datafile
        experiments: Dict[Any, Dict[str, Any]] = {}
        for raw in datafile.get("experiments") or []:
            if isinstance(raw, dict):
                experiments[raw.get("id")] = _experiment_fields(raw)
        rollouts = _by(datafile.get("rollouts"), "id")
        for rollout in rollouts.values():
            for raw in rollout.get("experiments") or []:
                if isinstance(raw, dict):
                    experiments[raw.get("id")] = _experiment_fields(raw)
        for group in _by(datafile.get("groups"), "id").values():
            for raw in _by(group.get("experiments"), "id").values():
                experiments[raw.get("id")] = _experiment_fields(raw, group)
        for feature in self.features.values():
            everyone_else = self.everyone_else_variation(feature)
            if everyone_else is None:
                continue
            for experiment_id in feature.get("experimentIds") or []:
                experiment = experiments.get(experiment_id)
                if experiment is not None and experiment["type"] == "fr":
                    experiment["variations"].append({
                        "id": everyone_else.get("id"), "key": everyone_else.get("key"),
                        "featureEnabled": bool(everyone_else.get("featureEnabled", False)),
                        "variables": everyone_else.get("variables") or []})
                    experiment["trafficAllocation"].append({"entityId": everyone_else.get("id"), "endOfRange": 10000})
        holdouts: Dict[Any, Dict[str, Any]] = {}
        for raw in datafile.get("holdouts") or []:
            if isinstance(raw, dict) and raw.get("status") == "Running":
                holdouts[raw.get("id")] = _holdout_fields(raw, True)
        for raw in datafile.get("localHoldouts") or []:
            if isinstance(raw, dict) and raw.get("includedRules") is not None and raw.get("status") == "Running":
                holdouts[raw.get("id")] = _holdout_fields(raw, False)
        self._entities = (experiments, holdouts)
        return self._entities

    def activate_arguments(self, experiment_id: Any, variation_id: Any, is_holdout: bool,
                           rule_key: Any = None, variation_key: Any = None, flag_key: Any = None,
                           forced_variation_key: Any = None) -> Tuple[Any, Any]:
        """The experiment and variation arguments of optimizely-sdk's ACTIVATE notification for an impression:
        entities (here objects with the entities' attributes), a holdout's variation as a plain dict, the
        reference's empty experiment when there is none. The event's variation_id is null for an id that is
        not a decimal number (the reference's event id normalization): the variation is then the decided
        one, found by the event's variation_key."""
        experiments, holdouts = self._entity_maps()
        if variation_id is None and variation_key == "" and experiment_id != "" and _hashable(experiment_id):
            # A variation whose id Python reads as false ("", or null / 0 / false in a delivery rule): the
            # reference's impression names no variation (variation_key ""), yet its ACTIVATE passes the
            # decided experiment and variation (the last with such an id).
            owner = (holdouts if is_holdout else experiments).get(experiment_id)
            empty_id = None
            for candidate in (owner or {}).get("variations") or []:
                if isinstance(candidate, dict) and _hashable(candidate.get("id")) and not candidate.get("id"):
                    empty_id = candidate
            if owner is not None and empty_id is not None:
                return (_Entity(dict(owner)),
                        dict(empty_id) if is_holdout else _Entity(_variation_fields(empty_id)))
        if is_holdout and experiment_id == "" and variation_id is None and variation_key == "" and rule_key:
            # A holdout whose id is "": the reference's impression finds no variation (with no experiment id it
            # looks the decided id up among the flag's variations, which hold no holdout's), yet its ACTIVATE
            # passes the holdout and the decided variation. The event does not say which variation that was:
            # a holdout of one variation (Optimizely's "off") has only that one to decide.
            owner = holdouts.get("")
            decidable = [v for v in (owner or {}).get("variations") or []
                         if isinstance(v, dict) and _hashable(v.get("id")) and v.get("id")]
            if owner is not None and owner.get("key") == rule_key and len(decidable) == 1:
                return _Entity(dict(owner)), dict(decidable[0])
        if variation_id is None and isinstance(variation_key, str) and variation_key != "":
            owner = (holdouts if is_holdout else experiments).get(experiment_id)
            if not (experiment_id == "" and rule_key == ""):
                for candidate in (owner or {}).get("variations") or []:
                    if isinstance(candidate, dict) and candidate.get("key") == variation_key:
                        variation_id = candidate.get("id")  # the last with the key, as a map by key keeps it
        # An impression without a variation (a delivery rule decision that found none) has no experiment
        # either: optimizely-sdk passes its empty experiment, even when a rule's id is "" too.
        experiment = (holdouts if is_holdout else experiments).get(experiment_id) if variation_id else None
        if experiment_id == "" and rule_key == "":
            experiment = None  # a flag-level forced decision: no experiment (whatever rule has the id "")
            if variation_id is None and variation_key == "" and forced_variation_key is not None:
                # ... onto a variation whose id Python reads as false: the impression names none, yet the
                # reference's ACTIVATE passes the forced variation (the flag's first with the key)
                forced = self.flag_variation_by_key(flag_key, forced_variation_key)
                if forced is not None:
                    return _Entity(dict(_DEFAULT_EXPERIMENT)), _Entity(_variation_fields(forced))
        variation: Any = None
        if variation_id:
            # The last variation with the id, as optimizely-sdk's variation maps keep it.
            found = None
            for candidate in (experiment or {}).get("variations") or []:
                if isinstance(candidate, dict) and candidate.get("id") == variation_id:
                    found = candidate
            if found is None:  # a flag-level forced decision: no experiment, a variation of one of its rules
                found = self.variation_by_id(None, variation_id)
            if found is not None:
                variation = dict(found) if is_holdout else _Entity(_variation_fields(found))
        if experiment is not None and not is_holdout and flag_key is not None and experiment.get("key") != rule_key:
            # A delivery rule whose id a later definition (another rollout's rule) also has: optimizely-sdk
            # decides it with that definition but passes its own rule (the rollout's own, by id) as the
            # experiment.
            own = self.own_rollout_rule(flag_key, experiment_id)
            if own is not None and own.get("key") == rule_key:
                experiment = _experiment_fields(own)
        return _Entity(dict(experiment) if experiment is not None else dict(_DEFAULT_EXPERIMENT)), variation

    def flag_variation_by_key(self, flag_key: Any, variation_key: Any) -> Optional[Dict[str, Any]]:
        """The reference's get_flag_variation by key: the first variation with the key among the flag's
        variations (its experiments', then its rollout's rules', each rule as its id's last definition, each
        variation as its id's last definition, an id listed once)."""
        feature = self.features.get(flag_key) if _hashable(flag_key) and flag_key else None
        if feature is None:
            return None  # (the reference's lookup also answers None for a flag key Python reads as false)
        experiments, _ = self._entity_maps()
        rule_ids = [i for i in feature.get("experimentIds") or [] if _hashable(i)]
        rollout = _by(self.datafile.get("rollouts"), "id").get(feature.get("rolloutId")) \
            if _hashable(feature.get("rolloutId")) else None
        rule_ids += [r.get("id") for r in (rollout or {}).get("experiments") or [] if isinstance(r, dict)]
        seen: List[Any] = []
        for rule_id in rule_ids:
            by_id: Dict[Any, Dict[str, Any]] = {}
            for variation in (experiments.get(rule_id) or {}).get("variations") or []:
                if isinstance(variation, dict) and _hashable(variation.get("id")):
                    by_id[variation.get("id")] = variation
            for variation_id, variation in by_id.items():
                if variation_id in seen:
                    continue
                seen.append(variation_id)
                if variation.get("key") == variation_key:
                    return dict(variation)
        return None

    def own_rollout_rule(self, flag_key: Any, rule_id: Any) -> Optional[Dict[str, Any]]:
        """The rule of id `rule_id` in the flag's rollout, as the reference's rollout walk holds it (the
        rollout's rules by id: the last definition), or None."""
        feature = self.features.get(flag_key) if _hashable(flag_key) else None
        rollout_id = (feature or {}).get("rolloutId")
        rollout = _by(self.datafile.get("rollouts"), "id").get(rollout_id) if _hashable(rollout_id) else None
        if rollout is None or not _hashable(rule_id):
            return None
        return _by(rollout.get("experiments"), "id").get(rule_id)

    def activate_call_arguments(self, experiment_key: Any, variation_key: Any,
                                variation_id: Any = None) -> Tuple[Any, Any]:
        """The experiment and variation arguments of the ACTIVATE notification of optimizely-sdk's activate: its
        experiment by key (not found through the impression, whose ids may be empty or normalized away) and
        that experiment's variation by key (get_variation's answer is the key as text, so a key that is no
        string matches as text too), else the impression's by id."""
        experiments, _ = self._entity_maps()
        raw = self.experiment_key_map.get(experiment_key) if _hashable(experiment_key) else None
        experiment = experiments.get(raw.get("id")) if raw is not None and _hashable(raw.get("id")) else None
        variations = [v for v in (experiment or {}).get("variations") or [] if isinstance(v, dict)]
        by_id = [v for v in variations if variation_id and v.get("id") == variation_id]
        by_key = [v for v in variations if v.get("key") == variation_key]
        by_text = [v for v in variations if not isinstance(v.get("key"), str) and str(v.get("key")) == variation_key]
        candidates = by_key or by_text or by_id
        found = candidates[-1] if candidates else None  # the last, as the reference's maps keep it
        variation = _Entity(_variation_fields(found)) if found is not None else None
        return _Entity(dict(experiment) if experiment is not None else dict(_DEFAULT_EXPERIMENT)), variation

    def variation(self, rule: Dict[str, Any], variation_key: Any,
                  flag_key: Any = None) -> Optional[Dict[str, Any]]:
        """The variation of a rule by key; else the everyone-else variation of the flag's rollout (optimizely-sdk
        gives "fr" experiments that one); else one of any delivery rule."""
        feature = self.features.get(flag_key) if flag_key is not None else None
        if feature is None:  # the flag of an experiment
            feature = next((f for f in self.features.values() if rule.get("id") in (f.get("experimentIds") or [])),
                           None)
        own = [r for r in self.datafile.get("rollouts") or [] if feature is not None
               and r.get("id") == feature.get("rolloutId")]
        for variation in rule.get("variations") or []:
            if variation.get("key") == variation_key:
                return dict(variation)
        if rule.get("type") == "fr" and feature is not None:  # the one optimizely-sdk appends: not any rule's
            everyone_else = self.everyone_else_variation(feature)
            if everyone_else is not None and everyone_else.get("key") == variation_key:
                # (appended as a Variation made with featureEnabled=bool(...))
                return dict(everyone_else, featureEnabled=bool(everyone_else.get("featureEnabled", False)))
        for rollout in own + list(self.datafile.get("rollouts") or []):
            for other in rollout.get("experiments") or []:
                for variation in other.get("variations") or []:
                    if variation.get("key") == variation_key:
                        return dict(variation)
        return None

    def everyone_else_variation(self, feature: Dict[str, Any]) -> Optional[Dict[str, Any]]:
        """The first variation of the last rule of the flag's rollout (optimizely-sdk appends it to the flag's
        "fr" experiments), or None."""
        rollout_id = feature.get("rolloutId")
        if not isinstance(rollout_id, str):  # (a mutated datafile's list or object there names no rollout)
            return None
        rules = (_by(self.datafile.get("rollouts"), "id").get(rollout_id) or {}).get("experiments") or []
        variations = (rules[-1].get("variations") or []) if rules and isinstance(rules[-1], dict) else []
        return variations[0] if variations and isinstance(variations[0], dict) else None

    def holdout_keys(self) -> List[Any]:
        """The keys of every holdout."""
        return [h.get("key") for h in self.holdouts()]

    def holdouts(self) -> List[Dict[str, Any]]:
        """Global and local holdouts."""
        return list(self.datafile.get("holdouts") or []) + list(self.datafile.get("localHoldouts") or [])

    def variation_by_id(self, rule: Optional[Dict[str, Any]], variation_id: Any) -> Optional[Dict[str, Any]]:
        """A variation by id: the rule's, else any delivery rule's."""
        if not variation_id:
            return None
        for variation in (rule or {}).get("variations") or []:
            if variation.get("id") == variation_id:
                return dict(variation)
        for rollout in self.datafile.get("rollouts") or []:
            for other in rollout.get("experiments") or []:
                for variation in other.get("variations") or []:
                    if variation.get("id") == variation_id:
                        return dict(variation)
        for experiment in self.experiments_by_id.values():
            for variation in experiment.get("variations") or []:
                if variation.get("id") == variation_id:
                    return dict(variation)
        return None

    def rule_of(self, flag_key: Any, rule_key: Any) -> Optional[Dict[str, Any]]:
        """A flag's experiment or delivery rule by key (holdouts included)."""
        feature = self.features.get(flag_key)
        if feature is None or rule_key is None:
            return None
        candidates = [self.experiments_by_id[i] for i in feature.get("experimentIds") or []
                      if i in self.experiments_by_id]
        candidates += [r for rollout in self.datafile.get("rollouts") or [] if rollout.get("id") == feature.get("rolloutId")
                       for r in rollout.get("experiments") or []]
        candidates += self.holdouts()
        return next((rule for rule in candidates if rule.get("key") == rule_key), None)

    def decision_ids(self, flag_key: Any, rule_key: Any, variation_key: Any) -> Tuple[Optional[str], Optional[str]]:
        """(experiment_id, variation_id) of a flag decision, as optimizely-sdk's DECISION notification
        gives them: None without a variation; a flag-level forced decision has no experiment."""
        if variation_key is None:
            return None, None
        rule = self.rule_of(flag_key, rule_key)
        if rule is not None:
            variation = self.variation(rule, variation_key, flag_key)
            return rule.get("id"), variation.get("id") if variation is not None else None
        feature = self.features.get(flag_key) or {}
        for experiment_id in feature.get("experimentIds") or []:
            experiment = self.experiments_by_id.get(experiment_id) or {}
            for candidate in experiment.get("variations") or []:
                if candidate.get("key") == variation_key:
                    return None, candidate.get("id")
        found = self.variation({}, variation_key)
        return None, found.get("id") if found is not None else None

    def as_reference_variables(self, flag_key: Any, rule_key: Any, variation_key: Any, enabled: Any,
                   variables: Dict[str, Any]) -> None:
        """The library's variables of a decision as optimizely-sdk hands them out, in place: double variables
        whose datafile text is a negative zero ("-0", "-0.0") get -0.0, as its float() gives (the library's
        decisions carry 0.0), and keys that are no strings in the datafile are restored
        (`restore_variable_keys`)."""
        feature = self.features.get(flag_key)
        if feature is None or not variables:
            return
        values: Dict[Any, Any] = {}
        if enabled and variation_key is not None:
            rule = self.rule_of(flag_key, rule_key) or {}
            variation = self.variation(rule, variation_key, flag_key) or {}
            values = {v.get("id"): v.get("value") for v in variation.get("variables") or []}
        for variable in feature.get("variables") or []:
            key = variable.get("key")
            if variable.get("type") != "double" or variables.get(key) != 0.0 or type(variables.get(key)) is not float:
                continue
            raw = values.get(variable.get("id"), variable.get("defaultValue"))
            if isinstance(raw, str) and raw.strip().startswith("-"):
                variables[key] = -0.0
        self.restore_variable_keys(feature, variables)

    @staticmethod
    def restore_variable_keys(feature: Dict[str, Any], variables: Dict[str, Any]) -> None:
        """Names each variable by the datafile's key itself where that key is a number, boolean or null (the
        library names it by Python's str() of it: its keys are C strings), as optimizely-sdk's dict by key
        does: built in the datafile's order, so keys Python takes for one (True and 1) are one entry, the
        first key with the last value. In place; nothing changes when every key is a string."""
        declared = [v.get("key") for v in feature.get("variables") or [] if isinstance(v, dict)]
        if all(isinstance(key, str) for key in declared):
            return
        texts = {key for key in declared if isinstance(key, str)}
        restored: Dict[Any, Any] = {}
        used = set()
        for key in declared:
            text = key if isinstance(key, str) else str(key) if key is None or isinstance(key, (bool, int, float)) \
                else None
            if text is None or text not in variables or (not isinstance(key, str) and text in texts):
                continue
            restored[key] = variables[text]
            used.add(text)
        for key, value in variables.items():
            if key not in used:
                restored[key] = value
        variables.clear()
        variables.update(restored)

    def experiment_keys_of(self, feature: Dict[str, Any]) -> List[str]:
        """The keys of the flag's experiment rules: what optimizely-sdk's experiments by id hold for its
        "experimentIds" (a delivery rule or group experiment repeating an experiment's id wins it)."""
        by_id = self._entity_maps()[0]
        return [by_id[i]["key"] for i in feature.get("experimentIds") or [] if _hashable(i) and i in by_id]

    @staticmethod
    def variable_type(variable: Dict[str, Any]) -> Any:
        """The variable's type as optimizely-sdk holds it: "json" for a string of subType "json", else the
        datafile's value as it is (a mutated datafile may hold a number or null there)."""
        if variable.get("type") == "string" and variable.get("subType") == "json":
            return "json"
        return variable.get("type")


def _is_non_empty_string(value: Any) -> bool:
    return isinstance(value, str) and value != ""


def _attributes_valid(attributes: Any) -> bool:
    """optimizely-sdk's check of a call's attributes: only a truthy value that is not exactly a dict is
    refused (a dict subclass too); a falsy one ([], 0, "") passes and then counts as no attributes."""
    return not attributes or type(attributes) is dict


def _event_tags_valid(event_tags: Any) -> bool:
    """optimizely-sdk's check of a conversion's tags, the same as its check of attributes: a falsy value
    that is no dict ([], 0, "") passes and reaches the payload as it is."""
    return not event_tags or type(event_tags) is dict


def _library_tags(event_tags: Any) -> Any:
    """The tags as JSON text for the library's Client (which reads a str as JSON text): Python's own
    json.dumps, so NaN and infinities are written as Python writes them and sent, as the reference sends
    them (the Client itself refuses them), and a falsy non-dict that passed `_event_tags_valid` ([], 0, "")
    reaches the payload as it is. Raises TypeError for a value JSON cannot carry."""
    return None if event_tags is None else json.dumps(event_tags)


def _library_attributes(attributes: Any) -> Optional[Dict[str, Any]]:
    """The attributes the library decides with: a falsy non-dict that passed `_attributes_valid` is none,
    as the reference's user context makes it {} (its notifications still get the value as it was)."""
    return attributes if isinstance(attributes, dict) else None


# What the library is given for a forced decision whose variation key is None: the reference stores it and
# then finds no variation for it ("Invalid variation is mapped to ..."); no datafile key is this text.
_NO_VARIATION_KEY = "\u0000<no variation key>\u0000"


def _forced_variation_text(variation_key: Any) -> str:
    """The variation key of a forced decision as the library takes it: a str as it is, None as a key no
    variation has, another value as its str() (the text the library gives such a datafile key)."""
    if isinstance(variation_key, str):
        return variation_key
    if variation_key is None:
        return _NO_VARIATION_KEY
    return str(variation_key)


class InvalidAttributeException(Exception):
    """Handed to the error handler for attributes in an invalid format (as optimizely.exceptions')."""


class InvalidEventTagException(Exception):
    """Handed to the error handler for event tags in an invalid format (as optimizely.exceptions')."""


class OptimizelyDecision:
    """The result of a user context's decide: ``variation_key``, ``enabled``, ``variables``, ``rule_key``,
    ``flag_key``, ``user_context`` and ``reasons``."""

    def __init__(self, variation_key: Optional[str] = None, enabled: bool = False,
                 variables: Optional[Dict[str, Any]] = None, rule_key: Optional[str] = None,
                 flag_key: Optional[str] = None, user_context: Optional["OptimizelyUserContext"] = None,
                 reasons: Optional[List[str]] = None) -> None:
        self.variation_key = variation_key
        self.enabled = enabled
        self.variables = variables or {}
        self.rule_key = rule_key
        self.flag_key = flag_key
        self.user_context = user_context
        self.reasons = reasons or []

    def as_json(self) -> Dict[str, Any]:
        """The decision as a dict (``user_context`` as its own ``as_json()``)."""
        return {
            "variation_key": self.variation_key,
            "enabled": self.enabled,
            "variables": self.variables,
            "rule_key": self.rule_key,
            "flag_key": self.flag_key,
            "user_context": self.user_context.as_json() if self.user_context else None,
            "reasons": self.reasons,
        }


class _CallAttributes:
    """Names the attributes of the call in progress on this thread (for ACTIVATE notifications)."""

    def __init__(self, owner: "Optimizely", attributes: Optional[Dict[str, Any]], options: List[str],
                 user_id: Any = None, forced: Optional[Dict[Any, Any]] = None) -> None:
        self.owner = owner
        self.attributes = attributes
        self.options = options
        self.user_id = user_id
        self.forced = forced

    def __enter__(self) -> None:
        self.owner._local.events = []  # the impressions of this call, for its DECISION notifications
        self.owner._local.attributes = dict(self.attributes) if self.attributes is not None else None
        self.owner._local.user_id = self.user_id
        self.owner._local.exclude_variables = OptimizelyDecideOption.EXCLUDE_VARIABLES in self.options
        self.owner._local.forced = self.forced  # the context's forced decisions (ACTIVATE's variation)

    def __exit__(self, *_exc: Any) -> None:
        self.owner._local.forced = None
        self.owner._local.events = None
        self.owner._local.attributes = None
        self.owner._local.user_id = None
        self.owner._local.exclude_variables = False


class OptimizelyUserContext:
    """One user of an :class:`Optimizely` instance (``optimizely.create_user_context(user_id, attributes)``),
    with the reference's methods. Forced decisions belong to the context (a copy keeps its own)."""

    OptimizelyDecisionContext = OptimizelyDecisionContext
    OptimizelyForcedDecision = OptimizelyForcedDecision

    def __init__(self, optimizely_client: "Optimizely", user_id: str, attributes: Optional[Dict[str, Any]],
                 context: Optional[UserContext]) -> None:
        self.client = optimizely_client
        self.user_id = user_id
        self._context = context
        self._attributes: Dict[str, Any] = dict(attributes or {})
        # The forced decisions as the reference's forced_decisions_map holds them (what get / remove answer,
        # whatever the keys: the reference stores any), and the qualified segments when there is no native
        # context (an instance without a usable datafile: the reference's context keeps them all the same).
        self._forced: Dict[Any, Any] = {}
        self._segments: Any = None
        # Whether _segments holds what the program set (answered from here, as the reference keeps the
        # container it was given: a set, a dict, a list holding other values than text); the native context
        # decides with its text members. False: the native context's (fetched) segments are the answer.
        self._segments_given = False

    def _clone(self) -> "OptimizelyUserContext":
        copy = OptimizelyUserContext(self.client, self.user_id, self._attributes, None)
        copy._context = self._context.copy() if self._context is not None else None
        copy._forced = dict(self._forced)
        # (the reference's clone copies the segments only when there are any: [] becomes None)
        copy._segments = self._segments.copy() if self._segments else None
        copy._segments_given = self._segments_given
        return copy

    def get_user_attributes(self) -> Dict[str, Any]:
        """A copy of the context's attributes."""
        return dict(self._attributes)

    def set_attribute(self, attribute_key: str, attribute_value: Any) -> None:
        """Sets one attribute for later decisions and events of this context."""
        self._attributes[attribute_key] = attribute_value
        if self._context is not None:
            try:
                self._context.set_attribute(attribute_key, attribute_value)
            except Error as exc:  # a value the library cannot take: the reference ignores it when deciding
                self.client.logger.warning("attribute %r not used: %s" % (attribute_key, exc))

    def as_json(self) -> Dict[str, Any]:
        """``{"user_id", "attributes"}``."""
        return {"user_id": self.user_id, "attributes": self.get_user_attributes()}

    def _options(self, options: Optional[List[str]]) -> List[str]:
        names = list(self.client.default_decide_options)
        if options is not None:
            if not isinstance(options, list):
                self.client.logger.debug("Provided decide options is not an array. Using default decide options.")
            else:
                # (the reference compares each option with its names: one that is no text, a list
                # included, is no option and raises nothing)
                names.extend(o for o in options if isinstance(o, str) and o in _OPTION_NAMES)
        return names

    def _wrap(self, decision: Any, copy: "OptimizelyUserContext") -> OptimizelyDecision:
        project = self.client._project
        if project is not None:
            project.as_reference_variables(decision.flag_key, decision.rule_key, decision.variation_key,
                                           decision.enabled, decision.variables)
        return OptimizelyDecision(decision.variation_key, decision.enabled, decision.variables, decision.rule_key,
                                  decision.flag_key, copy, list(decision.reasons))

    def decide(self, key: str, options: Optional[List[str]] = None) -> OptimizelyDecision:
        """Decides flag ``key``; the reference's error decision for an unknown flag or an unusable instance."""
        copy = self._clone()
        if not isinstance(key, str):
            return OptimizelyDecision(flag_key=key, user_context=copy, reasons=[_FLAG_KEY_INVALID.format(key)])
        if self._context is None or not self.client._ready():
            return OptimizelyDecision(flag_key=key, user_context=copy, reasons=[_SDK_NOT_READY])
        names = self._options(options)
        project = self.client._project
        if not isinstance(options, list) and project is not None and key in project.features \
                and OptimizelyDecideOption.ENABLED_FLAGS_ONLY in self.client.default_decide_options:
            # As the reference: decide without a list of options takes the instance's default options
            # themselves and removes ENABLED_FLAGS_ONLY from them (for good: later decide_all and
            # decide_for_keys no longer filter).
            self.client.default_decide_options.remove(OptimizelyDecideOption.ENABLED_FLAGS_ONLY)
        with _CallAttributes(self.client, self._attributes, names, self.user_id, self._forced):
            return self._wrap(self._context.decide(key, names), copy)

    def decide_all(self, options: Optional[List[str]] = None) -> Dict[str, OptimizelyDecision]:
        """Decides every flag (``{}`` when the instance is not usable)."""
        if self._context is None or not self.client._ready():
            return {}
        project = self.client._project
        if project is not None and project.repeated_flag_keys is not None:
            # optimizely-sdk's decide_all is its decide_for_keys of every flag's key as the datafile lists
            # them: a key given to two flags is decided (and notified, and its impression sent) twice.
            return self.decide_for_keys(list(project.repeated_flag_keys), options)
        copy = self._clone()
        names = self._options(options)
        with _CallAttributes(self.client, self._attributes, names, self.user_id, self._forced):
            decisions = self._context.decide_all(names)
        return {k: self._wrap(d, copy) for k, d in decisions.items()}

    def decide_for_keys(self, keys: List[str], options: Optional[List[str]] = None) -> Dict[str, OptimizelyDecision]:
        """Decides the flags ``keys`` together, as the reference: one profile lookup and save for all, a key
        that names no flag gets a disabled decision without reasons (kept whatever the options), a key given
        twice carries both evaluations' reasons; the keys that name no flag come first (``{}`` when the
        instance is not usable)."""
        if self._context is None or not self.client._ready():
            return {}
        if not isinstance(keys, list):
            try:
                keys = list(keys)  # the reference iterates what it is given: a str's characters, a dict's keys
            except TypeError:
                return {}  # the reference raises
        names = self._options(options)
        copy = self._clone()
        features = self.client._project.features if self.client._project is not None else {}
        result: Dict[Any, OptimizelyDecision] = {}
        for key in keys:
            if key not in features or not isinstance(key, str):
                # (a flag whose datafile key is no string: the reference decides it; the library cannot
                # name it, so it gets the unknown flag's decision rather than an exception)
                result[key] = OptimizelyDecision(flag_key=key, user_context=copy)
        known = [key for key in keys if key in features and isinstance(key, str)]
        if known:
            # The reference notifies once all flags are decided: a key given twice is notified twice, each
            # time with the reasons of both evaluations (those of its decision).
            # (ENABLED_FLAGS_ONLY filters here: a repeated key's notifications need its decision's reasons.)
            held: List[Tuple[str, Tuple[Any, ...]]] = []
            local = self.client._local
            local.held_notifications = held
            unfiltered = [name for name in names if name != OptimizelyDecideOption.ENABLED_FLAGS_ONLY]
            try:
                with _CallAttributes(self.client, self._attributes, unfiltered, self.user_id, self._forced):
                    decisions = self._context.decide_for_keys(known, unfiltered)
            finally:
                local.held_notifications = None
            enabled_only = OptimizelyDecideOption.ENABLED_FLAGS_ONLY in names
            for key in known:
                if key in decisions and key not in result and (not enabled_only or decisions[key].enabled):
                    result[key] = self._wrap(decisions[key], copy)
            repeated = {key for key in known if known.count(key) > 1}
            for kind, args in held:
                if kind == NotificationTypes.DECISION and repeated and args[3].get("flag_key") in repeated \
                        and OptimizelyDecideOption.INCLUDE_REASONS in names and args[3]["flag_key"] in decisions:
                    args[3]["reasons"] = list(decisions[args[3]["flag_key"]].reasons)
                self.client.notification_center.send_notifications(kind, *args)
        return result

    def track_event(self, event_key: str, event_tags: Optional[Dict[str, Any]] = None) -> None:
        """Tracks ``event_key`` for this user with the context's attributes (as ``Optimizely.track``)."""
        self.client.track(event_key, self.user_id, self.get_user_attributes(), event_tags)

    def set_forced_decision(self, decision_context: Any, decision: Any) -> bool:
        """Forces a variation for a flag (or one of its rules) in this context only. True, as the reference
        (which stores any decision: an unknown or missing variation key makes later decisions say so)."""
        self._forced[decision_context] = decision
        if self._context is not None:
            flag_key = getattr(decision_context, "flag_key", None)
            rule_key = getattr(decision_context, "rule_key", None)
            variation_key = getattr(decision, "variation_key", None)
            if isinstance(flag_key, str) and (rule_key is None or isinstance(rule_key, str)):
                project = self.client._project
                text = _forced_variation_text(variation_key)
                if variation_key is None and project is not None and project.has_null_variation_key:
                    text = "None"  # the reference's None then matches a variation whose key is null ("None" here)
                try:
                    self._context.set_forced_decision(
                        OptimizelyDecisionContext(flag_key, rule_key), OptimizelyForcedDecision(text))
                except Error as exc:
                    self.client.logger.error(str(exc))
        return True

    def get_forced_decision(self, decision_context: Any) -> Any:
        """The forced decision for the decision context, or None."""
        return self._forced.get(decision_context) if self._forced else None

    def remove_forced_decision(self, decision_context: Any) -> bool:
        """Removes one forced decision; True when there was one."""
        if decision_context not in self._forced:
            return False
        del self._forced[decision_context]
        if self._context is not None:
            flag_key = getattr(decision_context, "flag_key", None)
            rule_key = getattr(decision_context, "rule_key", None)
            if isinstance(flag_key, str) and (rule_key is None or isinstance(rule_key, str)):
                try:
                    self._context.remove_forced_decision(OptimizelyDecisionContext(flag_key, rule_key))
                except Error as exc:
                    self.client.logger.error(str(exc))
        return True

    def remove_all_forced_decisions(self) -> bool:
        """Removes every forced decision of this context. True."""
        self._forced.clear()
        if self._context is not None:
            self._context.remove_all_forced_decisions()
        return True

    def get_qualified_segments(self) -> Optional[List[str]]:
        """The context's qualified segments (None when never fetched or set)."""
        if self._context is None or self._segments_given:
            return self._segments.copy() if self._segments is not None else None
        return self._context.get_qualified_segments()

    def set_qualified_segments(self, segments: Optional[List[str]]) -> None:
        """Replaces the context's qualified segments: a copy of the container as given (as the reference's
        ``segments.copy()``: a set stays a set, other values than text stay); its text members decide."""
        given = None if segments is None else segments.copy()
        self._segments, self._segments_given = given, True
        if self._context is not None:
            self._context.set_qualified_segments(
                None if given is None else [s for s in given if isinstance(s, str)])

    def is_qualified_for(self, segment: str) -> bool:
        """Whether ``segment`` is among the context's qualified segments."""
        if self._context is None or self._segments_given:
            return self._segments is not None and segment in self._segments
        return self._context.is_qualified_for(segment)

    def fetch_qualified_segments(self, callback: Any = None, options: Optional[List[str]] = None) -> Any:
        """Fetches the user's qualified segments from ODP into the context (see the binding's UserContext)."""
        if self._context is None:
            return False
        self._segments_given = False  # the fetched segments are the native context's
        return self._context.fetch_qualified_segments(callback, options)


def _rule_type(log_event: LogEvent) -> Any:
    """The rule_type of an impression's decision (None for a conversion)."""
    try:
        return log_event.params["visitors"][0]["snapshots"][0]["decisions"][0]["metadata"]["rule_type"]
    except (KeyError, IndexError, TypeError):
        return None


_EVENT_HEADERS = {"Content-Type": "application/json"}  # what optimizely-sdk's LogEvent carries


class _Dispatcher:
    """Where the facade sees every event the library builds: turns it into a LogEvent, fires LOG_EVENT,
    hands it to the program's dispatcher (``target``) and lets the facade see the events of its current call.

    With a program's dispatcher it is installed in the library as the host dispatcher. Without one (``target``
    None) the library's own pipeline delivers the events to its endpoint, and this object hears each one
    through the library's "event" notification, as optimizely-sdk's default dispatcher still announces them."""

    def __init__(self, owner: "Optimizely", target: Any, processor: Any = None) -> None:
        self.owner = owner
        self.target = None if processor is not None else target
        self.processor = processor

    def _process(self, log_event: LogEvent) -> None:
        """Hands the program's event processor the reference's UserEvents of the library's event."""
        try:
            user_events = _reference_user_events(log_event)
        except Exception as exc:
            self.owner.logger.exception("Error building the user events of %s: %s" % (log_event, exc))
            return
        for user_event in user_events:
            try:
                self.processor.process(user_event)
            except Exception as exc:
                self.owner.logger.exception("Error processing event: %s %s" % (log_event, exc))

    def dispatch_event(self, event: Any) -> None:
        """Called by the library for every impression and conversion, on the caller's thread."""
        self._handle(LogEvent(event.url, event.params, event.http_verb, dict(event.headers)))

    def on_event_notification(self, payload: Dict[str, Any]) -> None:
        """The library's "event" notification (no program dispatcher): {"url", "http_verb", "params"}."""
        self._handle(LogEvent(payload["url"], payload["params"], payload["http_verb"], dict(_EVENT_HEADERS)))

    def _handle(self, log_event: LogEvent) -> None:
        if getattr(self.owner._local, "no_holdout_events", False) and _rule_type(log_event) == "holdout":
            return  # optimizely-sdk's feature calls send no holdout impression (decide does)
        enabled = getattr(self.owner._local, "impression_enabled", None)
        if enabled is not None:
            try:
                log_event.params["visitors"][0]["snapshots"][0]["decisions"][0]["metadata"]["enabled"] = enabled
            except (KeyError, IndexError, TypeError):
                pass  # no impression
        captured = getattr(self.owner._local, "events", None)
        if captured is not None:
            captured.append(log_event)
        center = self.owner.notification_center
        if self.processor is not None:  # the program's processor announces and dispatches (as the reference)
            self._process(log_event)
        else:
            center.send_notifications(NotificationTypes.LOG_EVENT, log_event)
        if self.target is not None:
            try:
                self.target.dispatch_event(log_event)
            except Exception as exc:
                self.owner.logger.exception("Error dispatching event: %s %s" % (log_event, exc))
        if center.notification_listeners[NotificationTypes.ACTIVATE]:
            self._activate_notification(log_event)

    def _flag_forced_variation_key(self, flag_key: Any) -> Any:
        """The variation key the deciding context forces for the flag as a whole, or None."""
        forced = getattr(self.owner._local, "forced", None)
        if not forced or not _hashable(flag_key):
            return None
        decision = forced.get(OptimizelyDecisionContext(flag_key, None))
        return getattr(decision, "variation_key", None)

    def _activate_notification(self, log_event: LogEvent) -> None:
        """optimizely-sdk sends ACTIVATE for every impression (activate, is_feature_enabled, decide) with
        the experiment and variation entities, the call's attributes and the event."""
        project = self.owner._project
        try:
            visitor = log_event.params["visitors"][0]
            decision = visitor["snapshots"][0]["decisions"][0]
        except (KeyError, IndexError, TypeError):
            return  # a conversion
        if project is None:
            return
        is_holdout = (decision.get("metadata") or {}).get("rule_type") == "holdout"
        activate_call = getattr(self.owner._local, "activate_call", None)
        if activate_call is not None:  # activate: the reference passes its experiment and variation by key
            called_key, called_variation = activate_call
            experiment, variation = project.activate_call_arguments(called_key, called_variation,
                                                                    decision.get("variation_id"))
        else:
            metadata = decision.get("metadata") or {}
            experiment, variation = project.activate_arguments(
                decision.get("experiment_id"), decision.get("variation_id"), is_holdout, metadata.get("rule_key"),
                metadata.get("variation_key"), metadata.get("flag_key"),
                self._flag_forced_variation_key(metadata.get("flag_key")))
        # the call's own user id object (a str subclass stays one, as the reference passes it on)
        user_id = getattr(self.owner._local, "user_id", None)
        args = (experiment, visitor.get("visitor_id") if user_id is None else user_id,
                getattr(self.owner._local, "attributes", None), variation, log_event.__dict__)
        held = getattr(self.owner._local, "held_notifications", None)
        if held is not None:
            held.append((NotificationTypes.ACTIVATE, args))
            return
        self.owner.notification_center.send_notifications(NotificationTypes.ACTIVATE, *args)


def _reference_user_events(log_event: LogEvent) -> List[Any]:
    """optimizely-sdk's ImpressionEvent / ConversionEvent objects carrying what the library's event carries
    (ids, keys, metadata, attributes, uuids, timestamps, tags), one per snapshot: a program's event processor
    makes the same payload from them. Only a program given the reference's processor gets here, so the
    reference is importable. Entities carry the ids and keys the payload names (experiment id, key and layer
    id; event id and key), not the rest of the datafile's definition."""
    user_event = importlib.import_module("optimizely.event.user_event")
    payload = importlib.import_module("optimizely.event.payload")
    entities = importlib.import_module("optimizely.entities")
    factory = importlib.import_module("optimizely.event.event_factory").EventFactory
    params = log_event.params
    region = next((name for name, url in factory.EVENT_ENDPOINTS.items() if url == log_event.url), "US")
    context = user_event.EventContext(params.get("account_id"), params.get("project_id"), params.get("revision"),
                                      params.get("anonymize_ip"), region)
    context.client_name, context.client_version = params.get("client_name"), params.get("client_version")
    made: List[Any] = []
    for visitor in params.get("visitors") or []:
        attributes = [payload.VisitorAttribute(a.get("entity_id"), a.get("key"), a.get("type"), a.get("value"))
                      for a in visitor.get("attributes") or []]
        user_id = visitor.get("visitor_id")
        for snapshot in visitor.get("snapshots") or []:
            event = (snapshot.get("events") or [{}])[0]
            decisions = snapshot.get("decisions") or []
            if decisions:
                decision = decisions[0]
                metadata = decision.get("metadata") or {}
                experiment = entities.Experiment(decision.get("experiment_id"), metadata.get("rule_key"), "", [],
                                                 [], {}, [], decision.get("campaign_id"))
                made.append(user_event.ImpressionEvent(
                    context, user_id, experiment if decision.get("experiment_id") else None, attributes,
                    {"id": decision.get("variation_id"), "key": metadata.get("variation_key")},
                    metadata.get("flag_key"), metadata.get("rule_key"), metadata.get("rule_type"),
                    metadata.get("enabled"), None, metadata.get("cmab_uuid")))
            else:
                made.append(user_event.ConversionEvent(
                    context, entities.Event(event.get("entity_id"), event.get("key"), []), user_id, attributes,
                    event.get("tags")))
            made[-1].uuid, made[-1].timestamp = event.get("uuid"), event.get("timestamp")
    return made


class _ProfileServiceAdapter:
    """The program's user profile service as the library's profile store, with the reference's
    UserProfileTracker semantics: a lookup that raises, returns None or returns no
    ``{"user_id", "experiment_bucket_map"}`` starts the user from an empty profile (logged); what the library
    saves is the profile the lookup gave (its own user_id, its entries as they were, unusable ones included)
    with the call's new assignments written in, as the reference saves its UserProfile."""

    def __init__(self, service: Any, logger: Any) -> None:
        self.service = service
        self.logger = logger
        self._local = threading.local()

    def lookup(self, user_id: str) -> Optional[Dict[str, Any]]:
        loaded: Any = None
        try:
            profile = self.service.lookup(user_id)
            if profile is None:
                self.logger.info("Unable to get a user profile from the UserProfileService.")
            elif "user_id" in profile and "experiment_bucket_map" in profile:
                # read here, inside the try: a lookup answering a list or str naming both keys raises on
                # indexing, which the reference's tracker catches as a failed lookup (an empty profile)
                loaded = {"user_id": profile["user_id"], "experiment_bucket_map": profile["experiment_bucket_map"]}
            else:
                self.logger.info("User profile is missing keys: %s" % ", ".join(
                    key for key in ("user_id", "experiment_bucket_map") if key not in profile))
        except Exception:
            self.logger.exception('Unable to retrieve user profile for user "%s" as lookup failed.' % user_id)
        profiles = getattr(self._local, "profiles", None)
        if profiles is None:
            profiles = self._local.profiles = {}
        profiles[user_id] = loaded
        if loaded is None:
            return None
        bucket_map = loaded["experiment_bucket_map"]
        usable = {}
        if isinstance(bucket_map, dict):
            for experiment_id, entry in bucket_map.items():
                # A stored variation id "" is none to the reference (it tests the id's truth), even when a
                # variation has the id "".
                if isinstance(experiment_id, str) and isinstance(entry, dict) \
                        and isinstance(entry.get("variation_id"), str) and entry["variation_id"] != "":
                    usable[experiment_id] = {"variation_id": entry["variation_id"]}
        return {"user_id": user_id, "experiment_bucket_map": usable}

    def save(self, profile: Dict[str, Any]) -> None:
        if getattr(self._local, "no_save", False):
            return
        user_id = profile.get("user_id")
        loaded = (getattr(self._local, "profiles", None) or {}).pop(user_id, None)
        if loaded is not None:
            saved_user_id, bucket_map = loaded["user_id"], loaded["experiment_bucket_map"]
            if not isinstance(bucket_map, dict):
                bucket_map = {}
        else:
            saved_user_id, bucket_map = user_id, {}
        for experiment_id, entry in (profile.get("experiment_bucket_map") or {}).items():
            variation_id = entry.get("variation_id")
            old = bucket_map.get(experiment_id)
            if not (isinstance(old, dict) and old.get("variation_id") == variation_id):
                bucket_map[experiment_id] = {"variation_id": variation_id}
        try:
            self.service.save({"user_id": saved_user_id, "experiment_bucket_map": bucket_map})
        except Exception:
            self.logger.exception('Unable to save user profile for user "%s".' % saved_user_id)


class _NoProfileSave:
    """While active on this thread, the adapter saves no profile."""

    def __init__(self, adapter: Optional[_ProfileServiceAdapter]) -> None:
        self.adapter = adapter

    def __enter__(self) -> None:
        if self.adapter is not None:
            self.adapter._local.no_save = True

    def __exit__(self, *_exc: Any) -> None:
        if self.adapter is not None:
            self.adapter._local.no_save = False


class Optimizely:
    """An optimizely-sdk ``Optimizely`` instance deciding through libexperiment.

    ``Optimizely(datafile=None, event_dispatcher=None, logger=None, error_handler=None,
    skip_json_validation=False, user_profile_service=None, sdk_key=None, config_manager=None,
    notification_center=None, event_processor=None, datafile_access_token=None, default_decide_options=None,
    event_processor_options=None, settings=None, cmab_service=None)``.

    The datafile lifecycle is the reference's PollingConfigManager's, run by libexperiment: with ``sdk_key``
    and no datafile the datafile is fetched in the background, and every call waits for it (at most
    ``blocking_timeout``, 10 s, as the reference's get_config does; at once when the first fetch gave up);
    with ``sdk_key`` and a datafile the instance starts from that datafile at once; either way the datafile
    is then polled every 300 s (``OptimizelyFactory.set_polling_interval``) and each new revision fires
    OPTIMIZELY_CONFIG_UPDATE. Without ``sdk_key`` the datafile is used as it is.

    ``event_dispatcher`` receives :class:`LogEvent` objects; without one, events go to libexperiment's own
    pipeline (its endpoint: the reference's logx URL unless configured otherwise) and LOG_EVENT listeners
    still hear each one. ``event_processor`` (the reference's BatchEventProcessor, ForwardingEventProcessor
    or the program's own) receives every event as the reference's ImpressionEvent / ConversionEvent through
    ``process``, and fires LOG_EVENT itself; events given to a program's dispatcher or processor go nowhere
    else. Each instance keeps its state (forced variations, the event queue) in a private
    temporary directory, removed by :meth:`close`, so nothing outlives the instance (as in the reference).
    """

    def __init__(self, datafile: Optional[str] = None, event_dispatcher: Any = None, logger: Any = None,
                 error_handler: Any = None, skip_json_validation: Optional[bool] = False,
                 user_profile_service: Any = None, sdk_key: Optional[str] = None, config_manager: Any = None,
                 notification_center: Optional[NotificationCenter] = None, event_processor: Any = None,
                 datafile_access_token: Optional[str] = None, default_decide_options: Optional[List[str]] = None,
                 event_processor_options: Optional[Dict[str, Any]] = None, settings: Any = None,
                 cmab_service: Any = None) -> None:
        self.logger = logger if logger is not None else _null_logger()
        self.error_handler = error_handler
        self.notification_center = (notification_center if isinstance(notification_center, NotificationCenter)
                                    else NotificationCenter(self.logger))
        self.event_dispatcher = event_dispatcher
        self.event_processor = event_processor
        self.user_profile_service = user_profile_service
        self.is_valid = True
        self._local = threading.local()
        self._client: Optional[Client] = None
        self._profiles: Optional[_ProfileServiceAdapter] = None
        self._project: Optional[_Project] = None
        self._project_lock = threading.Lock()
        # While the first datafile of a polling instance is awaited, calls wait for it (the reference's
        # blocking get_config); an instance given an unusable datafile does not wait (nor does the reference).
        self._awaits_first_datafile = False
        lifecycle = getattr(_FACTORY_SETTINGS, "value", None) or {}
        self._blocking_timeout = _blocking_timeout(lifecycle.get("blocking_timeout"))
        self._state_dir = tempfile.mkdtemp(prefix="experiment-optimizely-")
        self.sdk_key = sdk_key
        if default_decide_options is None:
            self.default_decide_options: List[str] = []
        elif isinstance(default_decide_options, list):
            self.default_decide_options = [o for o in default_decide_options
                                           if isinstance(o, str) and o in _OPTION_NAMES]  # a list in it is no name
        else:
            self.logger.debug("Provided default decide options is not a list.")
            self.default_decide_options = []
        if event_dispatcher is not None and not callable(getattr(event_dispatcher, "dispatch_event", None)):
            self.logger.error(_INVALID_INPUT.format("event_dispatcher"))
            self.is_valid = False
            return
        if datafile is None and not sdk_key:
            self.logger.error(_INVALID_INPUT.format("datafile"))
            self.is_valid = False
            return
        # keep_datafile: the facade reads the datafile in use back from the library (exp_client_datafile_json),
        # whoever fetched it, to know the experiments, events and variables outside the decision path.
        # The program's user profile service is asked as the reference's UserProfileTracker asks it: every
        # call looks the profile up (no cache in between) and saves what the reference would save.
        self._profiles = _ProfileServiceAdapter(user_profile_service, self.logger) if user_profile_service else None
        options: Dict[str, Any] = {"state_dir": self._state_dir, "keep_datafile": True,
                                   "profile_store": self._profiles if self._profiles is not None else "none"}
        if user_profile_service:
            options["profile_cache"] = False
        # The reference is silent without a logger: the library's messages go to the program's logger only.
        options["logger"] = logger if isinstance(logger, logging.Logger) else _SILENT_LOGGER
        if datafile_access_token:
            options["datafile_access_token"] = datafile_access_token
        if sdk_key:
            options["polling_interval_s"] = _polling_interval_s(lifecycle.get("polling_interval"))
        options.update(_cmab_options(settings, lifecycle))
        options["odp"] = _odp_options(settings)
        if event_dispatcher is None and event_processor is None:  # the options of the reference's own processor
            factory_batching = {"batch_size": lifecycle.get("batch_size"), "flush_interval": lifecycle.get("flush_interval")}
            given = event_processor_options if isinstance(event_processor_options, dict) else {}
            options.update(_event_pipeline_options({**factory_batching, **given}))
        if event_processor is not None and not callable(getattr(event_processor, "process", None)):
            self.logger.error(_INVALID_INPUT.format("event_processor"))
            self.is_valid = False
            return
        self._dispatcher = _Dispatcher(self, event_dispatcher, event_processor)
        self._client_options = options
        try:
            self._client = self._open_client()
        except (Error, TypeError, ValueError) as exc:
            self.logger.error('Provided "sdk_key" or options are in an invalid format. (%s)' % exc)
            return
        self._start(datafile, bool(sdk_key))

    def _open_client(self) -> Client:
        """The library client, not started yet: the listeners must be there when the first datafile (given
        or fetched) lands."""
        program_dispatcher = self._dispatcher.target or self._dispatcher.processor
        client = Client(self.sdk_key or None, event_dispatcher=self._dispatcher if program_dispatcher else None,
                        start="none", **self._client_options)
        client.add_listener("decision", self._on_decision)
        client.add_listener("config_update", self._on_config_update)
        if program_dispatcher is None:
            client.add_listener("event", self._dispatcher.on_event_notification)
        return client

    def _start(self, datafile: Any, polls: bool) -> None:
        """Starts as the reference's config managers do: static with a datafile alone; from the datafile at
        once and then polling with an sdk_key too; fetching (calls wait for it) with an sdk_key alone."""
        client = self._client
        assert client is not None
        datafile = self._datafile_text(datafile)
        if not polls:
            try:
                client.start(datafile)
            except (Error, TypeError, ValueError) as exc:
                self.logger.error('Provided "datafile" is in an invalid format. (%s)' % exc)
                client.close()
                self._client = None
            return
        handle = client._live()
        if datafile:  # the reference uses a datafile only when it is truthy
            try:
                _start_sync(handle, datafile, SYNC_UPDATE_NOW | SYNC_GIVEN_FIRST)
                _register(client, None, True)
                return
            except (Error, TypeError, ValueError) as exc:
                # The reference logs the datafile and keeps polling; its calls do not wait meanwhile. The
                # refused start holds the library client's datafile management: a fresh client polls.
                self.logger.error('Provided "datafile" is in an invalid format. (%s)' % exc)
                client.close()
                client = self._client = self._open_client()
        else:
            self._awaits_first_datafile = True
        client.start_async()

    def _datafile_text(self, datafile: Any) -> Any:
        """The datafile as the reference reads it: json.loads decodes bytes in the encoding it detects (a
        UTF-8 BOM dropped, UTF-16 and UTF-32 read), yet its ProjectConfig then needs bytes to be UTF-8 (UTF-16
        without a BOM is, NULs and all) and keeps that decoding as the datafile text get_datafile answers; a
        memoryview or any other type is refused (json.loads takes only str, bytes and bytearray)."""
        self._given_datafile = None
        if datafile is None or isinstance(datafile, str):
            return datafile
        if not isinstance(datafile, (bytes, bytearray)):
            return "<a datafile of type %s>" % type(datafile).__name__  # no JSON: refused, as the reference
        try:
            text = bytes(datafile).decode(json.detect_encoding(datafile), "surrogatepass")
            kept: Any = datafile.decode("utf-8") if isinstance(datafile, bytes) else datafile
        except UnicodeDecodeError:
            return "<a datafile in no encoding the reference reads>"
        self._given_datafile = (text, kept)
        return text

    # -- plumbing ---------------------------------------------------------------------------------

    def _refuse(self, error: Exception, message: str) -> None:
        """Logs a refused input and hands its exception to the program's error handler, where the
        reference calls ``handle_error`` (a raising handler raises out of the call, as there)."""
        self.logger.error(message)
        handle_error = getattr(self.error_handler, "handle_error", None)
        if callable(handle_error):
            handle_error(error)

    def _ready(self) -> bool:
        """Whether the instance has a datafile, waiting for the first one as the reference's get_config
        does (at most blocking_timeout; at once when the library's first fetch gave up)."""
        client = self._client
        if client is None or client.closed:
            return False
        try:
            if client.ready:
                return True
            if self._awaits_first_datafile:
                return client.wait_ready(self._blocking_timeout)
        except Error:  # closed meanwhile
            return False
        return False

    def _load_project(self) -> Optional[_Project]:
        """Reads the datafile in use back from the library and parses what the facade needs from it (at
        start, and after every new revision: the library may have fetched it)."""
        client = self._client
        if client is None:
            return None
        with self._project_lock:
            try:
                text = client.datafile_json
            except Error:  # not ready, or closed
                return self._project
            if self._project is None or text != self._project.text:
                self._project = _Project(json.loads(text), text)
            return self._project

    def _config(self, method: str) -> Optional[_Project]:
        """The parsed datafile when the instance can serve ``method``, else None (logged)."""
        if not self.is_valid:
            self.logger.error(_INVALID_OPTIMIZELY.format(method))
            return None
        if not self._ready():
            self.logger.error('Invalid config. Optimizely instance is not valid. Failing "%s".' % method)
            return None
        return self._project if self._project is not None else self._load_project()

    def _on_decision(self, payload: Dict[str, Any]) -> None:
        # The library's decisions of user contexts; the facade makes every other DECISION notification itself.
        if getattr(self._local, "quiet", False) or payload.get("type") != DecisionNotificationTypes.FLAG:
            return
        info = dict(payload["decision_info"])
        if getattr(self._local, "exclude_variables", False):
            info["variables"] = {}  # optimizely-sdk reports no variables when the decide excluded them
        if self._project is not None and isinstance(info.get("variables"), dict):
            self._project.as_reference_variables(info.get("flag_key"), info.get("rule_key"),
                                                 info.get("variation_key"), info.get("enabled"), info["variables"])
        if "experiment_id" not in info and self._project is not None:
            info["experiment_id"], info["variation_id"] = self._project.decision_ids(
                info.get("flag_key"), info.get("rule_key"), info.get("variation_key"))
            # The impression just sent names the bucketed variation by id (a key can name two variations:
            # an "fr" experiment's own and the everyone-else one optimizely-sdk appends to it).
            for event in getattr(self._local, "events", None) or []:
                try:
                    sent = event.params["visitors"][0]["snapshots"][0]["decisions"][0]
                except (KeyError, IndexError, TypeError):
                    continue
                metadata = sent.get("metadata") or {}
                if metadata.get("flag_key") == info.get("flag_key") and metadata.get("rule_key") == info.get(
                        "rule_key") and metadata.get("variation_key") == info.get("variation_key") \
                        and info.get("variation_key") is not None:
                    info["variation_id"] = sent.get("variation_id") or info["variation_id"]
        # The context's own attributes: the library's JSON cannot carry every value (inf, nan).
        attributes = getattr(self._local, "attributes", None)
        if attributes is None:
            attributes = payload.get("attributes") or {}
        user_id = getattr(self._local, "user_id", None)  # the call's own object (a str subclass stays one)
        if user_id is None:
            user_id = payload["user_id"]
        held = getattr(self._local, "held_notifications", None)
        if held is not None:
            held.append((NotificationTypes.DECISION, (payload["type"], user_id, attributes, info)))
            return
        self.notification_center.send_notifications(NotificationTypes.DECISION, payload["type"], user_id,
                                                    attributes, info)

    def _on_config_update(self, _payload: Dict[str, Any]) -> None:
        # On the thread that swapped the datafile in (a poll, or the start): the facade's view follows first.
        self._load_project()
        self.notification_center.send_notifications(NotificationTypes.OPTIMIZELY_CONFIG_UPDATE)

    def _quiet_decide(self, flag_key: str, user_id: str, attributes: Optional[Dict[str, Any]],
                      options: Tuple[str, ...]) -> Any:
        """The library's decision without its DECISION notification (the caller sends the reference's)."""
        assert self._client is not None
        self._local.quiet = True
        self._local.attributes = attributes
        self._local.user_id = user_id
        try:
            return self._client.decide(user_id, flag_key, _library_attributes(attributes), options)
        finally:
            self._local.quiet = False
            self._local.attributes = None
            self._local.user_id = None

    def _same_call_again(self) -> "_NoProfileSave":
        """For the library's second decision of one reference call (activate after get_variation, a feature
        call's decision with its impression): the profile it looks up was saved by the first, and is not
        saved again."""
        return _NoProfileSave(self._profiles)

    def _capturing(self) -> List[LogEvent]:
        events: List[LogEvent] = []
        self._local.events = events
        return events

    # -- experiments --------------------------------------------------------------------------------

    def get_variation(self, experiment_key: str, user_id: str,
                      attributes: Optional[Dict[str, Any]] = None) -> Optional[str]:
        """The variation key the user gets in the experiment, or None. No event; a DECISION notification."""
        if not self.is_valid:
            self.logger.error(_INVALID_OPTIMIZELY.format("get_variation"))
            return None
        if not _is_non_empty_string(experiment_key):
            self.logger.error(_INVALID_INPUT.format("experiment_key"))
            return None
        if not isinstance(user_id, str):
            self.logger.error(_INVALID_INPUT.format("user_id"))
            return None
        project = self._config("get_variation")
        if project is None or self._client is None:
            return None
        experiment = project.experiment_key_map.get(experiment_key)
        if experiment is None:
            self.logger.info('Experiment key "%s" is invalid. Not activating user "%s".' % (experiment_key, user_id))
            return None
        if not _attributes_valid(attributes):
            self._refuse(InvalidAttributeException("Attributes provided are in an invalid format."),
                         "Provided attributes are in an invalid format.")
            return None
        variation_key = self._client.get_variation(experiment_key, user_id, _library_attributes(attributes))
        kind = (DecisionNotificationTypes.FEATURE_TEST if experiment.get("id") in project.feature_experiment_ids
                else DecisionNotificationTypes.AB_TEST)
        self.notification_center.send_notifications(NotificationTypes.DECISION, kind, user_id, attributes or {},
                                                    {"experiment_key": experiment_key, "variation_key": variation_key})
        return variation_key

    def activate(self, experiment_key: str, user_id: str, attributes: Optional[Dict[str, Any]] = None) -> Optional[str]:
        """As :meth:`get_variation`, then sends an impression (and the ACTIVATE notification) when the user
        gets a variation."""
        if not self.is_valid:
            self.logger.error(_INVALID_OPTIMIZELY.format("activate"))
            return None
        if not _is_non_empty_string(experiment_key):
            self.logger.error(_INVALID_INPUT.format("experiment_key"))
            return None
        if not isinstance(user_id, str):
            self.logger.error(_INVALID_INPUT.format("user_id"))
            return None
        project = self._config("activate")
        if project is None or self._client is None:
            return None
        variation_key = self.get_variation(experiment_key, user_id, attributes)
        if not variation_key:
            self.logger.info('Not activating user "%s".' % user_id)
            return None
        self._local.quiet = True
        self._local.attributes = attributes
        self._local.user_id = user_id
        self._local.activate_call = (experiment_key, variation_key)
        try:
            with self._same_call_again():  # get_variation saved the profile: the reference saves it once
                self._client.activate(experiment_key, user_id, _library_attributes(attributes))
        finally:
            self._local.quiet = False
            self._local.attributes = None
            self._local.user_id = None
            self._local.activate_call = None
        self.logger.info('Activating user "%s" in experiment "%s".' % (user_id, experiment_key))
        return variation_key

    # -- conversions --------------------------------------------------------------------------------

    def track(self, event_key: str, user_id: str, attributes: Optional[Dict[str, Any]] = None,
              event_tags: Optional[Dict[str, Any]] = None) -> None:
        """Sends a conversion for ``event_key`` (an unknown event is logged) and the TRACK notification."""
        if not self.is_valid:
            self.logger.error(_INVALID_OPTIMIZELY.format("track"))
            return
        if not _is_non_empty_string(event_key):
            self.logger.error(_INVALID_INPUT.format("event_key"))
            return
        if not isinstance(user_id, str):
            self.logger.error(_INVALID_INPUT.format("user_id"))
            return
        if not _attributes_valid(attributes):
            self._refuse(InvalidAttributeException("Attributes provided are in an invalid format."),
                         "Provided attributes are in an invalid format.")
            return
        if not _event_tags_valid(event_tags):
            self._refuse(InvalidEventTagException("Event tags provided are in an invalid format."),
                         "Provided event tags are in an invalid format.")
            return
        project = self._config("track")
        if project is None or self._client is None:
            return
        if event_key not in project.events:
            self.logger.info('Not tracking user "%s" for event "%s".' % (user_id, event_key))
            return
        try:
            tags = _library_tags(event_tags)
        except (TypeError, ValueError):  # a falsy value JSON cannot carry (Decimal(0), 0j): not sent
            self.logger.error("Provided event tags are in an invalid format.")
            return
        events = self._capturing()
        try:
            self._client.track(event_key, user_id, _library_attributes(attributes), tags)
        except Error as exc:
            self.logger.error("track(%r): %s" % (event_key, exc))
            return
        finally:
            self._local.events = None
        self.logger.info('Tracking event "%s" for user "%s".' % (event_key, user_id))
        if self.notification_center.notification_listeners[NotificationTypes.TRACK]:
            self.notification_center.send_notifications(NotificationTypes.TRACK, event_key, user_id, attributes,
                                                        event_tags, events[0].__dict__ if events else None)

    # -- features -----------------------------------------------------------------------------------

    def _feature_decision(self, method: str, feature_key: str, user_id: str, attributes: Optional[Dict[str, Any]],
                          send_event: bool) -> Optional[Tuple[Dict[str, Any], Any, str, Dict[str, Any]]]:
        """(feature, decision, source, source_info) for the feature APIs, or None (logged) for bad inputs."""
        if not self.is_valid:
            self.logger.error(_INVALID_OPTIMIZELY.format(method))
            return None
        if not _is_non_empty_string(feature_key):
            self.logger.error(_INVALID_INPUT.format("feature_key"))
            return None
        if not isinstance(user_id, str):
            self.logger.error(_INVALID_INPUT.format("user_id"))
            return None
        if not _attributes_valid(attributes):
            self._refuse(InvalidAttributeException("Attributes provided are in an invalid format."),
                         "Provided attributes are in an invalid format.")
            return None
        project = self._config(method)
        if project is None:
            return None
        feature = project.features.get(feature_key)
        if feature is None:
            self.logger.error('Feature "%s" is not in datafile.' % feature_key)
            return None
        # Decided without an event first: optimizely-sdk's feature APIs send no impression for a holdout
        # (decide does), so the event-sending decision is made only when the source is not a holdout.
        decision = self._quiet_decide(feature_key, user_id, attributes, (OptimizelyDecideOption.DISABLE_DECISION_EVENT,))
        source, source_info = "rollout", {}
        if decision.variation_key is not None:
            if decision.rule_key in project.experiment_keys_of(feature):
                source = "feature-test"
            elif decision.rule_key in project.holdout_keys():
                source = "holdout"
            if source != "rollout":
                source_info = {"experiment_key": decision.rule_key, "variation_key": decision.variation_key}
        if send_event and source != "holdout":
            self._local.no_holdout_events = True
            # optimizely-sdk's is_feature_enabled puts `featureEnabled is True` in its impression (the
            # library's decide: the value's truth)
            self._local.impression_enabled = self._feature_enabled(feature_key, decision, source) is True
            try:
                with self._same_call_again():
                    decision = self._quiet_decide(feature_key, user_id, attributes, ())
            finally:
                self._local.no_holdout_events = False
                self._local.impression_enabled = None
        project.as_reference_variables(feature_key, decision.rule_key, decision.variation_key, decision.enabled,
                                       decision.variables)
        return feature, decision, source, source_info

    def is_feature_enabled(self, feature_key: str, user_id: str, attributes: Optional[Dict[str, Any]] = None) -> bool:
        """Whether the feature is on for the user (sends the impression the reference sends)."""
        found = self._feature_decision("is_feature_enabled", feature_key, user_id, attributes, True)
        if found is None:
            return False
        _feature, decision, source, source_info = found
        source_info = source_info if source == "feature-test" else {}
        # optimizely-sdk: enabled only when the variation's featureEnabled `is True` (1 or "true" is not; a
        # holdout's is made a bool first).
        enabled = self._feature_enabled(feature_key, decision, source) is True
        self.logger.info('Feature "%s" is %s for user "%s".' % (feature_key, "enabled" if enabled else "not enabled",
                                                                user_id))
        self.notification_center.send_notifications(
            NotificationTypes.DECISION, DecisionNotificationTypes.FEATURE, user_id, attributes or {},
            {"feature_key": feature_key, "feature_enabled": enabled, "source": source, "source_info": source_info})
        return enabled

    def get_enabled_features(self, user_id: str, attributes: Optional[Dict[str, Any]] = None) -> List[str]:
        """The keys of the features on for the user, in datafile order."""
        if not self.is_valid:
            self.logger.error(_INVALID_OPTIMIZELY.format("get_enabled_features"))
            return []
        if not isinstance(user_id, str):
            self.logger.error(_INVALID_INPUT.format("user_id"))
            return []
        if not _attributes_valid(attributes):
            self._refuse(InvalidAttributeException("Attributes provided are in an invalid format."),
                         "Provided attributes are in an invalid format.")
            return []
        project = self._config("get_enabled_features")
        if project is None:
            return []
        return [key for key in project.features if self.is_feature_enabled(key, user_id, attributes)]

    def get_feature_variable(self, feature_key: str, variable_key: str, user_id: str,
                             attributes: Optional[Dict[str, Any]] = None) -> Any:
        """A variable's value for the user, of the variable's own type (None when unknown)."""
        return self._variable(feature_key, variable_key, None, user_id, attributes)

    def get_feature_variable_boolean(self, feature_key: str, variable_key: str, user_id: str,
                                     attributes: Optional[Dict[str, Any]] = None) -> Optional[bool]:
        """A boolean variable's value (None when unknown or of another type)."""
        value: Optional[bool] = self._variable(feature_key, variable_key, "boolean", user_id, attributes)
        return value

    def get_feature_variable_double(self, feature_key: str, variable_key: str, user_id: str,
                                    attributes: Optional[Dict[str, Any]] = None) -> Optional[float]:
        """A double variable's value (None when unknown or of another type)."""
        value: Optional[float] = self._variable(feature_key, variable_key, "double", user_id, attributes)
        return value

    def get_feature_variable_integer(self, feature_key: str, variable_key: str, user_id: str,
                                     attributes: Optional[Dict[str, Any]] = None) -> Optional[int]:
        """An integer variable's value (None when unknown or of another type)."""
        value: Optional[int] = self._variable(feature_key, variable_key, "integer", user_id, attributes)
        return value

    def get_feature_variable_string(self, feature_key: str, variable_key: str, user_id: str,
                                    attributes: Optional[Dict[str, Any]] = None) -> Optional[str]:
        """A string variable's value (None when unknown or of another type)."""
        value: Optional[str] = self._variable(feature_key, variable_key, "string", user_id, attributes)
        return value

    def get_feature_variable_json(self, feature_key: str, variable_key: str, user_id: str,
                                  attributes: Optional[Dict[str, Any]] = None) -> Optional[Dict[str, Any]]:
        """A json variable's value, parsed (None when unknown or of another type)."""
        value: Optional[Dict[str, Any]] = self._variable(feature_key, variable_key, "json", user_id, attributes)
        return value

    def _variable(self, feature_key: str, variable_key: str, wanted: Optional[str], user_id: str,
                  attributes: Optional[Dict[str, Any]]) -> Any:
        if not _is_non_empty_string(feature_key):
            self.logger.error(_INVALID_INPUT.format("feature_key"))
            return None
        if not _is_non_empty_string(variable_key):
            self.logger.error(_INVALID_INPUT.format("variable_key"))
            return None
        project = self._project
        feature = project.features.get(feature_key) if project is not None else None
        if feature is not None:
            # The last variable of that key, as optimizely-sdk's map by key keeps it.
            variable = next((v for v in reversed(list(feature.get("variables") or []))
                             if isinstance(v, dict) and v.get("key") == variable_key), None)
            if variable is None:
                self.logger.error('Variable with key "%s" not found in the datafile.' % variable_key)
                return None
            variable_type = _Project.variable_type(variable)
            if wanted is not None and wanted != variable_type:
                self.logger.warning('Requested variable type "%s", but variable is of type "%s". Use correct API '
                                    'to retrieve value. Returning None.' % (wanted, variable_type))
                return None
        found = self._feature_decision("get_feature_variable", feature_key, user_id, attributes, False)
        if found is None:
            return None
        _feature, decision, source, source_info = found
        value = decision.variables.get(variable_key)
        self.notification_center.send_notifications(
            NotificationTypes.DECISION, DecisionNotificationTypes.FEATURE_VARIABLE, user_id, attributes or {},
            {"feature_key": feature_key, "feature_enabled": self._feature_enabled(feature_key, decision, source),
             "source": source,
             "variable_key": variable_key, "variable_value": value, "variable_type": variable_type,
             "source_info": source_info})
        return value

    def _feature_enabled(self, feature_key: str, decision: Any, source: str) -> Any:
        """The feature_enabled of optimizely-sdk's variable notifications: the decided variation's
        featureEnabled as the datafile has it (an experiment or rule variation: not made a bool), False
        without a variation, a bool for a holdout's variation."""
        project = self._project
        if decision.variation_key is None or project is None:
            return False
        if source == "holdout":
            return bool(decision.enabled)
        variation = project.variation(project.rule_of(feature_key, decision.rule_key) or {}, decision.variation_key,
                                      feature_key)
        raw = variation.get("featureEnabled", False) if variation is not None else None
        # (A key may name two variations of an "fr" experiment: the datafile's value only where it is no bool
        # and agrees with the decision.)
        if variation is None or isinstance(raw, bool) or bool(raw) != bool(decision.enabled):
            return bool(decision.enabled)
        return raw

    def get_all_feature_variables(self, feature_key: str, user_id: str,
                                  attributes: Optional[Dict[str, Any]] = None) -> Optional[Dict[str, Any]]:
        """Every variable of the feature for the user, by key (None when the feature is unknown)."""
        found = self._feature_decision("get_all_feature_variables", feature_key, user_id, attributes, False)
        if found is None:
            return None
        _feature, decision, source, source_info = found
        source_info = source_info if source == "feature-test" else {}
        values = dict(decision.variables)
        self.notification_center.send_notifications(
            NotificationTypes.DECISION, DecisionNotificationTypes.ALL_FEATURE_VARIABLES, user_id, attributes or {},
            {"feature_key": feature_key, "feature_enabled": self._feature_enabled(feature_key, decision, source),
             "variable_values": values,
             "source": source, "source_info": source_info})
        return values

    # -- forced variations ----------------------------------------------------------------------------

    def set_forced_variation(self, experiment_key: str, user_id: str, variation_key: Optional[str]) -> bool:
        """Forces the user into a variation of the experiment (None removes it). False (logged) when the
        experiment or variation is unknown."""
        if not self.is_valid:
            self.logger.error(_INVALID_OPTIMIZELY.format("set_forced_variation"))
            return False
        if not _is_non_empty_string(experiment_key):
            self.logger.error(_INVALID_INPUT.format("experiment_key"))
            return False
        if not isinstance(user_id, str):
            self.logger.error(_INVALID_INPUT.format("user_id"))
            return False
        if self._config("set_forced_variation") is None or self._client is None:
            return False
        if variation_key is not None and not _is_non_empty_string(variation_key):
            self.logger.debug("Variation key is invalid.")
            return False
        try:
            self._client.set_forced_variation(experiment_key, user_id, variation_key)
        except Error as exc:
            self.logger.debug(str(exc))
            return False
        return True

    def get_forced_variation(self, experiment_key: str, user_id: str) -> Optional[str]:
        """The variation forced for the user in the experiment, or None."""
        if not self.is_valid:
            self.logger.error(_INVALID_OPTIMIZELY.format("get_forced_variation"))
            return None
        if not _is_non_empty_string(experiment_key):
            self.logger.error(_INVALID_INPUT.format("experiment_key"))
            return None
        if not isinstance(user_id, str):
            self.logger.error(_INVALID_INPUT.format("user_id"))
            return None
        if self._config("get_forced_variation") is None or self._client is None:
            return None
        try:
            return self._client.get_forced_variation(experiment_key, user_id)
        except Error:
            return None

    # -- user contexts, config, lifecycle -------------------------------------------------------------

    def create_user_context(self, user_id: str,
                            attributes: Optional[Dict[str, Any]] = None) -> Optional[OptimizelyUserContext]:
        """A user context (None, logged, for a user id that is not a str or attributes that are not a dict)."""
        if not isinstance(user_id, str):
            self.logger.error(_INVALID_INPUT.format("user_id"))
            return None
        if attributes is not None and type(attributes) is not dict:  # a dict subclass too, as the reference
            self.logger.error(_INVALID_INPUT.format("attributes"))
            return None
        context = None
        if self._client is not None and not self._client.closed:
            context = self._client.create_user_context(user_id, attributes)
        return OptimizelyUserContext(self, user_id, attributes, context)

    def get_optimizely_config(self) -> Optional["OptimizelyConfig"]:
        """The project configuration as an :class:`OptimizelyConfig` (None when there is none)."""
        project = self._config("get_optimizely_config")
        if project is None or self._client is None:
            return None
        try:
            document = self._client.optimizely_config_json()
        except Error:  # closed meanwhile
            return None
        config = optimizely_config_from_json(document)
        given = getattr(self, "_given_datafile", None)
        if given is not None and given[0] == config.get_datafile():
            config._datafile = given[1]  # the given bytes as the reference keeps them (decoded, or the bytearray)
        return config

    def close(self) -> None:
        """Flushes and closes the client, stops the program's event processor (its last batch is sent, as
        the reference's close does) and removes the instance's state directory."""
        if self._client is not None:
            self._client.close()
        if callable(getattr(self.event_processor, "stop", None)):
            self.event_processor.stop()
        shutil.rmtree(self._state_dir, ignore_errors=True)


from ._optimizely_config import OptimizelyConfig, optimizely_config_from_json  # noqa: E402  (uses nothing from this module)


class OptimizelyFactory:
    """The reference's factory: ``default_instance(sdk_key, datafile=None)``, ``custom_instance(...)`` and the
    setters. The polling interval, blocking timeout, batch size and flush interval apply to the instances the
    factory creates (the last two to the library's event pipeline, as the reference's BatchEventProcessor)."""

    max_event_batch_size: Optional[int] = None
    max_event_flush_interval: Optional[int] = None
    polling_interval: Optional[int] = None
    blocking_timeout: Optional[int] = None
    cmab_cache_size: Optional[int] = None
    cmab_cache_ttl: Optional[int] = None

    @staticmethod
    def set_batch_size(batch_size: int) -> int:
        """Records the event batch size (no effect: see the class) and returns it."""
        OptimizelyFactory.max_event_batch_size = batch_size
        return batch_size

    @staticmethod
    def set_flush_interval(flush_interval: int) -> int:
        """Records the event flush interval (no effect: see the class) and returns it."""
        OptimizelyFactory.max_event_flush_interval = flush_interval
        return flush_interval

    @staticmethod
    def set_polling_interval(polling_interval: int) -> int:
        """Sets the datafile polling interval in seconds of the instances the factory creates (the library
        polls at most every 10 s) and returns it."""
        OptimizelyFactory.polling_interval = polling_interval
        return polling_interval

    @staticmethod
    def set_cmab_cache_size(cache_size: int, logger: Any = None) -> Optional[int]:
        """Sets the CMAB cache size of the instances the factory creates (a positive integer; else the
        default 10000 is kept, as the reference does)."""
        if not isinstance(cache_size, int) or isinstance(cache_size, bool) or cache_size <= 0:
            if logger is not None:
                logger.error("CMAB cache size is invalid, setting to default size 10000.")
            return None
        OptimizelyFactory.cmab_cache_size = cache_size
        return cache_size

    @staticmethod
    def set_cmab_cache_ttl(cache_ttl: int, logger: Any = None) -> Optional[int]:
        """Sets the CMAB cache TTL in seconds of the instances the factory creates (positive; else the
        default 1800 is kept)."""
        if not isinstance(cache_ttl, (int, float)) or isinstance(cache_ttl, bool) or cache_ttl <= 0:
            if logger is not None:
                logger.error("CMAB cache TTL is invalid, setting to default TTL 1800.")
            return None
        OptimizelyFactory.cmab_cache_ttl = int(cache_ttl)
        return OptimizelyFactory.cmab_cache_ttl

    @staticmethod
    def set_blocking_timeout(blocking_timeout: int) -> int:
        """Sets how long the instances the factory creates wait for their first datafile, and returns it."""
        OptimizelyFactory.blocking_timeout = blocking_timeout
        return blocking_timeout

    @staticmethod
    def default_instance(sdk_key: str, datafile: Optional[str] = None) -> Optimizely:
        """An instance for ``sdk_key`` (the datafile, when given, is used at once), polling at the factory's
        polling interval and waiting at most its blocking timeout for the first datafile."""
        with _factory_settings():
            return Optimizely(datafile=datafile, sdk_key=sdk_key)

    @staticmethod
    def custom_instance(sdk_key: str, datafile: Optional[str] = None, event_dispatcher: Any = None,
                        logger: Any = None, error_handler: Any = None, skip_json_validation: Optional[bool] = None,
                        user_profile_service: Any = None, config_manager: Any = None,
                        notification_center: Optional[NotificationCenter] = None, settings: Any = None) -> Optimizely:
        """An instance with the given parts (as the reference's ``custom_instance``)."""
        with _factory_settings():
            return Optimizely(datafile=datafile, event_dispatcher=event_dispatcher, logger=logger,
                              error_handler=error_handler, skip_json_validation=skip_json_validation,
                              user_profile_service=user_profile_service, sdk_key=sdk_key,
                              notification_center=notification_center, settings=settings)


def _cmab_options(settings: Any, lifecycle: Dict[str, Any]) -> Dict[str, Any]:
    """The library's CMAB options from the reference's settings: ``settings.cmab_prediction_endpoint`` (its
    ``{}`` placeholder for the rule id becomes ``{rule_id}``), and the factory's CMAB cache size and TTL."""
    options: Dict[str, Any] = {}
    endpoint = getattr(settings, "cmab_prediction_endpoint", None)
    if isinstance(endpoint, str) and endpoint:
        options["cmab_prediction_endpoint"] = endpoint.replace("{}", "{rule_id}")
    size, ttl = lifecycle.get("cmab_cache_size"), lifecycle.get("cmab_cache_ttl")
    if isinstance(size, int) and not isinstance(size, bool) and size > 0:
        options["cmab_cache_size"] = size
    if isinstance(ttl, (int, float)) and not isinstance(ttl, bool) and ttl > 0:
        options["cmab_cache_timeout_s"] = int(ttl)
    return options


def _odp_options(settings: Any) -> Dict[str, Any]:
    """The library's ``odp`` option from the reference's OptimizelySdkSettings (its timeouts and flush
    interval are seconds; a flush interval of 0 sends every event on its own, as the reference does).
    Without settings, the reference's defaults: a segments cache of 10,000 users kept 600 s."""
    odp: Dict[str, Any] = {"disabled": bool(getattr(settings, "odp_disabled", False))}
    size = getattr(settings, "segments_cache_size", 10_000)
    timeout = getattr(settings, "segments_cache_timeout_in_secs", 600)
    if _is_count(size):
        odp["segments_cache_size"] = size
    if _is_count(timeout):
        odp["segments_cache_timeout_s"] = timeout
    for field, key in (("fetch_segments_timeout", "fetch_timeout_ms"), ("odp_event_timeout", "event_timeout_ms"),
                       ("odp_flush_interval", "event_flush_interval_ms")):
        seconds = getattr(settings, field, None)
        if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and seconds > 0:
            odp[key] = min(max(int(seconds * 1000), 10), 600_000)
    if getattr(settings, "odp_flush_interval", None) == 0:
        odp["event_batch_size"] = 1
    return odp


def _event_pipeline_options(processor_options: Any) -> Dict[str, Any]:
    """The library's event batching from the reference's ``event_processor_options`` (``batch_size``, and
    ``flush_interval`` in seconds); values the library cannot take leave its defaults."""
    if not isinstance(processor_options, dict):
        return {}
    options: Dict[str, Any] = {}
    size: Any = processor_options.get("batch_size")
    interval: Any = processor_options.get("flush_interval")
    if _is_count(size) and 1 <= size <= 10_000:
        options["event_batch_size"] = size
    if isinstance(interval, (int, float)) and not isinstance(interval, bool) and 0 < interval <= 3600:
        options["event_flush_interval_ms"] = max(int(interval * 1000), 1)
    return options


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


class _factory_settings:  # noqa: N801  (a context manager used as a statement)
    """Hands OptimizelyFactory's polling interval, blocking timeout, event batching and CMAB cache settings to
    the Optimizely created inside."""

    def __enter__(self) -> None:
        _FACTORY_SETTINGS.value = {"polling_interval": OptimizelyFactory.polling_interval,
                                   "blocking_timeout": OptimizelyFactory.blocking_timeout,
                                   "cmab_cache_size": OptimizelyFactory.cmab_cache_size,
                                   "cmab_cache_ttl": OptimizelyFactory.cmab_cache_ttl,
                                   "batch_size": OptimizelyFactory.max_event_batch_size,
                                   "flush_interval": OptimizelyFactory.max_event_flush_interval}

    def __exit__(self, *_exc: Any) -> None:
        _FACTORY_SETTINGS.value = None
