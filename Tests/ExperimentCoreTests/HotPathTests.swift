import Testing
@testable import ExperimentCore

// The decision hot path's shortcuts must give exactly what the general code gives: the zero-padded
// MurmurHash3 variant, the plain-version semver comparison, the word-at-a-time key index and byte compare.

@Suite struct HotPathTests {
    /// `second` copied into memory followed by 8 zero bytes, as HotTables stores ids.
    private func withZeroPadded<R>(_ second: ArraySlice<UInt8>, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        let padded = Array(second) + [UInt8](repeating: 0, count: 8)
        return padded.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[..<second.count])) }
    }

    @Test func zeroPaddedHashMatchesReferenceAtEverySplitPoint() {
        for v in murmurVectors {
            let b = Array(v.text.utf8)
            for k in 0...b.count {
                let h = b[..<k].withUnsafeBytes { first in
                    withZeroPadded(b[k...]) { second in
                        MurmurHash3.x86_32(concatenating: first, zeroPadded: second, seed: v.seed)
                    }
                }
                #expect(h == v.hash, "\(b) split at \(k) seed \(v.seed)")
            }
        }
    }

    @Test func zeroPaddedHashMatchesTheGeneralOneForBucketingKeys() {
        for v in bucketingKeyVectors {
            let id = Array(v.bucketingID.utf8), parent = Array(v.parentID.utf8)
            let h = id.withUnsafeBytes { first in
                withZeroPadded(parent[...]) { MurmurHash3.x86_32(concatenating: first, zeroPadded: $0, seed: 1) }
            }
            #expect(h == v.hash, "\(v.bucketingID) + \(v.parentID)")
        }
        // Every length combination of short ids.
        let text = Array("0123456789abcdefghijklmnopqrstuvwxyz-_user".utf8)
        for n1 in 0...12 {
            for n2 in 0...12 {
                let first = text[..<n1], second = text[n1..<(n1 + n2)]
                let general = first.withUnsafeBytes { a in
                    second.withUnsafeBytes { b in MurmurHash3.x86_32(concatenating: a, b, seed: 1) }
                }
                let padded = first.withUnsafeBytes { a in
                    withZeroPadded(second) { MurmurHash3.x86_32(concatenating: a, zeroPadded: $0, seed: 1) }
                }
                #expect(padded == general, "lengths \(n1) + \(n2)")
            }
        }
    }

    @Test func plainVersionsCompareAsTheGeneralRules() {
        let versions = ["0", "1", "01", "1.0", "1.00", "1.0.0", "1.0.1", "1.2", "1.2.3", "1.10.0", "2", "2.0.0",
                        "10.0.0", "0.0.0", "999999999999999999", "1000000000000000000", "0000000000000000001",
                        "18446744073709551615", "1.999999999999999999", "1.2.3.4", "1..2", ".1", "1.", "",
                        "1.2.3-beta", "1.2.3+build", "1 .2", "a.b", "1.2.x"]
        for target in versions {
            for user in versions {
                let fast = target.utf8.withContiguousStorageIfAvailable { t in
                    user.utf8.withContiguousStorageIfAvailable { u in SemanticVersion.compare(target: t, user: u) }
                }
                let general = target.utf8.withContiguousStorageIfAvailable { t in
                    user.utf8.withContiguousStorageIfAvailable { u in SemanticVersion.compareASCII(target: t, user: u) }
                }
                #expect(fast == general, "target \(target.debugDescription) user \(user.debugDescription)")
            }
        }
    }

    @Test func keyIndexFindsEveryKeyOfEveryLength() {
        var keys: [[UInt8]] = []
        for length in 0...40 {
            keys.append((0..<length).map { UInt8(0x61 + ($0 * 7 + length) % 26) })
            keys.append([UInt8](repeating: 0x78, count: length))
        }
        var index = KeyIndex(capacity: 4)
        for (position, key) in keys.enumerated() { index.insert(key, position) }
        for (position, key) in keys.enumerated() {
            let expected = keys.firstIndex(of: key)!  // the first insertion of a key wins
            #expect(key.withUnsafeBufferPointer { index.find($0) } == expected, "\(key)")
            let cString = key.map { CChar(bitPattern: $0) } + [0]
            #expect(cString.withUnsafeBufferPointer { index.find(cString: $0.baseAddress!) } == expected)
            _ = position
        }
        #expect(index.find("not there") == nil)
        #expect(index.find("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx") == nil)  // 41 bytes
    }

    @Test func shortBytesEqualIsMemcmp() {
        let a = Array("abcdefghijklmnopqrstuvwxyz0123456789".utf8)
        for count in 0...a.count {
            for flip in 0..<count {
                var b = Array(a[..<count])
                #expect(a.withUnsafeBytes { x in b.withUnsafeBytes { ShortBytes.equal(x.baseAddress!, $0.baseAddress!, count: count) } })
                b[flip] ^= 0x20
                #expect(!a.withUnsafeBytes { x in b.withUnsafeBytes { ShortBytes.equal(x.baseAddress!, $0.baseAddress!, count: count) } },
                        "count \(count) flip \(flip)")
            }
        }
    }
}

