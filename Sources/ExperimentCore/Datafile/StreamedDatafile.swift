import CJSONC

/// A datafile read without json-c's tree of the whole text: json-c parses one element of a large
/// top-level array at a time, straight from the caller's bytes, the compiler reads it, and its tree is
/// freed before the next one is parsed. Peak memory is then one element's tree (json-c's tree of a whole
/// datafile is ~12x its size), and freeing a small, recently allocated tree is cheap where freeing a
/// large one is not.
///
/// This type only handles the top level's punctuation: `{`, `"name"`, `:`, `,`, `}` and the `[`, `,`, `]`
/// of the streamed arrays. json-c parses every value: the other top-level members at once (into one small
/// object, `skeleton`), each element of a streamed array when the compiler reaches it (`section(_:)`).
/// The compiler reads the sections in its own order, not the text's, so the walk first notes where each
/// element is (skipping strings and brackets, without judging the grammar: json-c does that when it parses
/// the element, and its end must be where the walk put it).
///
/// The result is the whole text's: the same depth limit (an element sits two levels down), the same
/// strict flags, the library's UTF-8 check of the whole text (first, before json-c parses any of it: so
/// json-c's own, weaker check is left out of these parses), the strict-token checks over every byte (done by the
/// walk as it skips, see `JSONStrictTokens`), a repeated top-level name keeps its last value, nothing may
/// follow the object. Anything this reader does not settle itself (a malformed
/// text, a NUL byte, a top-level array of another shape) makes `failed` true and the caller compiles the
/// whole text the usual way instead, which also words every error exactly as before. An element json-c
/// refuses does the same.
///
/// Readers of an element are valid while the element is the current one of its section's loop: a reader
/// kept longer must keep its document (`DatafileReader.value.document`) alive, as `readExperiments` keeps
/// the groups'.
final class StreamedDatafile {
    /// The top-level arrays the compiler reads element by element.
    static func isStreamed(_ name: String) -> Bool {
        switch name {
        case "attributes", "events", "audiences", "typedAudiences", "experiments", "rollouts", "groups",
             "featureFlags", "holdouts", "localHoldouts":
            return true
        default:
            return false
        }
    }

    private let text: UnsafeBufferPointer<UInt8>
    /// json-c tokeners for top-level values (one level down) and for elements of top-level arrays (two):
    /// the library's depth limit counts the levels above them.
    private let valueTokener: UnsafeMutablePointer<json_tokener>
    private let elementTokener: UnsafeMutablePointer<json_tokener>
    /// The top-level members that are not streamed, in one json-c object (a repeated name: its last value).
    private(set) var skeleton: JSONDocument
    /// Each streamed array's elements (a repeated name: the last array). At most ten: a list.
    private var sections: [StreamedSection] = []
    /// Set when the text needs the whole-text path (see the type's comment).
    var failed = false
    /// Set when the walk met a number token long enough to be an integer json-c clamps (past 64 bits) or
    /// a surrogate escape: the documents made from the text then keep what Python's `json` reads for those
    /// values (see `JSONDocument.noteChangedValues`).
    private var changedTokens = false
    /// The compilation's step callback (see `DatafileCompiler.compile(_:after:)`).
    let step: ((DatafileCompiler.Step) -> Void)?

    /// Walks the top level of `bytes` (`failed` tells whether it could).
    init(_ bytes: UnsafeRawBufferPointer, step: ((DatafileCompiler.Step) -> Void)?) {
        text = bytes.assumingMemoryBound(to: UInt8.self)
        self.step = step
        // json-c returns NULL only when out of memory.
        valueTokener = json_tokener_new_ex(Int32(DatafileCompiler.maxDepth - 1))!
        elementTokener = json_tokener_new_ex(Int32(DatafileCompiler.maxDepth - 2))!
        json_tokener_set_flags(valueTokener, exp_json_prevalidated_value_flags())
        json_tokener_set_flags(elementTokener, exp_json_prevalidated_value_flags())
        skeleton = JSONDocument(tree: json_object_new_object())
        guard text.count > 0, text.count <= min(DatafileCompiler.maxBytes, Int(Int32.max) - 1),
              UTF8Validation.firstInvalidByte(text) == nil,
              walk()
        else {
            failed = true
            return
        }
        if changedTokens { skeleton.noteChangedValues(in: text) }
    }

