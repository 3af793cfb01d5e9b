/// The datafile compiler's reading of the header fields, attributes and events (see `DatafileCompiler`).
extension Compilation {
    mutating func readHeader() throws(DatafileError) -> ProjectConfig.Header {
        let versionField = try root.required("version")
        guard let version = versionField.value.string else {
            throw DatafileError(.unsupportedVersion,
                                "datafile: version: expected a string such as \"4\", got \(versionField.value.kindName)")
        }
        guard DatafileCompiler.supportedVersions.contains(version) else {
            throw DatafileError(.unsupportedVersion, "datafile: version \"\(version)\" is not supported (supported: \"2\", \"3\", \"4\")")
        }
        var header = ProjectConfig.Header()
        header.version = version
        header.projectId = try root.requiredString("projectId")
        header.accountId = try root.requiredString("accountId")
        header.revision = try root.requiredString("revision")
        header.environmentKey = optionalText(root, "environmentKey")
        header.sdkKey = optionalText(root, "sdkKey")
        // Outside the reference's schema. It tests "sendFlagDecisions" for truth; it sends "anonymizeIP" in
        // events as the datafile has it, whatever its type; it sends "botFiltering" only when it is a boolean.
        header.anonymizeIP = truth(root, "anonymizeIP") ?? false
        // (null included: `config.get('anonymizeIP', False)` is None then, sent as null.)
        if let field = root.member("anonymizeIP") { header.anonymizeIPJSON = PythonJSONText.dumps(field.value) }
        header.sendFlagDecisions = truth(root, "sendFlagDecisions") ?? false
        header.botFiltering = boolean(root, "botFiltering")
        header.region = readRegion()
        header.odpIntegration = try readODPIntegration()
        return header
    }

    /// An optional string outside the reference's schema: another JSON type is kept there as it is; here
    /// it counts as absent, with a warning.
    mutating func optionalText(_ entry: DatafileReader, _ name: String) -> String? {
        guard let field = entry.optional(name) else { return nil }
        guard let text = field.value.string else {
            warn(field.warning("expected a string, got \(field.value.kindName): taken as absent"))
            return nil
        }
        return text
    }

    /// "region", outside the reference's schema: it keeps `region or "US"` and picks the endpoint by
    /// `str(region).upper()`, so a value that is no string ends up "US" (no `str()` of one reads "EU").
    mutating func readRegion() -> String {
        guard let field = root.member("region"), field.value.pythonTruth else { return "US" }
        guard let region = field.value.string else {
            warn(field.warning("expected a string, got \(field.value.kindName): the events go to the US endpoint, "
                               + "as in the reference"))
            return "US"
        }
        return region
    }

    /// An optional top-level list outside the reference's schema. Absent is empty; the reference
    /// iterates what is there: null, a number or a non-empty object makes its config construction
    /// raise (refused), an empty object or string is no entries. A streamed datafile's arrays are parsed
    /// one element at a time (see `requiredSection`); another JSON type is a member of the skeleton.
    mutating func section(_ name: String) throws(DatafileError) -> DatafileSection {
        if let stream, let streamed = stream.section(name) { return DatafileSection(stream, streamed) }
        guard let field = root.member(name) else { return DatafileSection(.none) }
        return DatafileSection(try field.lenientArray("its config construction", warn: { warn($0) }))
    }

    /// How many elements the top-level array `name` has (0 when absent or no array), without reading them:
    /// for sizing the tables they fill (a Swift dictionary growing from empty rehashes at every doubling).
    func elementCount(_ name: String) -> Int {
        if let stream, let streamed = stream.section(name) { return streamed.spans.count }
        guard let field = root.member(name), field.value.kind == .array else { return 0 }
        return field.value.count
    }

    /// A required top-level list. A streamed datafile's elements are parsed one at a time as the loop
    /// reaches them: a reader kept past its element needs `pin`.
    func requiredSection(_ name: String) throws(DatafileError) -> DatafileSection {
        if let stream, let streamed = stream.section(name) { return DatafileSection(stream, streamed) }
        return DatafileSection(try root.requiredArray(name))
    }

    /// The first "integrations" entry with key "odp" (later ones are ignored, as in the reference).
    /// The reference's JSON schema checks the list: an array of objects with a string "key", and "host"
    /// and "publicKey" strings when present (null is not a string to it).
    func readODPIntegration() throws(DatafileError) -> ODPIntegration? {
        guard let list = root.member("integrations") else { return nil }
        var odp: ODPIntegration? = nil
        for entry in try list.array() {
            _ = try entry.object()
            let key = try entry.requiredString("key")
            for name in ["host", "publicKey"] { _ = try entry.member(name)?.string() }
            guard key == "odp", odp == nil else { continue }
            odp = ODPIntegration(host: entry.member("host")?.value.string,
                                 publicKey: entry.member("publicKey")?.value.string)
        }
        return odp
    }

    mutating func readAttributes() throws(DatafileError) -> [Attribute] {
        var attributes: [Attribute] = []
        for entry in try requiredSection("attributes") {
            do throws(DatafileError) {
                let attribute = Attribute(id: try entry.requiredString("id"), key: try entry.requiredKey())
                indexes.attributes.insert(attribute.key, attributes.count, replacing: true)
                attributes.append(attribute)
            } catch {
                try record(error)
            }
        }
        return attributes
    }

    mutating func readEvents() throws(DatafileError) -> [Event] {
        var events: [Event] = []
        for entry in try requiredSection("events") {
            do throws(DatafileError) {
                let event = Event(id: try entry.requiredString("id"), key: try entry.requiredKey())
                for id in try entry.requiredArray("experimentIds") { _ = try id.string() }
                indexes.events.insert(event.key, events.count, replacing: true)
                events.append(event)
            } catch {
                try record(error)
            }
        }
        return events
    }
}
