import ExperimentCore

/// Sigma's forced memberships by experiment name (includeForce / excludeForce): the name is resolved to the
/// experiment's id in the current datafile, and memberships are kept by id (so a later datafile that renames
/// the experiment keeps them). Shared by exp_force_include_key / exp_force_exclude_key and the Swift facade.
extension Client {
    /// The experiment named `key` (not a delivery rule): NOT_READY without a datafile,
    /// UNKNOWN_EXPERIMENT for a name the datafile lacks.
    public func sigmaExperiment(key: String) throws(ClientError) -> Experiment {
        let config = try config()
        guard let index = config.experimentKeyIndex.find(key), config.experiments[index].kind == .experiment else {
            throw ClientError(.unknownExperiment, "unknown experiment \"\(key)\"")
        }
        return config.experiments[index]
    }

    /// The user is in experiment `key`: at the variation position `groupIndex`, or bucketed as usual (nil).
    /// UNKNOWN_VARIATION for a position the experiment lacks. Persisted.
    public func forceInclude(userId: String, experimentKey key: String, groupIndex: Int?) throws(ClientError) {
        try ensureOpen()
        let experiment = try sigmaExperiment(key: key)
        let id = experiment.id.text
        if let groupIndex {
            guard groupIndex >= 0, groupIndex < experiment.variations.count else {
                throw ClientError(.unknownVariation, "experiment \"\(key)\" (id \(id)) has "
                                  + "\(experiment.variations.count) variations: no group index \(groupIndex)")
            }
        }
        overrides.setMembership(userId: userId, experimentId: id, .included(variationIndex: groupIndex))
    }

    /// The user is kept out of experiment `key`. Persisted.
    public func forceExclude(userId: String, experimentKey key: String) throws(ClientError) {
        try ensureOpen()
        overrides.setMembership(userId: userId, experimentId: try sigmaExperiment(key: key).id.text, .excluded)
    }

    /// The user's forced membership of experiment `key` removed (back to bucketing).
    public func forceClear(userId: String, experimentKey key: String) throws(ClientError) {
        try ensureOpen()
        overrides.setMembership(userId: userId, experimentId: try sigmaExperiment(key: key).id.text, nil)
    }
}
