/// The reference SDK's decide options, as the bit set the C ABI passes (EXP_DECIDE_*).
public struct DecideOptions: OptionSet, Sendable, Hashable {
    public let rawValue: UInt32
    @inlinable
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let disableDecisionEvent = DecideOptions(rawValue: 1 << 0)
    public static let enabledFlagsOnly = DecideOptions(rawValue: 1 << 1)
    public static let ignoreUserProfileService = DecideOptions(rawValue: 1 << 2)
    public static let includeReasons = DecideOptions(rawValue: 1 << 3)
    public static let excludeVariables = DecideOptions(rawValue: 1 << 4)
    /// CMAB experiments: fetch a prediction without reading or writing the CMAB cache.
    public static let ignoreCMABCache = DecideOptions(rawValue: 1 << 5)
    /// CMAB experiments: empty the whole CMAB cache before deciding.
    public static let resetCMABCache = DecideOptions(rawValue: 1 << 6)
    /// CMAB experiments: drop the user's cached prediction for the rule before deciding.
    public static let invalidateUserCMABCache = DecideOptions(rawValue: 1 << 7)

    /// The eight options above as one constant (HotPathTests checks it equals their union): each decide call
    /// validates its options against it, and a constant reads no global and builds no set.
    @inlinable
    public static var all: DecideOptions { DecideOptions(rawValue: 0b1111_1111) }

    public static let names: [(String, DecideOptions)] = [
        ("DISABLE_DECISION_EVENT", .disableDecisionEvent), ("ENABLED_FLAGS_ONLY", .enabledFlagsOnly),
        ("IGNORE_USER_PROFILE_SERVICE", .ignoreUserProfileService), ("INCLUDE_REASONS", .includeReasons),
        ("EXCLUDE_VARIABLES", .excludeVariables), ("IGNORE_CMAB_CACHE", .ignoreCMABCache),
        ("RESET_CMAB_CACHE", .resetCMABCache), ("INVALIDATE_USER_CMAB_CACHE", .invalidateUserCMABCache),
    ]

    public init?(name: String) {
        guard let match = DecideOptions.names.first(where: { $0.0 == name }) else { return nil }
        self = match.1
    }
}

/// Decision reasons, collected only when asked for (INCLUDE_REASONS). Callers hold an optional log and
/// write `reasons?.add("...")`: with no log, optional chaining skips building the message entirely.
public final class ReasonLog {
    public private(set) var messages: [String] = []

    public init() {}

    public func add(_ message: String) { messages.append(message) }

    /// How many leading messages explain the flag-level forced decision. The reference keeps those apart
    /// from the flag's own reasons: they are not repeated (below), and decide_for_keys does not repeat
    /// them for a key asked for twice.
    public private(set) var forcedDecisionCount = 0

    public func endForcedDecisionReasons() { forcedDecisionCount = messages.count }

    /// Appends again the flag's own reasons so far. The reference's get_decision_for_flag hands its
    /// reasons to get_variation, which returns them with its own, and then appends that whole list to the
    /// same reasons: each experiment rule it evaluates repeats what came before.
    public func repeatFlagReasons() {
        messages.append(contentsOf: messages[forcedDecisionCount...])
    }
}
