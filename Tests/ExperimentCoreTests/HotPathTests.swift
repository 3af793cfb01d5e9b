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
