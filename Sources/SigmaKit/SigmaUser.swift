import ExperimentCore
import ExperimentKit
import ExperimentRuntime

/// Sigma's user: an id (experiments split by it) and properties, stored under the keys audiences see
/// (`profile_id`, `device_id`, `email`, `app_version`, `os_name`, `os_version`, `geo_code`, `geo_country`,
/// `geo_state`, `geo_city`, `custom.<key>`). Nothing is detected from the device: a server has none, so only
/// what the builder sets is known.
public struct SigmaUser: Sendable, Equatable {
    /// nil: the client gives the user a random id (as Sigma does for an anonymous user).
    public let userId: String?
    /// The properties by the key they are stored under.
    public let properties: [String: JSON]

    /// Sigma's SigmaUser.Builder: each setter returns the builder, so calls chain.
    public final class Builder {
        var userId: String?
        var properties: [String: JSON]

        public init() {
            userId = nil
            properties = [:]
        }

        /// A builder holding `user`'s values (editUserProperties starts from the current user).
        init(_ user: SigmaUser) {
            userId = user.userId
            properties = user.properties
        }

        @discardableResult public func setUserId(_ id: String) -> Builder { userId = id; return self }
        @discardableResult public func setProfileId(_ id: String) -> Builder { set("profile_id", id) }
        @discardableResult public func setDeviceId(_ id: String) -> Builder { set("device_id", id) }
        @discardableResult public func setEmail(_ email: String) -> Builder { set("email", email) }
        @discardableResult public func setAppVersion(_ version: String) -> Builder { set("app_version", version) }
        @discardableResult public func setOsName(_ name: String) -> Builder { set("os_name", name) }
        @discardableResult public func setOsVersion(_ version: String) -> Builder { set("os_version", version) }
        @discardableResult public func setGeoCode(_ code: String) -> Builder { set("geo_code", code) }
        @discardableResult public func setGeoCountry(_ country: String) -> Builder { set("geo_country", country) }
        @discardableResult public func setGeoState(_ state: String) -> Builder { set("geo_state", state) }
        @discardableResult public func setGeoCity(_ city: String) -> Builder { set("geo_city", city) }

        /// Property `custom.<key>`. Booleans and numbers stay typed (audience conditions compare them as
        /// such); any other value is stored as its description.
        @discardableResult
        public func setCustomProperty<Value: CustomStringConvertible>(_ value: Value, key: String) -> Builder {
            set(SigmaProperties.customPrefix + key, Self.typed(value))
        }

        public func build() -> SigmaUser { SigmaUser(userId: userId, properties: properties) }

        private func set(_ key: String, _ text: String) -> Builder { set(key, JSON.string(text)) }

        private func set(_ key: String, _ value: JSON) -> Builder {
            properties[key] = value
            return self
        }

        private static func typed<Value: CustomStringConvertible>(_ value: Value) -> JSON {
            switch value {
            case let flag as Bool: return .bool(flag)
            case let number as Int: return .int(Int64(number))
            case let number as Double: return .double(number)
            default: return .string(value.description)
            }
        }
    }

    /// The properties as the runtime stores them (a key Sigma refuses, such as an empty custom name, is
    /// reported in `refused` and left out).
    func runtimeProperties() -> (accepted: [(key: String, value: OwnedValue)], refused: [String]) {
        var accepted: [(key: String, value: OwnedValue)] = []
        var refused: [String] = []
        for key in properties.keys.sorted() {
            let (owned, kind) = Self.owned(properties[key]!)
            if let problem = SigmaProperties.problem(key: key, kind: kind) {
                refused.append(problem)
            } else {
                accepted.append((key, owned))
            }
        }
        return (accepted, refused)
    }

    private static func owned(_ value: JSON) -> (OwnedValue, SigmaProperties.ValueKind) {
        switch value {
        case .bool(let flag): return (.bool(flag), .bool)
        case .int(let number): return (.int(number), .number)
        case .double(let number): return (.double(number), .number)
        case .string(let text): return (.string(Array(text.utf8)), .string)
        case .null, .array, .object: return (.null, .null)
        }
    }
}
