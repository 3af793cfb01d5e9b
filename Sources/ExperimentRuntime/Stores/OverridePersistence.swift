import ExperimentCore

/// The state file's table of persisted overrides: one row per (user, experiment, kind).
///   kind "variation": set_forced_variation, value = variation id
///   kind "include":   Sigma include_force, value = variation position or NULL (bucketed)
///   kind "exclude":   Sigma exclude_force; experiment_id "*" with kind "exclude_all" for exclude_force_all
/// and the table of forced decisions: one row per (user, flag, rule); rule_key "" for the flag itself and
/// "=" + the key for a rule (so a rule whose key is "" stays distinct from no rule).
/// Rows are read one user at a time, when the user is first decided (OverrideStore caches a bounded number).
final class OverridePersistence: @unchecked Sendable {
    private var openedDatabase: SQLiteDatabase
    private let directory: StateDirectory
    /// The fork generation `openedDatabase` was opened in.
    private var openedIn = ForkGeneration.current
    /// Connections a forked child inherited: never used nor closed there (closing one could checkpoint or
    /// remove the WAL the parent is using).
    private var inherited: [SQLiteDatabase] = []
    private let lock = Lock()
    static let allExperiments = "*"

    /// This process's connection: a forked child opens its own on first use (SQLite forbids carrying an
    /// open connection across fork).
    private var database: SQLiteDatabase {
        if openedIn != ForkGeneration.current, let own = try? directory.openDatabase() {
            inherited.append(openedDatabase)
            openedDatabase = own
            openedIn = ForkGeneration.current
        }
        return openedDatabase
    }

    init(directory: StateDirectory) throws(ClientError) {
        self.directory = directory
        openedDatabase = try directory.openDatabase()
        try wrap {
            try database.execute("""
                CREATE TABLE IF NOT EXISTS forced_overrides (
                    user_id TEXT NOT NULL,
                    experiment_id TEXT NOT NULL,
                    kind TEXT NOT NULL,
                    value TEXT,
                    PRIMARY KEY (user_id, experiment_id, kind)
                )
                """)
            try database.execute("""
                CREATE TABLE IF NOT EXISTS forced_decisions (
                    user_id TEXT NOT NULL,
                    flag_key TEXT NOT NULL,
                    rule_key TEXT NOT NULL,
                    variation_key TEXT NOT NULL,
                    PRIMARY KEY (user_id, flag_key, rule_key)
                )
                """)
        }
    }

    /// How many users have any override in the file (read once, at start).
    func userCount() throws(ClientError) -> Int {
        var count = 0
        try wrap {
            let rows = try database.prepare(
                "SELECT COUNT(*) FROM (SELECT user_id FROM forced_overrides UNION SELECT user_id FROM forced_decisions)")
            if try rows.step() { count = Int(rows.int64(0)) }
        }
        return count
    }

    /// One user's overrides (empty when the file has none for the user).
    func load(userId: String) throws(ClientError) -> UserOverrides {
        var overrides = UserOverrides()
        try wrap {
            try lock.withLock {
                let rows = try database.prepare(
                    "SELECT experiment_id, kind, value FROM forced_overrides WHERE user_id = ?1")
                try rows.bind(1, userId)
                while try rows.step() {
                    let value: String? = rows.isNull(2) ? nil : rows.text(2)
                    Self.apply(kind: rows.text(1), experiment: rows.text(0), value: value, to: &overrides)
                }
                let decisions = try database.prepare(
                    "SELECT flag_key, rule_key, variation_key FROM forced_decisions WHERE user_id = ?1")
                try decisions.bind(1, userId)
                while try decisions.step() {
                    let rule = decisions.text(1)
                    let key = ForcedDecisionKey(flag: decisions.text(0), rule: rule.isEmpty ? nil : String(rule.dropFirst()))
                    overrides.forcedDecisions[key] = decisions.text(2)
                }
            }
        }
        return overrides
    }

    private static func apply(kind: String, experiment: String, value: String?, to overrides: inout UserOverrides) {
        switch kind {
        case "variation": if let value { overrides.forcedVariations[ExactKey(experiment)] = value }
        case "include": overrides.memberships[experiment] = .included(variationIndex: value.flatMap { Int($0) })
        case "exclude": overrides.memberships[experiment] = .excluded
        case "exclude_all": overrides.excludedFromAll = true
        default: break  // a kind a newer version wrote
        }
    }

