"""OptimizelyConfig for experiment.optimizely: the project configuration as optimizely-sdk's
``get_optimizely_config()`` presents it, computed from the datafile text (not on the decision path)."""

from __future__ import annotations

import copy
import json
from typing import Any, Dict, List, Optional

__all__ = ["OptimizelyConfig", "OptimizelyExperiment", "OptimizelyFeature", "OptimizelyVariation",
           "OptimizelyVariable", "OptimizelyAttribute", "OptimizelyEvent", "OptimizelyAudience"]

_OPERATORS = ("and", "or", "not")


class OptimizelyVariable:
    """A feature variable: ``id``, ``key``, ``type`` ("boolean", "integer", "double", "string", "json") and
    ``value`` (the datafile's text)."""

    def __init__(self, id: str, key: str, variable_type: str, value: Any) -> None:
        self.id = id
        self.key = key
        self.type = variable_type
        self.value = value


class OptimizelyVariation:
    """A variation: ``id``, ``key``, ``feature_enabled`` and ``variables_map`` (key -> OptimizelyVariable)."""

    def __init__(self, id: str, key: str, feature_enabled: Optional[bool],
                 variables_map: Dict[str, OptimizelyVariable]) -> None:
        self.id = id
        self.key = key
        self.feature_enabled = feature_enabled
        self.variables_map = variables_map


class OptimizelyExperiment:
    """An experiment or rule: ``id``, ``key``, ``variations_map`` and ``audiences`` (a readable condition
    string such as ``"us" OR "fr"``)."""

    def __init__(self, id: str, key: str, variations_map: Dict[str, OptimizelyVariation], audiences: str = "") -> None:
        self.id = id
        self.key = key
        self.variations_map = variations_map
        self.audiences = audiences


class OptimizelyFeature:
    """A flag: ``id``, ``key``, ``experiments_map``, ``variables_map``, ``experiment_rules`` and
    ``delivery_rules``."""

    def __init__(self, id: str, key: str, experiments_map: Dict[str, OptimizelyExperiment],
                 variables_map: Dict[str, OptimizelyVariable]) -> None:
        self.id = id
        self.key = key
        self.experiments_map = experiments_map
        self.variables_map = variables_map
        self.delivery_rules: List[OptimizelyExperiment] = []
        self.experiment_rules: List[OptimizelyExperiment] = []


class OptimizelyAttribute:
    """An attribute: ``id`` and ``key``."""

    def __init__(self, id: str, key: str) -> None:
        self.id = id
        self.key = key


class OptimizelyEvent:
    """An event: ``id``, ``key`` and ``experiment_ids``."""

    def __init__(self, id: str, key: str, experiment_ids: List[str]) -> None:
        self.id = id
        self.key = key
        self.experiment_ids = experiment_ids


class OptimizelyAudience:
    """An audience: ``id``, ``name`` and ``conditions`` (JSON text)."""

    def __init__(self, id: Optional[str], name: Optional[str], conditions: Any) -> None:
        self.id = id
        self.name = name
        self.conditions = conditions


def _variable_type(variable: Dict[str, Any]) -> Any:
    """The variable's type as optimizely-sdk's OptimizelyVariable carries it: "json" for a json string, else the
    datafile's value as it is (not made a str: a mutated datafile may hold any JSON there)."""
    if variable.get("type") == "string" and variable.get("subType") == "json":
        return "json"
    return variable.get("type")


def _readable(conditions: Any, names: Dict[str, str]) -> str:
    """An audience condition tree as text: names quoted, operators upper-case, sub-trees in parentheses,
    spaced as optimizely-sdk spaces them."""
    if not conditions:
        return ""
    count = len(conditions)

    def name(audience_id: Any) -> str:
        return str(names.get(audience_id, audience_id))
    if count == 1 and conditions[0] not in _OPERATORS:
        return '"%s"' % name(conditions[0])
    if count == 2 and conditions[0] in _OPERATORS and not isinstance(conditions[1], list) \
            and conditions[1] not in _OPERATORS:
        prefix = "NOT " if conditions[0] == "not" else ""
        return '%s"%s"' % (prefix, name(conditions[1]))
    operator = "OR"
    pieces: List[str] = []
    for index, item in enumerate(conditions):
        last = index == count - 1
        if item in _OPERATORS:
            operator = str(item).upper()
        elif isinstance(item, list):
            inner = _readable(item, names)
            pieces.append("%s (%s)" % (operator, inner) if last else "(%s) " % inner)
        else:
            if names.get(item, item) is None:
                continue  # a null id names no audience: optimizely-sdk leaves it out (keeping the positions)
            text = '"%s"' % name(item)
            if index < count - 2:
                pieces.append("%s %s " % (text, operator))
            elif last:
                pieces.append("%s %s" % (operator, text))
            else:
                pieces.append(text + " ")
    return "".join(pieces)


