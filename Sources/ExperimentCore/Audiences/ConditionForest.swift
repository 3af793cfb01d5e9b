/// An and/or/not tree as Optimizely writes audience conditions: `["and", a, ["or", b, c]]`, where a list
/// whose first element is not an operator means "or" of all its elements. Leaves are indices: audience
/// indices in an experiment's audienceConditions, leaf-condition indices inside an audience.
/// The compiler builds this recursive form; decisions evaluate the flat `ConditionForest` made from it.
public indirect enum ConditionNode: Sendable {
    case and([ConditionNode])
    case or([ConditionNode])
    /// Negates its first operand; with no operand the result is unknown.
    case not(ConditionNode?)
    case leaf(Int32)
}

/// Every condition tree of a config — each experiment's, rule's and holdout's audience combination and
/// each audience's own conditions — flattened into shared plain arrays. An audience reference inside a
/// rule's tree jumps straight to that audience's root, so evaluating a rule's audiences is one walk over
/// trivial values: no closures per audience, no reference counting.
public struct ConditionForest: Sendable {
    public enum Kind: UInt8, Sendable, BitwiseCopyable {
        case and, or, not, condition, audience
        /// An "or" whose operands are all `exact` string conditions on the same attribute (["or", country
        /// is "NL", country is "DE", ...]): the attribute is looked up once. Only in `Tables`.
        case anyOfStrings
    }

    /// For operators, `first`/`count` select operands in `operands`; for a condition leaf `first` indexes
    /// `leaves`; for an audience reference `first` indexes `audienceRoots`.
    public struct Node: Sendable, BitwiseCopyable {
        public let kind: Kind
        public let first: Int32
        public let count: Int32
    }

    private var nodes: [Node] = []
    private var operands: [Int32] = []
    private var audienceRoots: [Int32] = []
    private var leaves: [LeafCondition] = []

    public init() {}

    /// Adds a leaf condition and returns its index (for `ConditionNode.leaf` in an audience's tree).
    mutating func addLeaf(_ leaf: LeafCondition) -> Int32 {
        leaves.append(leaf)
        return Int32(leaves.count - 1)
    }

    /// Adds an audience's own tree (leaves are leaf-condition indices); returns its audience slot.
    mutating func addAudience(_ tree: ConditionNode) -> Int32 {
        audienceRoots.append(add(tree, leafKind: .condition))
        return Int32(audienceRoots.count - 1)
    }

    /// Replaces an audience's tree (typedAudiences override audiences with the same id).
    mutating func replaceAudience(_ slot: Int32, with tree: ConditionNode) {
        audienceRoots[Int(slot)] = add(tree, leafKind: .condition)
    }

    /// Adds a rule's tree over audience slots; returns its root node.
    mutating func addRule(_ tree: ConditionNode) -> Int32 { add(tree, leafKind: .audience) }

    private mutating func add(_ node: ConditionNode, leafKind: Kind) -> Int32 {
        let kind: Kind
        let children: [ConditionNode]
        switch node {
        case .leaf(let index):
            nodes.append(Node(kind: leafKind, first: index, count: 0))
            return Int32(nodes.count - 1)
        case .and(let list): kind = .and; children = list
        case .or(let list): kind = .or; children = list
        case .not(let operand): kind = .not; children = operand.map { [$0] } ?? []
        }
        let childIndices = children.map { add($0, leafKind: leafKind) }
        let first = Int32(operands.count)
        operands.append(contentsOf: childIndices)
        nodes.append(Node(kind: kind, first: first, count: Int32(childIndices.count)))
        return Int32(nodes.count - 1)
    }

    /// The forest as views into config-owned memory, for evaluation without reference counting.
    /// An audience reference is stored as a copy of the audience's root node (evaluating the reference is
    /// evaluating that root), so a walk takes no extra step per audience.
    func tables(in storage: StringStorage) -> Tables {
        let resolved = nodes.map { node -> Node in
            let node = node.kind == .audience ? nodes[Int(audienceRoots[Int(node.first)])] : node
            return isAnyOfStrings(node) ? Node(kind: .anyOfStrings, first: node.first, count: node.count) : node
        }
        return Tables(nodes: storage.store(resolved), operands: storage.store(operands),
                      roots: storage.store(audienceRoots), leaves: storage.store(leaves))
    }

