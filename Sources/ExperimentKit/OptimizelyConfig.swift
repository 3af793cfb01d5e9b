import ExperimentCore

/// optimizely-sdk's OptimizelyConfig of the datafile in use (`ExperimentClient.optimizelyConfig`): the
/// library's document (exp_client_optimizely_config_json) read into values. Ids, keys and values are the
/// datafile's strings (a value of another JSON type reads as its JSON text).
public struct OptimizelyConfig: Codable, Sendable, Equatable {
    public var revision: String
    public var sdkKey: String
    public var environmentKey: String
    public var experimentsMap: [String: OptimizelyExperiment]
    public var featuresMap: [String: OptimizelyFeature]
    public var attributes: [OptimizelyAttribute]
    public var audiences: [OptimizelyAudience]
    public var events: [OptimizelyEvent]
    /// The datafile text the configuration was computed from.
    public var datafile: String

    init(_ json: JSON) {
        revision = json["revision"].text
        sdkKey = json["sdk_key"].text
        environmentKey = json["environment_key"].text
        experimentsMap = json["experiments_map"].map(OptimizelyExperiment.init)
        featuresMap = json["features_map"].map(OptimizelyFeature.init)
        attributes = json["attributes"].list { OptimizelyAttribute(id: $0["id"].text, key: $0["key"].text) }
        audiences = json["audiences"].list {
            OptimizelyAudience(id: $0["id"].text, name: $0["name"].text, conditions: $0["conditions"].text)
        }
        events = json["events"].list {
            OptimizelyEvent(id: $0["id"].text, key: $0["key"].text,
                            experimentIds: $0["experiment_ids"].list { $0.text })
        }
        datafile = json["datafile"].text
    }
}

/// An experiment or rule: its variations by key and its audiences as text (`"\"us\" OR \"fr\""`).
public struct OptimizelyExperiment: Codable, Sendable, Equatable {
    public var id: String
    public var key: String
    public var audiences: String
    public var variationsMap: [String: OptimizelyVariation]

    init(_ json: JSON) {
        id = json["id"].text
        key = json["key"].text
        audiences = json["audiences"].text
        variationsMap = json["variations_map"].map(OptimizelyVariation.init)
    }
}

/// A variation: its variables are the flag's defaults, with its own values when it enables the feature.
public struct OptimizelyVariation: Codable, Sendable, Equatable {
    public var id: String
    public var key: String
    /// nil when the datafile's variation has no "featureEnabled".
    public var featureEnabled: Bool?
    public var variablesMap: [String: OptimizelyVariable]

    init(_ json: JSON) {
        id = json["id"].text
        key = json["key"].text
        featureEnabled = json["feature_enabled"]?.boolValue
        variablesMap = json["variables_map"].map(OptimizelyVariable.init)
    }
}

/// A feature variable: `type` is "boolean", "integer", "double", "string" or "json"; `value` its text.
public struct OptimizelyVariable: Codable, Sendable, Equatable {
    public var id: String
    public var key: String
    public var type: String
    public var value: String

    init(_ json: JSON) {
        id = json["id"].text
        key = json["key"].text
        type = json["type"].text
        value = json["value"].text
    }
}

/// A flag: its experiment rules (also by key), delivery rules and variables with their defaults.
public struct OptimizelyFeature: Codable, Sendable, Equatable {
    public var id: String
    public var key: String
    public var experimentsMap: [String: OptimizelyExperiment]
    public var variablesMap: [String: OptimizelyVariable]
    public var experimentRules: [OptimizelyExperiment]
    public var deliveryRules: [OptimizelyExperiment]

    init(_ json: JSON) {
        id = json["id"].text
        key = json["key"].text
        experimentsMap = json["experiments_map"].map(OptimizelyExperiment.init)
        variablesMap = json["variables_map"].map(OptimizelyVariable.init)
        experimentRules = json["experiment_rules"].list(OptimizelyExperiment.init)
        deliveryRules = json["delivery_rules"].list(OptimizelyExperiment.init)
    }
}

public struct OptimizelyAttribute: Codable, Sendable, Equatable {
    public var id: String
    public var key: String
}

/// An audience: `conditions` is its condition tree as JSON text.
public struct OptimizelyAudience: Codable, Sendable, Equatable {
    public var id: String
    public var name: String
    public var conditions: String
}

public struct OptimizelyEvent: Codable, Sendable, Equatable {
    public var id: String
    public var key: String
    public var experimentIds: [String]
}

private extension Optional where Wrapped == JSON {
    /// A string as it is, null or absent as "", anything else as its JSON text.
    var text: String {
        switch self {
        case .none, .some(.null): return ""
        case .some(.string(let value)): return value
        case .some(let value): return value.jsonText
        }
    }

    func map<Value>(_ make: (JSON) -> Value) -> [String: Value] {
        (self?.objectValue ?? [:]).mapValues(make)
    }

    func list<Value>(_ make: (JSON) -> Value) -> [Value] {
        (self?.arrayValue ?? []).map(make)
    }
}

private extension JSON {
    var text: String { Optional(self).text }
}
