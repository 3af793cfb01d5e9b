"""OptimizelyConfig: the project configuration as optimizely-sdk's ``get_optimizely_config()`` presents it.
The library computes it (exp_client_optimizely_config_json); these classes only wrap its JSON document."""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, List, Optional

__all__ = ["optimizely_config_from_json", "OptimizelyConfig", "OptimizelyExperiment", "OptimizelyFeature", "OptimizelyVariation",
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


class OptimizelyConfig:
    """The project configuration: ``revision``, ``sdk_key``, ``environment_key``, ``experiments_map``,
    ``features_map``, ``attributes``, ``events``, ``audiences`` and :meth:`get_datafile`."""

    def __init__(self, document: Dict[str, Any], datafile: Any = None) -> None:
        self._datafile = document.get("datafile") if datafile is None else datafile
        self.revision = document.get("revision")
        self.sdk_key = document.get("sdk_key")
        self.environment_key = document.get("environment_key")
        self.attributes = [OptimizelyAttribute(a["id"], a["key"]) for a in document["attributes"]]
        self.events = [OptimizelyEvent(e["id"], e["key"], e["experiment_ids"]) for e in document["events"]]
        self.audiences = [OptimizelyAudience(a["id"], a["name"], a["conditions"]) for a in document["audiences"]]
        self.experiments_map = _by_key(document["experiments_map"], _experiment)
        self.features_map = _by_key(document["features_map"], _feature)

    def get_datafile(self) -> Any:
        """The datafile text the configuration was built from."""
        return self._datafile

    def get_sdk_key(self) -> Any:
        """The datafile's SDK key, else ""."""
        return self.sdk_key

    def get_environment_key(self) -> Any:
        """The datafile's environment key, else ""."""
        return self.environment_key


def _by_key(document: Dict[str, Any], make: Callable[[Dict[str, Any]], Any]) -> Dict[Any, Any]:
    """A map of the document by each entry's own key (a datafile key of another JSON type than string is
    a JSON object name there, but a key of that type in the reference's dicts)."""
    return {entry["key"]: make(entry) for entry in document.values()}


def _variable(document: Dict[str, Any]) -> OptimizelyVariable:
    return OptimizelyVariable(document["id"], document["key"], document["type"], document["value"])


def _variables(document: Dict[str, Any]) -> Dict[str, OptimizelyVariable]:
    return _by_key(document, _variable)


def _experiment(document: Dict[str, Any]) -> OptimizelyExperiment:
    variations = _by_key(document["variations_map"], lambda v: OptimizelyVariation(
        v["id"], v["key"], v["feature_enabled"], _variables(v["variables_map"])))
    return OptimizelyExperiment(document["id"], document["key"], variations, document["audiences"])


def _feature(document: Dict[str, Any]) -> OptimizelyFeature:
    feature = OptimizelyFeature(document["id"], document["key"],
                                _by_key(document["experiments_map"], _experiment),
                                _variables(document["variables_map"]))
    feature.experiment_rules = [_experiment(e) for e in document["experiment_rules"]]
    feature.delivery_rules = [_experiment(e) for e in document["delivery_rules"]]
    return feature


def optimizely_config_from_json(text: str, datafile: Any = None) -> OptimizelyConfig:
    """The OptimizelyConfig of the library's JSON document (``datafile``, when given, is what
    :meth:`OptimizelyConfig.get_datafile` returns instead of the document's text)."""
    return OptimizelyConfig(json.loads(text), datafile)
