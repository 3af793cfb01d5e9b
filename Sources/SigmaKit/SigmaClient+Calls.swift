import ExperimentCore
import ExperimentKit
import ExperimentRuntime

// SigmaClient's calls, each in the seed's callback and async forms over one synchronous body.

extension SigmaClient {
    // MARK: flags

    /// The flag's value for the user: without `variableKey` whether the flag is on (a Bool), else that
    /// variable of the flag. nil when the user gets no variation (not an error), or when no configuration
    /// could be had. Sends the flag's impression.
    public func checkFlag<T: SigmaPropertyType>(flagName: String, variableKey: String? = nil,
                                                onSuccess: SigmaSuccessCallback<T?>?, onError: SigmaErrorCallback?) {
        callback(onSuccess, onError) { () throws(SigmaError) -> T? in
            try self.flagValue(flagName: flagName, variableKey: variableKey)
        }
    }

    public func checkFlag<T: SigmaPropertyType>(flagName: String, variableKey: String? = nil) async throws(SigmaError)
        -> T?
    {
        if await configured() != nil { return nil }
        return try flagValue(flagName: flagName, variableKey: variableKey)
    }

    func flagValue<T: SigmaPropertyType>(flagName: String, variableKey: String?) throws(SigmaError) -> T? {
        let value = try withUser { (config, user) throws(ClientError) -> SigmaValue? in
            guard let flag = config.flagIndex.find(flagName) else {
                throw ClientError(.unknownFlag, "unknown flag \"\(flagName)\"")
            }
            return try runtime.flagValue(config: config, flag: flag, variableKey: variableKey, userId: user,
                                         attributes: OwnedAttributes.empty, as: T.sigmaValueType)
        }
        return value.flatMap { T(sigmaValue: $0) }
    }

    /// Every flag the user has a variation of: a flag with variables gives them as [String: Any], one
    /// without gives whether it is on (a Bool). No impressions.
    public func getUserFeatureFlagsDetails(onSuccess: SigmaSuccessCallback<[String: any SigmaPropertyType]>?,
                                           onError: SigmaErrorCallback?) {
        callback(onSuccess, onError) { () throws(SigmaError) in try self.flagsDetails() }
    }

    public func getUserFeatureFlagsDetails() async throws(SigmaError) -> [String: any SigmaPropertyType] {
        try await awaiting { () throws(SigmaError) in try flagsDetails() }
    }

    func flagsDetails() throws(SigmaError) -> [String: any SigmaPropertyType] {
        let text = try withUser { (config, user) throws(ClientError) in
            runtime.userFlagsJSON(config: config, userId: user, attributes: OwnedAttributes.empty)
        }
        var details: [String: any SigmaPropertyType] = [:]
        for (flag, detail) in JSON.parse(text).objectValue ?? [:] {
            let variables = detail["variables"]?.objectValue ?? [:]
            details[flag] = variables.isEmpty ? (detail["enabled"]?.boolValue ?? false) : variables.mapValues(\.anyValue)
        }
        return details
    }

    // MARK: experiments

    /// The user's experiments as "expId.groupIndex|expId.groupIndex|..." ("" for none; nil when no
    /// configuration could be had).
    public func getAllUserExperiments(onSuccess: SigmaSuccessCallback<String?>?, onError: SigmaErrorCallback?) {
        callback(onSuccess, onError) { () throws(SigmaError) -> String? in try self.experimentsString() }
    }

    public func getAllUserExperiments() async throws(SigmaError) -> String? {
        if await configured() != nil { return nil }
        return try experimentsString()
    }

    func experimentsString() throws(SigmaError) -> String? {
        try withUser { (config, user) throws(ClientError) in
            SigmaReport.experimentsString(runtime.userExperiments(config: config, userId: user,
                                                                  attributes: OwnedAttributes.empty), in: config)
        }
    }

    /// The experiment named `name` when the user is in it, else nil. `.notFound` for a name the
    /// configuration lacks.
    public func getExperiment(name: String, onSuccess: SigmaSuccessCallback<SigmaExperiment?>?,
                              onError: SigmaErrorCallback?) {
        callback(onSuccess, onError) { () throws(SigmaError) -> SigmaExperiment? in try self.experiment(name: name) }
    }

    public func getExperiment(name: String) async throws(SigmaError) -> SigmaExperiment? {
        if await configured() != nil { return nil }
        return try experiment(name: name)
    }

    func experiment(name: String) throws(SigmaError) -> SigmaExperiment? {
        try withUser { (config, user) throws(ClientError) -> SigmaExperiment? in
            let index = try experimentIndex(name, in: config)
            return runtime.userExperiment(config: config, experiment: index, userId: user,
                                          attributes: OwnedAttributes.empty).map(SigmaExperiment.init)
        }
    }

    private func experimentIndex(_ name: String, in config: ProjectConfig) throws(ClientError) -> Int {
        guard let index = config.experimentKeyIndex.find(name), config.experiments[index].kind == .experiment else {
            throw ClientError(.unknownExperiment, "unknown experiment \"\(name)\"")
        }
        return index
    }

    // MARK: holdouts

    /// The user's holdouts as "holdoutId.0|holdoutId.0|..." ("" for none).
    public func getAllUserHoldouts(onSuccess: SigmaSuccessCallback<String?>?, onError: SigmaErrorCallback?) {
        callback(onSuccess, onError) { () throws(SigmaError) -> String? in try self.holdoutsString() }
    }

    public func getAllUserHoldouts() async throws(SigmaError) -> String? {
        try await awaiting { () throws(SigmaError) -> String? in try holdoutsString() }
    }

