/// Every message a decision adds to its reasons (`INCLUDE_REASONS`), worded exactly as the reference SDK
/// (optimizely-sdk 5.7.0) appends them to `decide_reasons`, byte for byte: reasons are compared message for
/// message by the differential tests. Each names the reference's constant or, where the reference writes
/// the message inline, the function that does.
///
/// Only what the reference appends to reasons is here; what it only logs (per-audience and per-condition
/// evaluation lines, "Assigned bucket ...") is not part of reasons.
///
/// The messages are only built when reasons are collected (`DecisionService.reasons` is nil otherwise).
public enum ReasonMessages {

    // MARK: forced decisions (enums.ForcedDecisionLogs)

    /// USER_HAS_FORCED_DECISION_WITHOUT_RULE_SPECIFIED / USER_HAS_FORCED_DECISION_WITH_RULE_SPECIFIED
    static func forcedDecision(variation: String, flag: String, rule: String?, user: String) -> String {
        if let rule {
            return "Variation (\(variation)) is mapped to flag (\(flag)), rule (\(rule)) and user (\(user)) in the forced decision map."
        }
        return "Variation (\(variation)) is mapped to flag (\(flag)) and user (\(user)) in the forced decision map."
    }

    /// USER_HAS_FORCED_DECISION_WITHOUT_RULE_SPECIFIED_BUT_INVALID / ..._WITH_RULE_SPECIFIED_BUT_INVALID
    static func invalidForcedDecision(flag: String, rule: String?, user: String) -> String {
        if let rule {
            return "Invalid variation is mapped to flag (\(flag)), rule (\(rule)) and user (\(user)) in the forced decision map."
        }
        return "Invalid variation is mapped to flag (\(flag)) and user (\(user)) in the forced decision map."
    }

    // MARK: holdouts (DecisionService.get_variation_for_holdout, get_decision_for_flag, get_variation_for_rollout)

    /// get_variation_for_holdout: the user fails the holdout's audiences.
    static func holdoutAudienceNotMet(user: String, holdout: String) -> String {
        "User '\(user)' does not meet the conditions for holdout '\(holdout)'."
    }

    /// get_variation_for_holdout: the user's bucket falls in no variation of the holdout.
    static func holdoutNotBucketed(user: String, holdout: String) -> String {
        "User '\(user)' is not bucketed into any variation for holdout '\(holdout)'."
    }

    /// get_variation_for_holdout: the user's bucket falls in one of the holdout's variations.
    static func holdoutVariation(user: String, variation: String, holdout: String) -> String {
        "The user '\(user)' is bucketed into variation '\(variation)' of holdout '\(holdout)'."
    }

    /// get_decision_for_flag: a global holdout caught the user.
    static func globalHoldout(user: String, holdout: String, flag: String) -> String {
        "The user '\(user)' is bucketed into holdout '\(holdout)' for feature flag '\(flag)'."
    }

    /// get_decision_for_flag: the global holdout lets targeted deliveries through.
    static func holdoutExcludesTargetedDeliveries(holdout: String) -> String {
        "Holdout '\(holdout)' excludes targeted deliveries. Targeted delivery rules will be evaluated."
    }

    /// get_decision_for_flag: no experiment rule decided; on to the rollout.
    static func holdoutContinuesToRollout(holdout: String) -> String {
        "Holdout \"\(holdout)\" has excludeTargetedDeliveries enabled, continuing to rollout evaluation."
    }

    /// get_decision_for_flag ("experiment rule") and get_variation_for_rollout ("delivery rule").
    static func localHoldout(user: String, holdout: String, ruleKind: String, rule: String) -> String {
        "The user '\(user)' is bucketed into local holdout '\(holdout)' for \(ruleKind) '\(rule)'."
    }

    // MARK: audiences (helpers/audience.py does_user_meet_audience_conditions, enums.*AudienceEvaluationLogs)

    /// ExperimentAudienceEvaluationLogs.EVALUATING_AUDIENCES_COMBINED (experiments and holdouts) and
    /// RolloutRuleAudienceEvaluationLogs.EVALUATING_AUDIENCES_COMBINED (delivery rules). `conditions` is
    /// the reference's `json.dumps` of the rule's audienceConditions or audienceIds (`PythonJSONText`).
    static func evaluatingAudiences(_ scope: AudienceScope, conditions: String) -> String {
        switch scope {
        case .experiment(let key): return "Evaluating audiences for experiment \"\(key)\": \(conditions)."
        case .rule(let label): return "Evaluating audiences for rule \(label): \(conditions)."
        }
    }