/// Attributes from a dictionary, for evaluating condition trees directly.
private struct TestLeaves: LeafEvaluator {
    let values: [String: AttributeValue]

    func value(named name: UTF8Text) -> AttributeValue? { values[String(decoding: name, as: UTF8.self)] }

    func evaluate(_ leaf: LeafCondition) -> Bool? {
        guard leaf.hasKnownType else { return nil }
        let user = leaf.attribute.flatMap { value(named: $0) }
        return LeafMatcher.evaluate(leaf.match, condition: leaf.value, user: user)
    }
}

@Suite struct AnyOfStringsTests {
    private func leaf(_ name: String?, _ match: MatchType = .exact, value: ConditionValue,
                      knownType: Bool = true) -> LeafCondition {
        LeafCondition(attribute: name.map(configBytes), hasKnownType: knownType, match: match, value: value)
    }

    /// The reference's "or": true if any operand is true, else unknown if any is unknown, else false.
    private func referenceOr(_ leaves: [LeafCondition], _ user: TestLeaves) -> Bool? {
        var sawUnknown = false
        for leaf in leaves {
            switch user.evaluate(leaf) {
            case true?: return true
            case nil: sawUnknown = true
            case false?: break
            }
        }
        return sawUnknown ? nil : false
    }

    @Test func orOfExactStringsEvaluatesAsTheGeneralOr() {
        let nl = ConditionValue.string(configBytes("NL")), de = ConditionValue.string(configBytes("DE"))
        let shapes: [[LeafCondition]] = [
            [leaf("country", value: nl), leaf("country", value: de)],                       // converted
            [leaf("country", value: nl), leaf("country", value: de), leaf("country", value: .string(configBytes("")))],
            [leaf("country", value: nl), leaf("region", value: de)],                        // two attributes
            [leaf("country", value: nl), leaf("country", .substring, value: de)],                  // another match
            [leaf("country", value: nl), leaf("country", value: .int(3))],                  // a number
            [leaf("country", value: nl), leaf("country", value: de, knownType: false)],     // unknown type
            [leaf("country", value: nl), leaf(nil, value: de)],                             // no name
            [leaf("country", value: nl)],                                                   // one operand
        ]
        let users: [[String: AttributeValue]] = [
            [:], ["country": .null], ["country": .bool(true)], ["country": .int(3)], ["country": .double(3)],
            ["country": .string(configBytes("NL"))], ["country": .string(configBytes("DE"))],
            ["country": .string(configBytes("FR"))], ["country": .string(configBytes(""))],
            ["country": .string(configBytes("NL")), "region": .string(configBytes("DE"))],
            ["region": .string(configBytes("DE"))],
        ]
        for (shapeIndex, leaves) in shapes.enumerated() {
            var forest = ConditionForest()
            let indices = leaves.map { forest.addLeaf($0) }
            let audience = forest.addAudience(.or(indices.map { .leaf($0) }))
            let root = forest.addRule(.or([.leaf(audience)]))
            let storage = StringStorage()  // owns the tables' memory
            let tables = forest.tables(in: storage)
            // The first two shapes take the one-lookup path, the others the general "or".
            #expect(tables.nodes.contains { $0.kind == .anyOfStrings } == (shapeIndex < 2), "shape \(shapeIndex)")
            for values in users {
                let user = TestLeaves(values: values)
                #expect(tables.evaluate(root, user) == referenceOr(leaves, user), "shape \(shapeIndex) user \(values)")
            }
            withExtendedLifetime(storage) {}
        }
    }

    @Test func allDecideOptionsIsTheUnionOfEveryOption() {
        let union: DecideOptions = [.disableDecisionEvent, .enabledFlagsOnly, .ignoreUserProfileService,
                                    .includeReasons, .excludeVariables, .ignoreCMABCache, .resetCMABCache,
                                    .invalidateUserCMABCache]
        #expect(DecideOptions.all == union)
        #expect(DecideOptions.names.reduce(DecideOptions()) { $0.union($1.1) } == DecideOptions.all)
    }
}
