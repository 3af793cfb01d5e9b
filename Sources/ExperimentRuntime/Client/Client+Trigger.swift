import ExperimentCore

extension Client {
    /// Kameleoon triggerExperiment: the id of the variation experiment `experimentId` gives the user (sticky,
    /// with its impression and the user's pending data). The errors say why there is none: UNKNOWN_EXPERIMENT,
    /// NOT_TARGETED, NOT_ALLOCATED (not running, or outside the traffic allocation). Shared by
    /// exp_trigger_experiment and the Swift facade, so both answer alike.
    public func triggerExperiment<A: UserAttributes>(config: ProjectConfig, experimentId id: String, userId: UTF8Text,
                                                     attributes: A) throws(ClientError) -> String
    {
        guard let experiment = config.experimentIdIndex.find(id), config.experiments[experiment].kind == .experiment else {
            throw ClientError(.unknownExperiment, "unknown experiment id \"\(id)\"")
        }
        let entity = config.experiments[experiment]
        let key = entity.key.text
        switch experimentOutcome(config: config, experiment: experiment, userId: userId, attributes: attributes,
                                 call: .trigger) {
        case .variation(let variation):
            return entity.variations[Int(variation)].id.text
        case .notRunning:
            throw ClientError(.notAllocated, "experiment \"\(key)\" (id \(id)) is not running")
        case .notTargeted:
            throw ClientError(.notTargeted, "user does not meet the audience conditions of experiment \"\(key)\" (id \(id))")
        case .notAllocated:
            throw ClientError(.notAllocated, "user falls outside the traffic allocation of experiment \"\(key)\" (id \(id))")
        }
    }
}