    deinit {
        json_tokener_free(valueTokener)
        json_tokener_free(elementTokener)
    }

    /// A streamed top-level array, or nil when the datafile has no such array (absent, or another JSON
    /// type: then it is a member of `skeleton`).
    func section(_ name: String) -> StreamedSection? { sections.first { $0.name == name } }

    /// json-c's parse of one element, as a document placed at `section.name[index]`; nil (and `failed`)
    /// when json-c refuses it or ends it elsewhere than the walk did.
    func element(of section: StreamedSection, at index: Int) -> JSONDocument? {
        let span = section.spans[index]
        guard let (tree, end) = parseValue(at: span.lowerBound, with: elementTokener), end == skipSpace(span.upperBound)
        else {
            failed = true
            return nil
        }
        section.parsedCount = max(section.parsedCount, index + 1)
        let document = JSONDocument(tree: tree)
        document.section = section.name
        document.sectionIndex = index
        if changedTokens { document.noteChangedValues(in: UnsafeBufferPointer(rebasing: text[span])) }
        return document
    }

    /// After the compilation: json-c parses (and frees at once) the elements the compiler did not read,
    /// so the whole text has been checked. False when the text needs the whole-text path.
    func finish() -> Bool {
        for section in sections where section.parsedCount < section.spans.count {
            guard check(section.spans[section.parsedCount...]) else { return false }
        }
        return !failed
    }

    /// Frees the skeleton's tree.
    func release() {
        skeleton = JSONDocument(tree: nil)
    }

    // MARK: the walk

    private static let space: UInt8 = 0x20, tab: UInt8 = 0x09, newline: UInt8 = 0x0A, carriageReturn: UInt8 = 0x0D
    private static let quote = UInt8(ascii: "\""), backslash = UInt8(ascii: "\\"), colon = UInt8(ascii: ":"),
                       comma = UInt8(ascii: ","), openBrace = UInt8(ascii: "{"), closeBrace = UInt8(ascii: "}"),
                       openBracket = UInt8(ascii: "["), closeBracket = UInt8(ascii: "]"),
                       singleQuote = UInt8(ascii: "'"), minus = UInt8(ascii: "-"), zero = UInt8(ascii: "0"),
                       nine = UInt8(ascii: "9")