    /// ExperimentAudienceEvaluationLogs / RolloutRuleAudienceEvaluationLogs.AUDIENCE_EVALUATION_RESULT_COMBINED
    static func audiencesResult(_ scope: AudienceScope, _ result: Bool) -> String {
        let value = result ? "TRUE" : "FALSE"
        switch scope {
        case .experiment(let key): return "Audiences for experiment \"\(key)\" collectively evaluated to \(value)."
        case .rule(let label): return "Audiences for rule \(label) collectively evaluated to \(value)."
        }
    }

    /// Which of the reference's two audience log classes a message uses.
    enum AudienceScope {
        /// ExperimentAudienceEvaluationLogs, with the experiment's (or holdout's) key.
        case experiment(String)
        /// RolloutRuleAudienceEvaluationLogs, with the rule's position ("1", "2", ...) or "Everyone Else".
        case rule(String)
    }

    // MARK: experiments (DecisionService.get_variation and its helpers)

    /// get_variation
    static func experimentNotRunning(experiment: String) -> String {
        "Experiment \"\(experiment)\" is not running."
    }

    /// get_forced_variation (set_forced_variation's map); the reference writes no final period.
    static func forcedVariation(variation: String, experiment: String, user: String) -> String {
        "Variation \"\(variation)\" is mapped to experiment \"\(experiment)\" and user \"\(user)\" in the forced variation map"
    }

    /// get_whitelisted_variation
    static func whitelisted(user: String, variation: String) -> String {
        "User \"\(user)\" is forced in variation \"\(variation)\"."
    }

    /// get_variation, a stored (sticky) decision. The reference says "variation ID" but prints
    /// `str(variation)` and `str(experiment)`, which are their keys.
    static func storedVariation(variation: String, experiment: String, user: String) -> String {
        "Returning previously activated variation ID \"\(variation)\" of experiment \"\(experiment)\" for user \"\(user)\" from user profile."
    }

    /// get_variation
    static func experimentAudienceNotMet(user: String, experiment: String) -> String {
        "User \"\(user)\" does not meet conditions to be in experiment \"\(experiment)\"."
    }

    /// get_variation
    static func experimentVariation(user: String, variation: String, experiment: String) -> String {
        "User \"\(user)\" is in variation \"\(variation)\" of experiment \(experiment)."
    }

    /// get_variation
    static func noVariation(user: String) -> String {
        "User \"\(user)\" is in no variation."
    }

    // MARK: bucketing (bucketer.py, DecisionService._get_bucketing_id)

    /// _get_bucketing_id
    static let bucketingIdNotString = "Bucketing ID attribute is not a string. Defaulted to user_id."

    /// Bucketer.bucket: the bucket falls in no range, or in one whose entityId is empty.
    static let emptyTrafficRange = "Bucketed into an empty traffic range. Returning nil."

    /// Bucketer.bucket_to_entity_id: the group's bucket falls in no range (or an empty entityId).
    static func inNoGroupExperiment(user: String) -> String {
        "User \"\(user)\" is in no experiment."
    }

    /// Bucketer.bucket_to_entity_id: the group's bucket names another experiment.
    static func notInGroupExperiment(user: String, experiment: String, group: String) -> String {
        "User \"\(user)\" is not in experiment \"\(experiment)\" of group \(group)."
    }

    /// Bucketer.bucket_to_entity_id: the group's bucket names this experiment.
    static func inGroupExperiment(user: String, experiment: String, group: String) -> String {
        "User \"\(user)\" is in experiment \(experiment) of group \(group)."
    }

    // MARK: rollouts (DecisionService.get_variation_for_rollout)

    static func noRollout(flag: String) -> String { "There is no rollout of feature \(flag)." }

    static func rolloutWithoutRules(rollout: String) -> String { "Rollout \(rollout) has no experiments." }

    static func ruleAudienceMet(user: String, label: String) -> String {
        "User \"\(user)\" meets audience conditions for targeting rule \(label)."
    }

    static func ruleAudienceNotMet(user: String, label: String) -> String {
        "User \"\(user)\" does not meet audience conditions for targeting rule \(label)."
    }

    static func ruleBucketed(user: String, label: String) -> String {
        "User \"\(user)\" bucketed into a targeting rule \(label)."
    }

    static func ruleNotBucketed(user: String, label: String) -> String {
        "User \"\(user)\" not bucketed into a targeting rule \(label). Checking \"Everyone Else\" rule now."
    }

    // MARK: Sigma forced membership (this library's own; the reference has no such override)

    static func forceExcluded(user: String, experiment: String) -> String {
        "User \"\(user)\" is force-excluded from experiment \"\(experiment)\"."
    }

    static func forceIncludedInVariation(user: String, variation: String, experiment: String) -> String {
        "User \"\(user)\" is force-included in variation \"\(variation)\" of experiment \"\(experiment)\"."
    }

    static func forceIncluded(user: String, experiment: String, variation: String) -> String {
        "User \"\(user)\" is force-included in experiment \"\(experiment)\", variation \"\(variation)\"."
    }
}