    func setForcedDecision(userId: String, flagKey: String, ruleKey: String?, variationKey: String?) throws(ClientError) {
        try wrap {
            try database.requireFileInPlace()
            try lock.withLock {
                let rule = ruleKey.map { "=" + $0 } ?? ""
                let statement = try database.prepare(variationKey == nil
                    ? "DELETE FROM forced_decisions WHERE user_id = ?1 AND flag_key = ?2 AND rule_key = ?3"
                    : "INSERT OR REPLACE INTO forced_decisions (user_id, flag_key, rule_key, variation_key) VALUES (?1, ?2, ?3, ?4)")
                try statement.bind(1, userId)
                try statement.bind(2, flagKey)
                try statement.bind(3, rule)
                if let variationKey { try statement.bind(4, variationKey) }
                try statement.step()
            }
        }
    }

    func removeForcedDecisions(userId: String) throws(ClientError) {
        try wrap {
            try database.requireFileInPlace()
            try lock.withLock {
                let delete = try database.prepare("DELETE FROM forced_decisions WHERE user_id = ?1")
                try delete.bind(1, userId)
                try delete.step()
            }
        }
    }

    func setForcedVariation(userId: String, experimentId: String, variationId: String?) throws(ClientError) {
        try replace(userId, experimentId, kinds: ["variation"], with: variationId.map { ("variation", $0) })
    }

    func setMembership(userId: String, experimentId: String, _ membership: ForcedMembership?) throws(ClientError) {
        let row: (String, String?)?
        switch membership {
        case nil: row = nil
        case .excluded: row = ("exclude", nil)
        case .included(let position): row = ("include", position.map { String($0) })
        }
        try replace(userId, experimentId, kinds: ["include", "exclude"], with: row)
    }

    func setExcludedFromAll(userId: String, _ excluded: Bool) throws(ClientError) {
        try replace(userId, Self.allExperiments, kinds: ["exclude_all"], with: excluded ? ("exclude_all", nil) : nil)
    }

    func clearMemberships(userId: String) throws(ClientError) {
        try wrap {
            try database.requireFileInPlace()
            try lock.withLock {
                let delete = try database.prepare(
                    "DELETE FROM forced_overrides WHERE user_id = ?1 AND kind IN ('include', 'exclude', 'exclude_all')")
                try delete.bind(1, userId)
                try delete.step()
            }
        }
    }

    /// Deletes the (user, experiment) rows of `kinds` and inserts `row`, in one transaction.
    private func replace(_ userId: String, _ experimentId: String, kinds: [String], with row: (String, String?)?)
        throws(ClientError)
    {
        try wrap {
            try database.requireFileInPlace()
            try lock.withLock {
                try database.transaction { () throws(SQLiteError) in
                    let placeholders = kinds.indices.map { "?\($0 + 3)" }.joined(separator: ", ")
                    let delete = try database.prepare(
                        "DELETE FROM forced_overrides WHERE user_id = ?1 AND experiment_id = ?2 AND kind IN (\(placeholders))")
                    try delete.bind(1, userId)
                    try delete.bind(2, experimentId)
                    for (offset, kind) in kinds.enumerated() { try delete.bind(Int32(offset + 3), kind) }
                    try delete.step()
                    guard let (kind, value) = row else { return }
                    let insert = try database.prepare(
                        "INSERT INTO forced_overrides (user_id, experiment_id, kind, value) VALUES (?1, ?2, ?3, ?4)")
                    try insert.bind(1, userId)
                    try insert.bind(2, experimentId)
                    try insert.bind(3, kind)
                    if let value { try insert.bind(4, value) } else { try insert.bindNull(4) }
                    try insert.step()
                }
            }
        }
    }

    private func wrap(_ body: () throws -> Void) throws(ClientError) {
        do {
            try body()
        } catch let error as SQLiteError {
            throw ClientError(.storeFailed, "override store: \(error.message)")
        } catch {
            throw ClientError(.storeFailed, "override store: \(error)")
        }
    }
}