    func holdoutsString() throws(SigmaError) -> String? {
        try withUser { (config, user) throws(ClientError) in
            SigmaReport.holdoutsString(runtime.userHoldouts(config: config, userId: user,
                                                            attributes: OwnedAttributes.empty), in: config)
        }
    }

    /// Whether the user is in holdout `name`; `.notFound` for a name the configuration lacks.
    public func getHoldout(name: String, onSuccess: SigmaSuccessCallback<Bool>?, onError: SigmaErrorCallback?) {
        callback(onSuccess, onError) { () throws(SigmaError) in try self.holdout(name: name) }
    }

    public func getHoldout(name: String) async throws(SigmaError) -> Bool {
        try await awaiting { () throws(SigmaError) in try holdout(name: name) }
    }

    func holdout(name: String) throws(SigmaError) -> Bool {
        try withUser { (config, user) throws(ClientError) in
            guard let index = config.holdouts.firstIndex(where: { $0.key.text.sameCodePoints(name) }) else {
                throw ClientError(.notFound, "unknown holdout \"\(name)\"")
            }
            return runtime.isInHoldout(config: config, holdout: index, userId: user, attributes: OwnedAttributes.empty)
        }
    }

    // MARK: forced memberships (debug menus; persisted in the state file)

    /// Puts the user in experiment `experimentName`: in the group (variation position) `groupIndex`, or
    /// bucketed as usual when nil, whatever the audiences and traffic.
    public func includeForce(experimentName: String, groupIndex: Int? = nil,
                             onSuccess: SigmaSuccessCallback<Void>?, onError: SigmaErrorCallback?) {
        callback(onSuccess, onError) { () throws(SigmaError) in
            try self.forced { () throws(ClientError) in
                try self.runtime.forceInclude(userId: self.userId, experimentKey: experimentName, groupIndex: groupIndex)
            }
        }
    }

    public func includeForce(experimentName: String, groupIndex: Int? = nil) async throws(SigmaError) {
        try await awaiting { () throws(SigmaError) in
            try forced { () throws(ClientError) in
                try runtime.forceInclude(userId: userId, experimentKey: experimentName, groupIndex: groupIndex)
            }
        }
    }

    /// Keeps the user out of experiment `experimentName`.
    public func excludeForce(experimentName: String, onSuccess: SigmaSuccessCallback<Void>?,
                             onError: SigmaErrorCallback?) {
        callback(onSuccess, onError) { () throws(SigmaError) in
            try self.forced { () throws(ClientError) in
                try self.runtime.forceExclude(userId: self.userId, experimentKey: experimentName)
            }
        }
    }

    public func excludeForce(experimentName: String) async throws(SigmaError) {
        try await awaiting { () throws(SigmaError) in
            try forced { () throws(ClientError) in try runtime.forceExclude(userId: userId, experimentKey: experimentName) }
        }
    }

    /// Keeps the user out of every experiment.
    public func excludeForceAll(onSuccess: SigmaSuccessCallback<Void>?, onError: SigmaErrorCallback?) {
        callback(onSuccess, onError) { () throws(SigmaError) in try self.excludeAll() }
    }

    public func excludeForceAll() async throws(SigmaError) {
        try await awaiting { () throws(SigmaError) in try excludeAll() }
    }

    private func excludeAll() throws(SigmaError) {
        try forced { () throws(ClientError) in
            try runtime.ensureOpen()
            runtime.overrides.setExcludedFromAll(userId: userId, true)
        }
    }

    private func forced(_ body: () throws(ClientError) -> Void) throws(SigmaError) {
        do throws(ClientError) { try body() } catch { throw SigmaError(error) }
    }
}

/// Sigma's SigmaExperiment: the user's group (variation) in one experiment and its parameters.
public struct SigmaExperiment: Sendable {
    let experiment: UserExperiment

    init(_ experiment: UserExperiment) { self.experiment = experiment }

    public var id: String { experiment.entity.id.text }
    public var name: String { experiment.entity.key.text }
    /// The variation's position in the experiment (Sigma's userGroupIndex).
    public var groupIndex: Int { experiment.variation }
    public var variationId: String { experiment.chosen.id.text }
    public var variationKey: String { experiment.chosen.key.text }

    /// Parameter `name` of the user's group: nil when the group has no value for it, when there is no such
    /// parameter, or when it has another type (the seed's signature does not throw; the reason is logged
    /// by nobody, so use `parameterValue` to see it).
    public func getParamValue<T: SigmaPropertyType>(name: String) -> T? {
        try? parameterValue(name: name)
    }

    /// The same, with the reason when there is no value: `.notFound`, `.typeMismatch`.
    public func parameterValue<T: SigmaPropertyType>(name: String) throws(SigmaError) -> T? {
        do throws(ClientError) {
            return try experiment.parameter(name, as: T.sigmaValueType).flatMap { T(sigmaValue: $0) }
        } catch {
            throw SigmaError(error)
        }
    }

    /// The value flag `flagName` gets from this group when this experiment decides it: without
    /// `variableKey` whether the group turns the flag on, else that variable.
    public func getFeatureFlagValue<T: SigmaPropertyType>(flagName: String, variableKey: String? = nil)
        throws(SigmaError) -> T?
    {
        do throws(ClientError) {
            return try experiment.flagValue(flagKey: flagName, variableKey: variableKey, as: T.sigmaValueType)
                .flatMap { T(sigmaValue: $0) }
        } catch {
            throw SigmaError(error)
        }
    }
}