    /// `{ "name": value, ... }` and nothing after it but whitespace.
    private func walk() -> Bool {
        var index = skipSpace(0)
        guard byte(index) == Self.openBrace else { return false }
        index = skipSpace(index + 1)
        if byte(index) == Self.closeBrace {
            return skipSpace(index + 1) == text.count
        }
        while true {
            guard byte(index) == Self.quote, let (name, nameEnd) = memberName(at: index) else { return false }
            index = skipSpace(nameEnd)
            guard byte(index) == Self.colon else { return false }
            index = skipSpace(index + 1)
            let isStreamedName = Self.isStreamed(name)
            if isStreamedName, byte(index) == Self.openBracket {
                guard let (spans, end) = elementSpans(at: index) else { return false }
                guard replaceSection(name, with: spans) else { return false }
                index = end
            } else {
                guard let (tree, end) = parseValue(at: index, with: valueTokener) else { return false }
                let value = UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: text[index..<end]))
                guard JSONStrictTokens.firstProblem(value, changedTokens: &changedTokens) == nil,
                      !isStreamedName || dropSection(name)
                else {
                    json_object_put(tree)
                    return false
                }
                // Takes the tree; a name given before keeps its position and gets this value, as in json-c.
                json_object_object_add(skeleton.tree, name, tree)
                index = end
            }
            index = skipSpace(index)
            if byte(index) == Self.comma {
                index = skipSpace(index + 1)
                continue
            }
            guard byte(index) == Self.closeBrace else { return false }
            return skipSpace(index + 1) == text.count
        }
    }

    /// A member name starting at the quote at `index`, as json-c stores names (up to an escaped NUL), and
    /// the index after its closing quote.
    private func memberName(at index: Int) -> (String, Int)? {
        guard let end = skipString(index) else { return nil }
        let inner = UnsafeBufferPointer(rebasing: text[(index + 1)..<(end - 1)])
        if !inner.contains(Self.backslash) { return (String(decoding: inner, as: UTF8.self), end) }
        guard let (tree, parsedEnd) = parseValue(at: index, with: valueTokener) else { return nil }
        defer { json_object_put(tree) }
        guard parsedEnd == skipSpace(end), let decoded = json_object_get_string(tree) else { return nil }
        return (String(cString: decoded), end)
    }

    /// The element ranges of the array starting at `index` and the index after its `]`.
    private func elementSpans(at index: Int) -> ([Range<Int>], Int)? {
        var spans: [Range<Int>] = []
        var index = skipSpace(index + 1)
        if byte(index) == Self.closeBracket { return (spans, index + 1) }
        while true {
            guard let end = skipValue(index) else { return nil }
            spans.append(index..<end)
            index = skipSpace(end)
            if byte(index) == Self.comma {
                index = skipSpace(index + 1)
                continue
            }
            guard byte(index) == Self.closeBracket else { return nil }
            return (spans, index + 1)
        }
    }

    /// A streamed array named again: the earlier one is still checked by json-c, then replaced.
    private func replaceSection(_ name: String, with spans: [Range<Int>]) -> Bool {
        guard dropSection(name) else { return false }
        json_object_object_del(skeleton.tree, name)
        sections.append(StreamedSection(name: name, spans: spans))
        return true
    }

    /// A streamed array replaced by a later value of its name: json-c checks its elements.
    private func dropSection(_ name: String) -> Bool {
        guard let index = sections.firstIndex(where: { $0.name == name }) else { return true }
        let section = sections.remove(at: index)
        return check(section.spans[...])
    }

    /// json-c parses each element and frees it at once.
    private func check(_ spans: ArraySlice<Range<Int>>) -> Bool {
        for span in spans {
            guard let (tree, end) = parseValue(at: span.lowerBound, with: elementTokener),
                  end == skipSpace(span.upperBound)
            else { return false }
            json_object_put(tree)
        }
        return true
    }

    /// json-c's parse of the value at `offset` (it stops after the value and the whitespace after it):
    /// the tree (owned by the caller) and the index where json-c stopped, or nil when it refused.
    private func parseValue(at offset: Int, with tokener: UnsafeMutablePointer<json_tokener>) -> (OpaquePointer?, Int)? {
        json_tokener_reset(tokener)
        let start = UnsafeRawPointer(text.baseAddress! + offset).assumingMemoryBound(to: CChar.self)
        let tree = exp_json_parse(tokener, start, Int32(text.count - offset))
        guard json_tokener_get_error(tokener) == json_tokener_success else {
            json_object_put(tree)
            return nil
        }
        return (tree, offset + Int(json_tokener_get_parse_end(tokener)))
    }

    // MARK: skipping (no judgement of the grammar: json-c parses what is skipped; but the tokens json-c's
    // strict mode takes and Python's `json` refuses are caught here, as the text goes by: see
    // `JSONStrictTokens`. A skipped value with one of them fails the walk.)

    @inline(__always)
    private func byte(_ index: Int) -> UInt8 {
        index < text.count ? text[index] : 0
    }

    private func skipSpace(_ start: Int) -> Int {
        var index = start
        while index < text.count {
            let next = text[index]
            guard next == Self.space || next == Self.newline || next == Self.carriageReturn || next == Self.tab
            else { break }
            index += 1
        }
        return index
    }

    /// The index after the string starting at the quote at `start`; nil when it does not end or holds a
    /// control character (a NUL included) written as it is.
    @inline(__always)
    private func skipString(_ start: Int) -> Int? {
        var index = start + 1
        while true {
            guard let found = Self.firstStringStop(in: text, from: index), text[found] >= Self.space else { return nil }
            if text[found] == Self.quote { return found + 1 }
            if JSONStrictTokens.isSurrogateEscape(text, at: found) { changedTokens = true }
            index = found + 2
        }
    }

    /// The index after the number token starting at `start`, or nil when Python's `json` would not read it
    /// as one (json-c's strict mode takes `1.`, `-01`...). `-Infinity` is a token of its own.
    private func skipNumber(_ start: Int) -> Int? {
        var index = start
        if text[index] == UInt8(ascii: "-"), byte(index + 1) == UInt8(ascii: "I") { return index + 1 }
        while index < text.count, JSONStrictTokens.isNumberByte(text[index]) { index += 1 }
        let token = UnsafeBufferPointer(rebasing: text[start..<index])
        if token.count >= JSONStrictTokens.longNumberBytes { changedTokens = true }
        return JSONStrictTokens.isJSONNumber(token) && !JSONStrictTokens.exceedsPythonIntDigits(token) ? index : nil
    }

    /// The index after the value starting at `start` (a string, a container with everything in it, or a
    /// scalar up to the next whitespace or punctuation).
    private func skipValue(_ start: Int) -> Int? {
        guard start < text.count else { return nil }
        var index = start
        switch text[index] {
        case Self.quote:
            return skipString(index)
        case Self.openBrace, Self.openBracket:
            var depth = 0
            while let found = Self.firstTokenStop(in: text, from: index) {
                switch text[found] {
                case Self.quote:
                    guard let end = skipString(found) else { return nil }
                    index = end
                    continue
                case Self.openBrace, Self.openBracket:
                    depth += 1
                case Self.closeBrace, Self.closeBracket:
                    depth -= 1
                    if depth == 0 { return found + 1 }
                case Self.singleQuote:
                    return nil
                default:
                    guard let end = skipNumber(found) else { return nil }
                    index = end
                    continue
                }
                index = found + 1
            }
            return nil
        case Self.comma, Self.closeBracket, Self.closeBrace, Self.singleQuote, 0:
            return nil
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            guard let end = skipNumber(index) else { return nil }
            index = end
            fallthrough
        default:
            while index < text.count {
                switch text[index] {
                case Self.space, Self.newline, Self.carriageReturn, Self.tab, Self.comma, Self.closeBracket,
                     Self.closeBrace:
                    return index
                default:
                    index += 1
                }
            }
            return nil
        }
    }

    // Eight bytes at a time: the walk skips most of a datafile, and a byte-by-byte loop costs a third
    // of json-c's own parse.

    private static let ones: UInt64 = 0x0101_0101_0101_0101, highBits: UInt64 = 0x8080_8080_8080_8080

    /// The high bit of each byte of `word` that equals `byte` (exact for the lowest such byte).
    @inline(__always)
    private static func bytes(of word: UInt64, equalTo byte: UInt8) -> UInt64 {
        let difference = word ^ (ones &* UInt64(byte))
        return (difference &- ones) & ~difference & highBits
    }

    @inline(__always)
    private static func word(_ text: UnsafeBufferPointer<UInt8>, at index: Int) -> UInt64 {
        UInt64(littleEndian: UnsafeRawPointer(text.baseAddress! + index).loadUnaligned(as: UInt64.self))
    }

    /// The high bit of each byte of `word` below 0x20 (exact for the lowest such byte).
    @inline(__always)
    private static func controlBytes(of word: UInt64) -> UInt64 {
        (word &- ones &* 0x20) & ~word & highBits
    }

    /// The high bit of each ASCII digit of `word` (exact: no carry crosses a byte).
    @inline(__always)
    private static func digitBytes(of word: UInt64) -> UInt64 {
        let low = word & ~highBits
        return (low &+ ones &* 0x50) & ~(low &+ ones &* 0x46) & ~word & highBits
    }

    /// In a string: the first index at or after `start` holding a quote, a backslash or a control character.
    @inline(__always)
    static func firstStringStop(in text: UnsafeBufferPointer<UInt8>, from start: Int) -> Int? {
        var index = start
        while index + 8 <= text.count {
            let word = Self.word(text, at: index)
            let found = bytes(of: word, equalTo: quote) | bytes(of: word, equalTo: backslash) | controlBytes(of: word)
            if found != 0 { return index + found.trailingZeroBitCount / 8 }
            index += 8
        }
        while index < text.count {
            if text[index] == quote || text[index] == backslash || text[index] < space { return index }
            index += 1
        }
        return nil
    }

    /// The stops of `firstTokenStop` below 0x40 (`"`, `'`, `-`, digits) and from 0x40 to 0x7F (brackets,
    /// braces), one bit per byte value.
    private static let lowTokenStops: UInt64 = 1 << 0x22 | 1 << 0x27 | 1 << 0x2D | 0x3FF << 0x30
    private static let highTokenStops: UInt64 = 1 << (0x5B - 0x40) | 1 << (0x5D - 0x40) | 1 << (0x7B - 0x40)
        | 1 << (0x7D - 0x40)

    @inline(__always)
    private static func isTokenStop(_ byte: UInt8) -> Bool {
        let bits = byte < 0x40 ? lowTokenStops : highTokenStops
        return byte < 0x80 && (bits >> UInt64(byte & 0x3F)) & 1 != 0
    }

    /// Between strings: the first index at or after `start` holding a quote, a bracket or brace, or the
    /// start of a token the strict checks read (a number, or a single quote).
    @inline(__always)
    static func firstTokenStop(in text: UnsafeBufferPointer<UInt8>, from start: Int) -> Int? {
        // What separates two strings is mostly a byte or two (`:`, `,`, `": "`): bytes one at a time first,
        // then eight at a time through longer runs (indentation).
        var index = start
        let scalarEnd = min(start + 8, text.count)
        while index < scalarEnd {
            if isTokenStop(text[index]) { return index }
            index += 1
        }
        while index + 8 <= text.count {
            let word = Self.word(text, at: index)
            // '[' and ']' differ from '{' and '}' in the 0x20 bit alone.
            let folded = word | (ones &* 0x20)
            let found = bytes(of: word, equalTo: quote) | bytes(of: folded, equalTo: openBrace)
                | bytes(of: folded, equalTo: closeBrace) | bytes(of: word, equalTo: singleQuote)
                | bytes(of: word, equalTo: minus) | digitBytes(of: word)
            if found != 0 { return index + found.trailingZeroBitCount / 8 }
            index += 8
        }
        while index < text.count {
            switch text[index] {
            case quote, openBrace, openBracket, closeBrace, closeBracket, singleQuote, minus, zero...nine: return index
            default: index += 1
            }
        }
        return nil
    }
}

