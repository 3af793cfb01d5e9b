"""A small datafile whose audiences use real-time segments ("match": "qualified"), with an ODP
integration pointing at a given host. Also written to examples/datafiles/segments.json (host left as a
placeholder) by ``python3 tests/odp/odp_datafile.py``."""

from __future__ import annotations

import json
import sys
from typing import Any, Dict, Optional


def qualified(segment: str) -> Dict[str, str]:
    return {"type": "third_party_dimension", "name": "odp.audiences", "match": "qualified", "value": segment}


def odp_datafile(host: Optional[str], api_key: str = "test-api-key") -> Dict[str, Any]:
    def rule(rule_id: str, key: str, audience_ids: list, variation_id: str, variation_key: str, enabled: bool,
             layer: str) -> Dict[str, Any]:
        return {"id": rule_id, "key": key, "status": "Running", "layerId": layer, "audienceIds": audience_ids,
                "variations": [{"id": variation_id, "key": variation_key, "featureEnabled": enabled,
                                "variables": []}],
                "trafficAllocation": [{"entityId": variation_id, "endOfRange": 10000}], "forcedVariations": {}}

    datafile: Dict[str, Any] = {
        "version": "4", "accountId": "12001", "projectId": "12002", "revision": "7",
        "environmentKey": "production", "sdkKey": "odp-test", "anonymizeIP": True, "botFiltering": False,
        "sendFlagDecisions": True,
        "attributes": [{"id": "13001", "key": "country"}],
        "events": [{"id": "14001", "key": "purchase", "experimentIds": []}],
        "audiences": [
            {"id": "15001", "name": "segment-a or segment-b",
             "conditions": json.dumps(["and", ["or", ["or", qualified("seg-a"), qualified("seg-b")]]])},
            {"id": "15002", "name": "vip (typed below)", "conditions": "[\"or\", {\"match\": \"exact\", "
             "\"name\": \"$opt_dummy_attribute\", \"type\": \"custom_attribute\", \"value\": \"$opt_dummy_value\"}]"},
            {"id": "$opt_dummy_audience", "name": "Optimizely-Generated Audience for Backwards Compatibility",
             "conditions": "[\"or\", {\"match\": \"exact\", \"name\": \"$opt_dummy_attribute\", \"type\": "
             "\"custom_attribute\", \"value\": \"$opt_dummy_value\"}]"},
        ],
        "typedAudiences": [
            {"id": "15002", "name": "vip",
             "conditions": ["and", qualified("vip-segment"), {"type": "custom_attribute", "name": "country",
                                                              "match": "exact", "value": "nl"}]},
        ],
        "experiments": [],
        "groups": [],
        "featureFlags": [
            {"id": "16001", "key": "segment_flag", "experimentIds": [], "rolloutId": "17001", "variables": []},
            {"id": "16002", "key": "vip_flag", "experimentIds": [], "rolloutId": "17002", "variables": []},
        ],
        "rollouts": [
            {"id": "17001", "experiments": [
                rule("18001", "segment_rule", ["15001"], "19001", "on", True, "17001"),
                rule("18002", "18002", [], "19002", "off", False, "17001")]},
            {"id": "17002", "experiments": [
                rule("18003", "vip_rule", ["15002"], "19003", "vip_on", True, "17002"),
                rule("18004", "18004", [], "19004", "vip_off", False, "17002")]},
        ],
        "integrations": [],
    }
    if host is not None:
        datafile["integrations"] = [{"key": "odp", "host": host, "publicKey": api_key}]
    return datafile


if __name__ == "__main__":
    json.dump(odp_datafile(sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8089"), sys.stdout, indent=2)
    sys.stdout.write("\n")
