/// The datafile compiler's reading of an experiment's "cmab" object (see `CMAB`). Kept apart from the
/// experiments' reader, which only calls it.
extension Compilation {
    /// The reference tests "cmab" for Python's truth: absent, null, {} (and any other false value) make an
    /// ordinary experiment. A true one must be an object with a numeric "trafficAllocation" (the reference
    /// compares the user's bucket with it, and raises deciding when it is missing or no number: refused here,
    /// naming the place). An "attributeIds" that is missing or no list is accepted with a warning: the
    /// reference raises filtering the attributes and gives the error decision, and so does the library.
    mutating func cmabSettings(_ entry: DatafileReader) throws(DatafileError) -> CMABSettings? {
        guard let field = entry.optional("cmab"), field.value.pythonTruth else { return nil }
        guard field.value.kind == .object else {
            throw field.fail("expected an object, got \(field.value.kindName): the reference reads "
                             + "cmab['trafficAllocation'] from it and raises deciding")
        }
        let traffic = try field.required("trafficAllocation")
        let end: Int64
        switch traffic.value.kind {
        case .int: end = traffic.value.int64 ?? 0
        case .double:
            let number = traffic.value.double ?? .nan
            end = number.isNaN ? 0 : Int64(max(-1, min(20_000, number.rounded(.up))))
        case .bool: end = traffic.value.bool == true ? 1 : 0
        default:
            throw traffic.fail("expected a number, got \(traffic.value.kindName): the reference compares the "
                               + "user's bucket with it and raises deciding")
        }
        var ids: [String]? = nil
        if let list = field.optional("attributeIds"), list.value.kind == .array {
            // An id that is no string names no attribute (the reference's map is keyed by string ids).
            ids = try list.array().compactMap { $0.value.string }
        } else {
            warn(field.warning("no \"attributeIds\" list: deciding the experiment gives the error decision, "
                               + "as in the reference (it raises filtering the attributes)"))
        }
        return CMABSettings(attributeIds: ids, trafficAllocation: Int32(min(max(end, 0), 10_000)))
    }
}