/// A streamed top-level array: where its elements are, and how many leading ones json-c has parsed
/// (every one must be, see `StreamedDatafile.finish`).
final class StreamedSection {
    let name: String
    let spans: [Range<Int>]
    var parsedCount = 0

    init(name: String, spans: [Range<Int>]) {
        self.name = name
        self.spans = spans
    }
}

/// The elements of a datafile's top-level array, as the compiler iterates them: readers of a json-c tree
/// (the whole-text path), or elements json-c parses one at a time (`StreamedDatafile`), each freed when
/// the loop moves to the next one.
struct DatafileSection: Sequence {
    fileprivate enum Source {
        case readers(DatafileElements)
        case streamed(StreamedDatafile, StreamedSection)
    }

    private let source: Source

    init(_ readers: DatafileElements) {
        source = .readers(readers)
    }

    init(_ stream: StreamedDatafile, _ section: StreamedSection) {
        source = .streamed(stream, section)
    }

    var underestimatedCount: Int {
        switch source {
        case .readers(let readers): return readers.count
        case .streamed(_, let section): return section.spans.count
        }
    }

    func makeIterator() -> Iterator { Iterator(source: source) }

    struct Iterator: IteratorProtocol {
        fileprivate let source: Source
        private var index = 0
        /// The element being compiled: the iterator owns its tree.
        private var current: JSONDocument? = nil

        fileprivate init(source: Source) {
            self.source = source
        }

        mutating func next() -> DatafileReader? {
            switch source {
            case .readers(let readers):
                guard index < readers.count else { return nil }
                index += 1
                return readers[index - 1]
            case .streamed(let stream, let section):
                if current != nil {
                    stream.step?(.free)
                    current = nil  // the previous element's tree, unless pinned
                }
                guard index < section.spans.count, !stream.failed else {
                    stream.step?(.compile)
                    return nil
                }
                stream.step?(.parse)
                let document = stream.element(of: section, at: index)
                stream.step?(.compile)
                guard let document else { return nil }
                current = document
                index += 1
                return DatafileReader(document.root)
            }
        }
    }
}
