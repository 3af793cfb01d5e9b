import ExperimentCore

/// A user's sticky assignments: experiment id -> variation id (the reference's experiment_bucket_map).
public typealias BucketMap = [String: String]

/// Where profiles live. Implementations are called from decision threads concurrently and must guard
/// their own connections; a failure is thrown as a ClientError(.storeFailed) and never fails a decision.
public protocol ProfileStore: AnyObject, Sendable {
    /// Names the store in logs and stats ("sqlite", "redis", "callbacks").
    var name: String { get }
    /// The user's profile, or nil when the store has none.
    func lookup(userId: String) throws(ClientError) -> BucketMap?
    /// Replaces the user's profile.
    func save(userId: String, map: BucketMap) throws(ClientError)
    /// Deletes the user's profile; true when there was one.
    func remove(userId: String) throws(ClientError) -> Bool
}

extension ProfileStore {
    /// A store that cannot delete (the host's lookup/save callbacks) refuses.
    public func remove(userId: String) throws(ClientError) -> Bool {
        throw ClientError(.invalidArgument, "the \(name) profile store cannot delete a profile")
    }
}

/// The documented profile JSON: `{"user_id": ..., "experiment_bucket_map": {"<id>": {"variation_id": ...}}}`.
public enum ProfileJSON {
    public static let maxBytes = 1 << 20

    public static func encode(userId: String, map: BucketMap) -> String {
        var writer = JSONWriter(reservingCapacity: 64 + map.count * 48)
        writer.beginObject()
        writer.field("user_id", userId)
        writer.key("experiment_bucket_map")
        writer.beginObject()
        // Sorted so equal profiles are equal text (stable storage, readable diffs).
        for experimentId in map.keys.sorted() {
            writer.key(experimentId)
            writer.beginObject()
            writer.field("variation_id", map[experimentId]!)
            writer.endObject()
        }
        writer.endObject()
        writer.endObject()
        return writer.text
    }

    /// Parses a stored or host-supplied profile. Entries that are not `{"variation_id": "<string>"}` are
    /// skipped, as the reference ignores them; a document that is not a profile at all is an error.
    public static func decode(_ bytes: UnsafeRawBufferPointer) throws(ClientError) -> BucketMap {
        let document: JSONDocument
        do {
            document = try JSONDocument.parse(bytes, what: "profile", maxBytes: maxBytes, maxDepth: 16)
        } catch {
            throw ClientError(.storeFailed, "profile: \(error.message)")
        }
        let root = document.root
        guard root.kind == .object else {
            throw ClientError(.storeFailed, "profile: expected a JSON object, got \(root.kindName)")
        }
        guard let buckets = root.member("experiment_bucket_map"), buckets.kind == .object,
              root.member("user_id") != nil else {
            throw ClientError(.storeFailed, "profile: missing user_id or experiment_bucket_map")
        }
        var map = BucketMap()
        for (experimentId, entry) in buckets.members {
            if let variationId = entry.member("variation_id")?.string { map[experimentId] = variationId }
        }
        return map
    }

    public static func decode(_ text: String) throws(ClientError) -> BucketMap {
        var copy = text
        let decoded: Result<BucketMap, ClientError> = copy.withUTF8 { buffer in
            do throws(ClientError) { return .success(try decode(UnsafeRawBufferPointer(buffer))) } catch { return .failure(error) }
        }
        return try decoded.get()
    }
}
