"""OptimizelyConfig for experiment.optimizely: the project configuration as optimizely-sdk's
``get_optimizely_config()`` presents it, computed from the datafile text (not on the decision path)."""

from __future__ import annotations

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


def _rollout_of(feature: Dict[str, Any], rollouts: Dict[Any, Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """The flag's rollout. A "rolloutId" outside the schema may be an empty list or object (no rollout, as
    for optimizely-sdk), which cannot be looked up."""
    rollout_id = feature.get("rolloutId")
    return rollouts.get(rollout_id) if isinstance(rollout_id, str) else None


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
        features = datafile.get("featureFlags") or []
        feature_of_experiment = {i: f for f in features for i in f.get("experimentIds") or []}
        experiments = list(datafile.get("experiments") or []) + [
            e for g in datafile.get("groups") or [] for e in g.get("experiments") or []]
        experiments = self._with_everyone_else(experiments, features, datafile.get("rollouts") or [])
        self.experiments_map: Dict[str, OptimizelyExperiment] = {}
        by_id: Dict[str, OptimizelyExperiment] = {}
        for experiment in experiments:
            feature = feature_of_experiment.get(experiment["id"])
            made = OptimizelyExperiment(experiment["id"], experiment["key"], self._variations(experiment, feature, True),
                                        _readable(experiment.get("audienceConditions", []), names) or "")
            self.experiments_map[experiment["key"]] = made
            by_id[experiment["id"]] = made
        rollouts = {r.get("id"): r for r in datafile.get("rollouts") or []}
        self.features_map: Dict[str, OptimizelyFeature] = {}
        for feature in features:
            rules = [by_id[i] for i in feature.get("experimentIds") or []]
            made_feature = OptimizelyFeature(feature["id"], feature["key"], {r.key: r for r in rules},
                                             self._default_variables(feature))
            made_feature.experiment_rules = rules
            rollout = _rollout_of(feature, rollouts)
            for rule in (rollout or {}).get("experiments") or []:
                made_feature.delivery_rules.append(OptimizelyExperiment(
                    rule["id"], rule["key"], self._variations(rule, feature, False),
                    _readable(rule.get("audienceConditions", []), names)))
            self.features_map[feature["key"]] = made_feature

    @staticmethod
    def _with_everyone_else(experiments: List[Dict[str, Any]], features: List[Dict[str, Any]],
                            rollouts: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
        """Experiments of type "fr" (feature rollouts) with their flag's everyone-else variation (the first
        variation of the rollout's last rule) added, as optimizely-sdk presents them."""
        rollout_by_id = {r.get("id"): r for r in rollouts}
        extra: Dict[str, List[Dict[str, Any]]] = {}
        for feature in features:
            rules = (_rollout_of(feature, rollout_by_id) or {}).get("experiments") or []
            everyone_else = (rules[-1].get("variations") or [None])[0] if rules else None
            if not feature.get("rolloutId") or everyone_else is None:
                continue
            for experiment_id in feature.get("experimentIds") or []:
                extra.setdefault(experiment_id, []).append({
                    "id": everyone_else["id"], "key": everyone_else["key"],
                    "featureEnabled": bool(everyone_else.get("featureEnabled", False)),
                    "variables": everyone_else.get("variables")})
        result = []
        for experiment in experiments:
            if experiment.get("type") == "fr" and experiment.get("id") in extra:
                experiment = dict(experiment, variations=list(experiment.get("variations") or [])
                                  + extra[experiment["id"]])
            result.append(experiment)
        return result

    @staticmethod
    def _audiences(datafile: Dict[str, Any]) -> List[OptimizelyAudience]:
        typed = [OptimizelyAudience(a.get("id"), a.get("name"), json.dumps(a.get("conditions")))
                 for a in datafile.get("typedAudiences") or []]
        seen = {a.id for a in typed}
        return typed + [OptimizelyAudience(a.get("id"), a.get("name"), a.get("conditions"))
                        for a in datafile.get("audiences") or []
                        if a.get("id") not in seen and a.get("id") != "$opt_dummy_audience"]

    @staticmethod
    def _default_variables(feature: Dict[str, Any]) -> Dict[str, OptimizelyVariable]:
        return {v["key"]: OptimizelyVariable(v["id"], v["key"], _variable_type(v), v["defaultValue"])
                for v in feature.get("variables") or []}

    def _variations(self, experiment: Dict[str, Any], feature: Optional[Dict[str, Any]],
                    with_values: bool) -> Dict[str, OptimizelyVariation]:
        """Variations by key. An experiment's variables carry the variation's values when it enables the
        feature; a delivery rule's carry the defaults (as optimizely-sdk)."""
        made: Dict[str, OptimizelyVariation] = {}
        for variation in experiment.get("variations") or []:
            variables: Dict[str, OptimizelyVariable] = {}
            if feature is not None:
                variables = self._default_variables(feature)
                if with_values and variation.get("featureEnabled"):
                    by_id = {v.id: v for v in variables.values()}
                    for value in variation.get("variables") or []:
                        variable = by_id.get(value.get("id"))
                        if variable is not None:
                            variable.value = value["value"]
            made[variation["key"]] = OptimizelyVariation(variation["id"], variation["key"],
                                                         variation.get("featureEnabled"), variables)
        return made

    def get_datafile(self) -> Optional[str]:
        """The datafile text the configuration was built from."""
        return self._datafile
