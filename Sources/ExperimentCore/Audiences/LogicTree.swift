/// An and/or/not tree as Optimizely writes audience conditions: `["and", a, ["or", b, c]]`, where a list
/// whose first element is not an operator means "or" of all its elements. Leaves are indices: audience
/// indices in an experiment's audienceConditions, leaf-condition indices inside an audience.
/// The compiler builds this recursive form; decisions evaluate the flat `LogicTree` made from it.
public indirect enum ConditionNode: Sendable {
    case and([ConditionNode])
    case or([ConditionNode])
    /// Negates its first operand; with no operand the result is unknown.
    case not(ConditionNode?)
    case leaf(Int32)
}

/// A condition tree flattened into plain arrays, so evaluating it touches no reference counts.
public struct LogicTree: Sendable {
    public enum Kind: UInt8, Sendable { case and, or, not, leaf }

    /// For operators, `first`/`count` select operands in `operands`; for a leaf, `first` is the leaf index.
    public struct Node: Sendable {
        public let kind: Kind
        public let first: Int32
        public let count: Int32
    }

    @usableFromInline let nodes: [Node]
    @usableFromInline let operands: [Int32]
    @usableFromInline let root: Int32

    public init(_ tree: ConditionNode) {
        var nodes: [Node] = []
        var operands: [Int32] = []
        func add(_ node: ConditionNode) -> Int32 {
            let kind: Kind
            let children: [ConditionNode]
            switch node {
            case .leaf(let index):
                nodes.append(Node(kind: .leaf, first: index, count: 0))
                return Int32(nodes.count - 1)
            case .and(let list): kind = .and; children = list
            case .or(let list): kind = .or; children = list
            case .not(let operand): kind = .not; children = operand.map { [$0] } ?? []
            }
            let childIndices = children.map(add)
            let first = Int32(operands.count)
            operands.append(contentsOf: childIndices)
            nodes.append(Node(kind: kind, first: first, count: Int32(childIndices.count)))
            return Int32(nodes.count - 1)
        }
        root = add(tree)
        self.nodes = nodes
        self.operands = operands
    }

    /// Three-valued evaluation exactly as the reference: `nil` is unknown. "and" is false if any operand
    /// is false, else unknown if any is unknown; "or" is true if any is true, else unknown if any is
    /// unknown; "not" flips a known result of its first operand.
    @inlinable
    public func evaluate(_ leaf: (Int32) -> Bool?) -> Bool? {
        nodes.withUnsafeBufferPointer { nodes in
            operands.withUnsafeBufferPointer { operands in
                LogicTree.evaluate(root, nodes, operands, leaf)
            }
        }
    }

    @usableFromInline
    static func evaluate(_ index: Int32, _ nodes: UnsafeBufferPointer<Node>, _ operands: UnsafeBufferPointer<Int32>,
                         _ leaf: (Int32) -> Bool?) -> Bool? {
        let node = nodes[Int(index)]
        let children = operands[Int(node.first)..<Int(node.first + node.count)]
        switch node.kind {
        case .leaf:
            return leaf(node.first)
        case .and:
            var sawUnknown = false
            for child in children {
                switch evaluate(child, nodes, operands, leaf) {
                case false?: return false
                case nil: sawUnknown = true
                case true?: break
                }
            }
            return sawUnknown ? nil : true
        case .or:
            var sawUnknown = false
            for child in children {
                switch evaluate(child, nodes, operands, leaf) {
                case true?: return true
                case nil: sawUnknown = true
                case false?: break
                }
            }
            return sawUnknown ? nil : false
        case .not:
            guard let child = children.first, let result = evaluate(child, nodes, operands, leaf) else { return nil }
            return !result
        }
    }
}

/// One leaf condition of an audience: `{"name": ..., "type": ..., "match": ..., "value": ...}`.
public struct LeafCondition: Sendable {
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
    public let conditions: LogicTree
    public let leaves: [LeafCondition]
    /// The conditions as written in the datafile, for reasons.
    public let conditionsText: String
    public init(id: String, name: String, conditions: LogicTree, leaves: [LeafCondition], conditionsText: String) {
        self.id = id
        self.name = name
        self.conditions = conditions
        self.leaves = leaves
        self.conditionsText = conditionsText
    }
}

/// The audience restriction of an experiment, rollout rule or holdout: a tree over audience indices.
public struct AudienceCondition: Sendable {
    public let tree: LogicTree
    /// As written in the datafile (audienceConditions or audienceIds), for reasons.
    public let text: String
}
