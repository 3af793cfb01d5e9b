import ExperimentCore

/// A bounded map that evicts the least recently used entry. Not thread-safe: callers hold a lock.
/// Entries live in arrays linked by index, so steady-state use does not allocate per operation.
struct LRUCache<Value> {
    /// By code points (`ExactKey`): user ids "\u{E9}" and "e\u{301}" are two users, as in the reference.
    private var slotOf: [ExactKey: Int32] = [:]
    private var keys: [String] = []
    private var values: [Value?] = []
    private var previous: [Int32] = []
    private var next: [Int32] = []
    private var head: Int32 = -1  // most recent
    private var tail: Int32 = -1  // least recent
    private var freeSlots: [Int32] = []
    let capacity: Int

    init(capacity: Int) { self.capacity = max(1, capacity) }

    var count: Int { slotOf.count }

    mutating func value(for key: String) -> Value? {
        guard let slot = slotOf[ExactKey(key)] else { return nil }
        moveToFront(slot)
        return values[Int(slot)]
    }

    /// Stores `value`; returns how many entries were evicted to stay within capacity.
    @discardableResult
    mutating func set(_ value: Value, for key: String) -> Int {
        if let slot = slotOf[ExactKey(key)] {
            values[Int(slot)] = value
            moveToFront(slot)
            return 0
        }
        var evicted = 0
        while slotOf.count >= capacity, tail >= 0 {
            remove(slot: tail)
            evicted += 1
        }
        let slot: Int32
        if let reused = freeSlots.popLast() {
            slot = reused
            keys[Int(slot)] = key
            values[Int(slot)] = value
        } else {
            slot = Int32(keys.count)
            keys.append(key)
            values.append(value)
            previous.append(-1)
            next.append(-1)
        }
        slotOf[ExactKey(key)] = slot
        linkAtFront(slot)
        return evicted
    }

    /// Removes the least recently used entry; false when empty.
    @discardableResult
    mutating func removeLeastRecent() -> Bool {
        guard tail >= 0 else { return false }
        remove(slot: tail)
        return true
    }

    mutating func removeValue(for key: String) {
        if let slot = slotOf[ExactKey(key)] { remove(slot: slot) }
    }

    private mutating func remove(slot: Int32) {
        unlink(slot)
        slotOf[ExactKey(keys[Int(slot)])] = nil
        keys[Int(slot)] = ""
        values[Int(slot)] = nil
        freeSlots.append(slot)
    }

    private mutating func moveToFront(_ slot: Int32) {
        guard head != slot else { return }
        unlink(slot)
        linkAtFront(slot)
    }

    private mutating func linkAtFront(_ slot: Int32) {
        previous[Int(slot)] = -1
        next[Int(slot)] = head
        if head >= 0 { previous[Int(head)] = slot }
        head = slot
        if tail < 0 { tail = slot }
    }

    private mutating func unlink(_ slot: Int32) {
        let before = previous[Int(slot)], after = next[Int(slot)]
        if before >= 0 { next[Int(before)] = after } else { head = after }
        if after >= 0 { previous[Int(after)] = before } else { tail = before }
        previous[Int(slot)] = -1
        next[Int(slot)] = -1
    }
}