def _first_rollout(feature: Dict[str, Any], rollouts: List[Any]) -> Optional[Dict[str, Any]]:
    """The rollout of a flag's delivery rules as optimizely-sdk's OptimizelyConfig finds it: the first one
    whose id equals the flag's "rolloutId" (Python's ==)."""
    rollout_id = feature.get("rolloutId")
    return next((r for r in rollouts if isinstance(r, dict) and r.get("id") == rollout_id), None)


def _last_by(entries: Any, field: str) -> Dict[Any, Dict[str, Any]]:
    """Entries by a field, the last of each value winning (in the place of its first)."""
    return {e.get(field): e for e in entries or [] if isinstance(e, dict)}


class _FlagVariables:
    """One flag's variables as optimizely-sdk's OptimizelyConfigService maps them: by key and by id (the
    same OptimizelyVariable objects), each with the datafile's default value."""

    def __init__(self, feature: Dict[str, Any], converts_json: bool) -> None:
        self.by_key: Dict[Any, OptimizelyVariable] = {}
        self.by_id: Dict[Any, OptimizelyVariable] = {}
        for variable in feature.get("variables") or []:
            # Its ProjectConfig turns a string of subType "json" into type "json" in the datafile's own
            # dict, for the flag its map by key keeps (the last of a repeated key) only.
            kind = _variable_type(variable) if converts_json else variable.get("type")
            made = OptimizelyVariable(variable["id"], variable["key"], kind, variable["defaultValue"])
            self.by_key[variable["key"]] = made
            self.by_id[variable["id"]] = made


