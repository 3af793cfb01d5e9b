import ExperimentCore

/// The host's own store (Cassandra, memcached, its database...), reached through a lookup/save pair;
/// the C ABI wraps the host's function pointers into these closures. Profiles cross as JSON text.
public final class CallbackProfileStore: ProfileStore, @unchecked Sendable {
    public let name = "callbacks"
    /// The profile JSON of a user, nil when the host has none; throws when the host reports a failure.
    public typealias Lookup = @Sendable (String) throws(ClientError) -> String?
    /// Saves a user's profile JSON; throws when the host reports a failure.
    public typealias Save = @Sendable (String, String) throws(ClientError) -> Void

    private let lookupProfile: Lookup
    private let saveProfile: Save

    public init(lookup: @escaping Lookup, save: @escaping Save) {
        self.lookupProfile = lookup
        self.saveProfile = save
    }

    public func lookup(userId: String) throws(ClientError) -> BucketMap? {
        guard let text = try lookupProfile(userId) else { return nil }
        return try ProfileJSON.decode(text)
    }

    public func save(userId: String, map: BucketMap) throws(ClientError) {
        try saveProfile(userId, ProfileJSON.encode(userId: userId, map: map))
    }
}
