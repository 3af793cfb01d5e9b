import ExperimentCore
import ExperimentRuntime

/// Kameleoon's Data protocol: what `addData` takes. Named `KameleoonData` so it does not hide Foundation's
/// `Data` in apps that import both.
public protocol KameleoonData: Sendable {
    var entry: UserDataEntry { get }
}

/// A goal conversion kept with the user's pending data.
public struct Conversion: KameleoonData {
    public let goalID: Int
    public let revenue: Double
    public let negative: Bool

    public init(goalID: Int, revenue: Double = 0, negative: Bool = false) {
        self.goalID = goalID
        self.revenue = revenue
        self.negative = negative
    }

    public var entry: UserDataEntry {
        .conversion(.init(goalId: Int64(goalID), revenue: revenue, negative: negative))
    }
}

/// Custom data `id` (Kameleoon's index) with one value, or several.
public struct Custom: KameleoonData {
    public let id: Int
    public let values: [String]

    public init(id: Int, value: String) { self.init(id: id, values: [value]) }
    public init(id: Int, values: [String]) {
        self.id = id
        self.values = values
    }
    public init(index: Int, value: String) { self.init(id: index, values: [value]) }

    public var entry: UserDataEntry { .custom(index: Int64(id), values: values) }
}

/// Kameleoon's later SDKs call it CustomData.
public typealias CustomData = Custom

/// Interest `index`.
public struct Interest: KameleoonData {
    public let index: Int

    public init(_ index: Int) { self.index = index }
    public init(index: Int) { self.index = index }

    public var entry: UserDataEntry { .interest(index: Int64(index)) }
}