class OptimizelyConfig:
    """The project configuration: ``revision``, ``sdk_key``, ``environment_key``, ``experiments_map``,
    ``features_map``, ``attributes``, ``events``, ``audiences`` and :meth:`get_datafile`."""

    def __init__(self, datafile: Dict[str, Any], datafile_text: str, sdk_key: Optional[str] = None) -> None:
        self._datafile = datafile_text
        self.revision = datafile.get("revision")
        self.sdk_key = datafile.get("sdkKey") or sdk_key or ""
        self.environment_key = datafile.get("environmentKey") or ""
        self.attributes = [OptimizelyAttribute(a["id"], a["key"]) for a in datafile.get("attributes") or []]
        self.events = [OptimizelyEvent(e["id"], e["key"], e["experimentIds"]) for e in datafile.get("events") or []]
        self.audiences = self._audiences(datafile)
        names = {a.id: a.name if a.name is not None else "" for a in self.audiences if a.id is not None}
        features = [f for f in datafile.get("featureFlags") or [] if isinstance(f, dict)]
        rollouts = [r for r in datafile.get("rollouts") or [] if isinstance(r, dict)]
        # The lookup maps of optimizely-sdk's OptimizelyConfigService: each flag's variables by the flag's
        # key and by its id (the last flag of a repeated key or id), the flag of each experiment id (the
        # last flag listing it).
        winners = {id(f) for f in _last_by(features, "key").values()}
        self._flag_variables_by_key: Dict[Any, _FlagVariables] = {}
        self._flag_variables_by_id: Dict[Any, _FlagVariables] = {}
        self._feature_of_experiment: Dict[Any, Dict[str, Any]] = {}
        for feature in features:
            for experiment_id in feature.get("experimentIds") or []:
                self._feature_of_experiment[experiment_id] = feature
            made_variables = _FlagVariables(feature, id(feature) in winners)
            self._flag_variables_by_key[feature["key"]] = made_variables
            self._flag_variables_by_id[feature["id"]] = made_variables
        self._appended = self._everyone_else_variations(datafile, features)
        experiments = list(datafile.get("experiments") or []) + [
            e for g in datafile.get("groups") or [] for e in g.get("experiments") or []]
        self.experiments_map: Dict[str, OptimizelyExperiment] = {}
        by_id: Dict[str, OptimizelyExperiment] = {}
        for experiment in experiments:
            made = OptimizelyExperiment(experiment["id"], experiment["key"], self._variations(experiment),
                                        _readable(experiment.get("audienceConditions", []), names) or "")
            self.experiments_map[experiment["key"]] = made
            by_id[experiment["id"]] = made
        self.features_map: Dict[str, OptimizelyFeature] = {}
        for feature in features:
            rules = [by_id[i] for i in feature.get("experimentIds") or []]
            made_feature = OptimizelyFeature(feature["id"], feature["key"], {r.key: r for r in rules},
                                             self._flag_variables_by_key[feature["key"]].by_key)
            made_feature.experiment_rules = rules
            rollout = _first_rollout(feature, rollouts)
            for rule in (rollout or {}).get("experiments") or []:
                made_feature.delivery_rules.append(OptimizelyExperiment(
                    rule["id"], rule["key"], self._variations(rule, feature["id"]),
                    _readable(rule.get("audienceConditions", []), names)))
            self.features_map[feature["key"]] = made_feature

    @staticmethod
    def _everyone_else_variations(datafile: Dict[str, Any], features: List[Dict[str, Any]]) -> Dict[int, List[Any]]:
        """The variations optimizely-sdk's ProjectConfig appends to experiments of type "fr" (feature rollouts),
        by the identity of the datafile dict that gets them: for each flag (the last of a repeated key), once
        per entry of its "experimentIds", the first variation of its rollout's last rule (its rollout: the
        last of that id), appended to the experiment its map by id holds for the entry (experiments, then
        rollout rules, then group experiments, the last definition of an id winning)."""
        winner: Dict[Any, Dict[str, Any]] = {}
        for experiment in datafile.get("experiments") or []:
            if isinstance(experiment, dict):
                winner[experiment.get("id")] = experiment
        rollout_by_id = _last_by(datafile.get("rollouts"), "id")
        for rollout in rollout_by_id.values():
            for rule in rollout.get("experiments") or []:
                if isinstance(rule, dict):
                    winner[rule.get("id")] = rule
        for group in _last_by(datafile.get("groups"), "id").values():
            winner.update(_last_by(group.get("experiments"), "id"))
        appended: Dict[int, List[Any]] = {}
        for feature in _last_by(features, "key").values():
            if not feature.get("rolloutId"):
                continue
            rules = (rollout_by_id.get(feature.get("rolloutId")) or {}).get("experiments") or []
            everyone_else = (rules[-1].get("variations") or [None])[0] if rules else None
            if everyone_else is None:
                continue
            for experiment_id in feature.get("experimentIds") or []:
                experiment = winner.get(experiment_id)
                if experiment is not None and experiment.get("type") == "fr":
                    appended.setdefault(id(experiment), []).append({
                        "id": everyone_else["id"], "key": everyone_else["key"],
                        "featureEnabled": bool(everyone_else.get("featureEnabled", False)),
                        "variables": everyone_else.get("variables") or []})
        return appended

    @staticmethod
    def _audiences(datafile: Dict[str, Any]) -> List[OptimizelyAudience]:
        typed = [OptimizelyAudience(a.get("id"), a.get("name"), json.dumps(a.get("conditions")))
                 for a in datafile.get("typedAudiences") or []]
        seen = {a.id for a in typed}
        return typed + [OptimizelyAudience(a.get("id"), a.get("name"), a.get("conditions"))
                        for a in datafile.get("audiences") or []
                        if a.get("id") not in seen and a.get("id") != "$opt_dummy_audience"]

    def _variables(self, experiment: Dict[str, Any], variation: Dict[str, Any],
                   feature_id: Any = None) -> Dict[str, OptimizelyVariable]:
        """A variation's variables as optimizely-sdk's `_get_variables_map`: for a delivery rule (a flag id
        given) the defaults of the last flag of that id; for an experiment, those of the last flag listing
        it (by that flag's key), with the variation's values when it enables the feature."""
        feature = self._feature_of_experiment.get(experiment.get("id"))
        if feature is None and feature_id is None:
            return {}
        if feature_id:
            return copy.deepcopy(self._flag_variables_by_id[feature_id].by_key)
        if not feature:
            return {}
        flag_variables = self._flag_variables_by_key[feature["key"]]
        variables = copy.deepcopy(flag_variables.by_key)
        if variation.get("featureEnabled"):
            for value in variation.get("variables") or []:
                variable = flag_variables.by_id.get(value.get("id"))
                if variable is not None:
                    variables[variable.key].value = value["value"]
        return variables

    def _variations(self, experiment: Dict[str, Any], feature_id: Any = None) -> Dict[str, OptimizelyVariation]:
        """Variations by key (an "fr" experiment's with its flag's everyone-else variation appended)."""
        made: Dict[str, OptimizelyVariation] = {}
        for variation in list(experiment.get("variations") or []) + self._appended.get(id(experiment), []):
            made[variation["key"]] = OptimizelyVariation(variation["id"], variation["key"],
                                                         variation.get("featureEnabled"),
                                                         self._variables(experiment, variation, feature_id))
        return made

    def get_datafile(self) -> Optional[str]:
        """The datafile text the configuration was built from."""
        return self._datafile
