/// Sticky bucketing as a decision sees it (the reference's user profile): a variation saved for an
/// experiment earlier is returned again, and a fresh bucketing is recorded so it can be saved.
///
/// Only experiments consult it (feature tests and legacy experiments), never delivery rules, at the
/// reference's place: after forced variations and the whitelist, before audiences. Implemented by the
/// runtime over its profile stores; `NoStickyAssignments` keeps decisions stateless.
public protocol StickyAssignments {
    /// False when there is no profile to read or write: decisions skip both steps.
    var isActive: Bool { get }
    /// The variation id saved for the experiment with id `experimentId`, if any.
    func savedVariation(experimentId: String) -> String?
    /// Records that the user was bucketed into `variationId` of `experimentId` (saved after the call).
    func record(experimentId: String, variationId: String)
}

/// No sticky bucketing: the stateless fast path.
public struct NoStickyAssignments: StickyAssignments {
    public init() {}
    @inline(__always) public var isActive: Bool { false }
    public func savedVariation(experimentId: String) -> String? { nil }
    public func record(experimentId: String, variationId: String) {}
}

/// A Sigma forced inclusion or exclusion for one experiment (persisted by the runtime). They win over
/// the datafile's forced lists and over traffic and audiences.
public enum ForcedMembership: Equatable, Sendable {
    /// Keep the user out of the experiment.
    case excluded
    /// Put the user in the experiment: in the variation at `variationIndex`, or the bucketed one when nil.
    case included(variationIndex: Int?)
}
