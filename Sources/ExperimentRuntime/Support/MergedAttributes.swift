import ExperimentCore

/// Per-call attributes layered over the user's stored properties: per-call values win.
public struct MergedAttributes<CallAttributes: UserAttributes>: UserAttributes {
    public let call: CallAttributes
    public let stored: OwnedAttributes

    public init(call: CallAttributes, stored: OwnedAttributes) {
        self.call = call
        self.stored = stored
    }

    @inline(__always)
    public func value(named name: UTF8Text) -> AttributeValue? {
        if let found = call.value(named: name) { return found }
        return stored.isEmpty ? nil : stored.value(named: name)
    }

    public func isQualified(for segment: UTF8Text) -> Bool { call.isQualified(for: segment) }

    public func forEach(_ body: (UTF8Text, AttributeValue) -> Void) {
        call.forEach(body)
        guard !stored.isEmpty else { return }
        for entry in stored.entries where call.value(named: entry.key) == nil { body(entry.key, entry.value) }
    }
}