    /// Whether `node` is an "or" of at least two condition nodes that are all known-type `exact` matches of a
    /// string value on the same attribute name. For such an "or" the reference's three-valued result is:
    /// unknown when the user's value is absent, null or not a string (every operand is unknown), else true
    /// when it equals one of the strings and false otherwise.
    private func isAnyOfStrings(_ node: Node) -> Bool {
        guard node.kind == .or, node.count >= 2 else { return false }
        var name: UTF8Text? = nil
        for position in Int(node.first)..<Int(node.first + node.count) {
            let operand = nodes[Int(operands[position])]
            guard operand.kind == .condition else { return false }
            let leaf = leaves[Int(operand.first)]
            guard leaf.hasKnownType, leaf.match == .exact, case .string = leaf.value, let attribute = leaf.attribute
            else { return false }
            if let name, !name.elementsEqual(attribute) { return false }
            name = attribute
        }
        return true
    }

    public struct Tables: @unchecked Sendable {
        let nodes: UnsafeBufferPointer<Node>
        let operands: UnsafeBufferPointer<Int32>
        let roots: UnsafeBufferPointer<Int32>
        let leaves: UnsafeBufferPointer<LeafCondition>

        /// Three-valued evaluation exactly as the reference: `nil` is unknown. "and" is false if any operand
        /// is false, else unknown if any is unknown; "or" is true if any is true, else unknown if any is
        /// unknown; "not" flips a known result of its first operand.
        func evaluate<Leaves: LeafEvaluator>(_ index: Int32, _ leaf: Leaves) -> Bool? {
            let node = nodes[Int(index)]
            let start = Int(node.first), end = Int(node.first + node.count)
            switch node.kind {
            case .condition:
                return leaf.evaluate(leaves[start])
            case .audience:
                return evaluate(roots[start], leaf)
            case .and:
                var sawUnknown = false
                for position in start..<end {
                    switch evaluate(operands[position], leaf) {
                    case false?: return false
                    case nil: sawUnknown = true
                    case true?: break
                    }
                }
                return sawUnknown ? nil : true
            case .or:
                var sawUnknown = false
                for position in start..<end {
                    switch evaluate(operands[position], leaf) {
                    case true?: return true
                    case nil: sawUnknown = true
                    case false?: break
                    }
                }
                return sawUnknown ? nil : false
            case .not:
                guard start < end, let result = evaluate(operands[start], leaf) else { return nil }
                return !result
            case .anyOfStrings:
                // Every operand is an exact string condition on one attribute (see isAnyOfStrings).
                guard case .string(let user)? = leaf.value(named: leaves[Int(nodes[Int(operands[start])].first)].attribute!)
                else { return nil }
                for position in start..<end {
                    guard case .string(let wanted) = leaves[Int(nodes[Int(operands[position])].first)].value else { continue }
                    if LeafMatcher.equal(wanted, user) { return true }
                }
                return false
            }
        }
    }
}

/// Evaluates leaf conditions for `ConditionForest.Tables.evaluate` (a type, not a closure, so the walk is
/// specialized for it and the leaf check inlined).
public protocol LeafEvaluator {
    /// The condition's result for the user: true, false, or nil (unknown).
    func evaluate(_ leaf: LeafCondition) -> Bool?
    /// The user's value of attribute `name`, nil when absent.
    func value(named name: UTF8Text) -> AttributeValue?
}

/// One leaf condition of an audience: `{"name": ..., "type": ..., "match": ..., "value": ...}`.
public struct LeafCondition: Sendable, BitwiseCopyable {
    /// The attribute name (bytes owned by the config); nil when absent or not a string (such a condition
    /// never finds a value).
    public nonisolated(unsafe) let attribute: UTF8Text?
    /// False when "type" is not "custom_attribute" / "third_party_dimension": evaluates to unknown.
    public let hasKnownType: Bool
    public let match: MatchType
    public let value: ConditionValue
}

/// A class, not a struct: decisions read it from the config without copying its fields.
public final class Audience: @unchecked Sendable {
    public let id: String
    public let name: String
    /// The audience's slot in the config's `ConditionForest`.
    public let slot: Int32
    /// Real-time segments its `qualified` conditions name, first-seen order, no repeats.
    public let segments: [String]
    public init(id: String, name: String, slot: Int32, segments: [String] = []) {
        self.segments = segments
        self.id = id
        self.name = name
        self.slot = slot
    }
}

/// The audience restriction of an experiment, rollout rule or holdout: a tree over audience indices.
public struct AudienceCondition: Sendable {
    /// The root node of the rule's tree in the config's `ConditionForest`.
    public let root: Int32
    /// As written in the datafile (audienceConditions or audienceIds), for reasons.
    public let text: String
}
