import Testing
@testable import ExperimentCore

// The C ABI hands out config strings as char * and their byte lengths from the storage (exp_decision_text_n):
// the length must cover NUL bytes inside the text and stay right across blocks and large values.

@Suite struct StringStorageTests {
    @Test func storedLengthCoversEmbeddedNulAcrossBlocksAndLargeValues() {
        let storage = StringStorage()
        let texts = ["", "a", "a\u{0}b", "\u{0}", "key\u{0}", String(repeating: "x", count: 300),
                     String(repeating: "y\u{0}", count: 40_000)] + (0..<500).map { "flag-\($0)\u{0}\($0)" }
        let stored = texts.map { storage.store($0) }
        for (text, pointer) in zip(texts, stored) {
            let length = StringStorage.storedLength(of: pointer)
            #expect(length == text.utf8.count)
            let bytes = UnsafeRawBufferPointer(start: UnsafeRawPointer(pointer), count: length + 1)
            #expect(Array(bytes.prefix(length)) == Array(text.utf8))
            #expect(bytes[length] == 0)  // still NUL-terminated
        }
    }

    @Test func configStringKeepsItsWholeLength() {
        let storage = StringStorage()
        let key = ConfigString("fl\u{0}ag", in: storage)
        #expect(StringStorage.storedLength(of: key.cString) == 5 && key.bytes.count == 5)
    }
}
