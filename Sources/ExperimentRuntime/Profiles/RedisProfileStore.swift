import CHiredis
import ExperimentCore
#if canImport(Glibc)
import Glibc
#endif

/// Where a redis:// URL points: `redis://[:password@]host[:port][/db]`.
struct RedisAddress: Equatable {
    var host = "127.0.0.1"
    var port: Int32 = 6379
    var database = 0
    var password: String? = nil

    init(url: String) throws(ClientError) {
        guard url.hasPrefix("redis://") else { throw Self.invalid(url, "expected redis://host:port/db") }
        var rest = Substring(url.dropFirst("redis://".count))
        if let at = rest.lastIndex(of: "@") {
            let credentials = rest[..<at]
            // "user:password" or ":password"; the user name is not used by Redis before 6 and ignored here.
            password = credentials.firstIndex(of: ":").map { String(credentials[credentials.index(after: $0)...]) }
                ?? String(credentials)
            rest = rest[rest.index(after: at)...]
        }
        if let slash = rest.firstIndex(of: "/") {
            let path = rest[rest.index(after: slash)...]
            if !path.isEmpty {
                guard let number = Int(path), number >= 0 else { throw Self.invalid(url, "database must be a number") }
                database = number
            }
            rest = rest[..<slash]
        }
        if let colon = rest.lastIndex(of: ":") {
            guard let number = Int32(rest[rest.index(after: colon)...]), number > 0, number < 65536 else {
                throw Self.invalid(url, "port must be a number from 1 to 65535")
            }
            port = number
            rest = rest[..<colon]
        }
        if !rest.isEmpty { host = String(rest) }
    }

    private static func invalid(_ url: String, _ why: String) -> ClientError {
        ClientError(.invalidOption, "options.profile_store.redis.url \"\(url)\": \(why)")
    }
}

/// Profiles in Redis (hiredis), for a fleet of servers that must agree: one string key per user,
/// `<prefix><user id>`, holding the profile JSON, optionally expiring `ttl_s` after the user was last seen:
/// a save sets the expiry and so does every lookup (GETEX), so a returning user keeps a sticky assignment
/// however old it is, and only users gone for `ttl_s` are forgotten. Servers older than Redis 6.2 have no
/// GETEX; there lookups fall back to GET and the expiry runs from the last save.
///
/// One connection guarded by a lock. Connecting and every command are bounded by `timeout_ms`, so a dead
/// or unreachable server costs a decision at most that long; after a failure the connection is dropped
/// and re-opened on a later call, no sooner than `retryIntervalMs` after the last attempt (meanwhile
/// calls fail at once and decisions fall back to plain bucketing).
public final class RedisProfileStore: ProfileStore, @unchecked Sendable {
    public let name = "redis"
    private let address: RedisAddress
    private let prefix: String
    private let ttlSeconds: Int
    private let timeout: timeval
    private let logger: Logger
    private let lock = Lock()
    private var context: UnsafeMutablePointer<redisContext>? = nil
    private var nextAttemptMillis: Int64 = 0
    private var serverHasGetEx = true   // under the lock; cleared once by an older server's refusal
    static let retryIntervalMs: Int64 = 500

    public init(url: String, prefix: String, ttlSeconds: Int, timeoutMs: Int, logger: Logger) throws(ClientError) {
        self.address = try RedisAddress(url: url)
        self.prefix = prefix
        self.ttlSeconds = ttlSeconds
        self.timeout = timeval(tv_sec: timeoutMs / 1000, tv_usec: (timeoutMs % 1000) * 1000)
        self.logger = logger
    }

    deinit { if let context { redisFree(context) } }

    public func lookup(userId: String) throws(ClientError) -> BucketMap? {
        let reply = try read(key: prefix + userId)
        switch reply {
        case .missing: return nil
        case .text(let text): return try ProfileJSON.decode(text)
        case .ok: throw ClientError(.storeFailed, "redis: unexpected reply to GET")
        }
    }

    /// GETEX refreshes the expiry in the same round trip as the read; GET where there is no TTL or no GETEX.
    private func read(key: String) throws(ClientError) -> Reply {
        guard ttlSeconds > 0, lock.withLock({ serverHasGetEx }) else { return try command(["GET", key]) }
        do {
            return try command(["GETEX", key, "EX", String(ttlSeconds)])
        } catch let error where error.message.contains("unknown command") {
            lock.withLock { serverHasGetEx = false }
            logger.log(.info, "profile store: redis has no GETEX (before 6.2); profiles expire ttl_s after their last save")
            return try command(["GET", key])
        }
    }

    public func save(userId: String, map: BucketMap) throws(ClientError) {
        var arguments = ["SET", prefix + userId, ProfileJSON.encode(userId: userId, map: map)]
        if ttlSeconds > 0 { arguments += ["EX", String(ttlSeconds)] }
        _ = try command(arguments)
    }

    public func remove(userId: String) throws(ClientError) -> Bool {
        switch try command(["DEL", prefix + userId]) {
        case .text(let count): return count != "0"
        case .ok: return true
        case .missing: return false
        }
    }

    enum Reply { case missing, text(String), ok }

    /// Runs one command on the (re)connected server.
    private func command(_ arguments: [String]) throws(ClientError) -> Reply {
        let outcome: Result<Reply, ClientError> = lock.withLock {
            do throws(ClientError) {
                let connection = try connected()
                let reply = try run(arguments, on: connection)
                return .success(reply)
            } catch {
                return .failure(error)
            }
        }
        return try outcome.get()
    }

    /// The open connection, or a new one (called under the lock).
    private func connected() throws(ClientError) -> UnsafeMutablePointer<redisContext> {
        if let context { return context }
        let now = monotonicMillis()
        guard now >= nextAttemptMillis else {
            throw ClientError(.storeFailed, "redis \(address.host):\(address.port) is unavailable (retrying shortly)")
        }
        nextAttemptMillis = now + Self.retryIntervalMs
        guard let opened = redisConnectWithTimeout(address.host, address.port, timeout) else {
            throw ClientError(.storeFailed, "redis \(address.host):\(address.port): out of memory")
        }
        if opened.pointee.err != 0 {
            let message = errorText(opened)
            redisFree(opened)
            throw ClientError(.storeFailed, "redis \(address.host):\(address.port): cannot connect: \(message)")
        }
        redisSetTimeout(opened, timeout)
        context = opened
        do throws(ClientError) {
            if let password = address.password { _ = try run(["AUTH", password], on: opened) }
            if address.database != 0 { _ = try run(["SELECT", String(address.database)], on: opened) }
        } catch {
            disconnect()
            throw error
        }
        logger.log(.info, "profile store: connected to redis \(address.host):\(address.port)/\(address.database)")
        return opened
    }

    /// Sends one command and reads its reply; a connection error drops the connection (under the lock).
    /// SIGPIPE is blocked meanwhile: hiredis writes with write(2), and a server that went away must cost the
    /// host an error, not the signal's default action (ending the process).
    private func run(_ arguments: [String], on connection: UnsafeMutablePointer<redisContext>) throws(ClientError) -> Reply {
        var pipeSignal = sigset_t(), previous = sigset_t()
        sigemptyset(&pipeSignal)
        sigaddset(&pipeSignal, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &pipeSignal, &previous)
        defer {
            // Take back a SIGPIPE this call raised (when it was not blocked before) so it is never delivered.
            var pending = sigset_t()
            if sigismember(&previous, SIGPIPE) == 0, sigpending(&pending) == 0, sigismember(&pending, SIGPIPE) == 1 {
                var noWait = timespec()
                _ = sigtimedwait(&pipeSignal, nil, &noWait)
            }
            pthread_sigmask(SIG_SETMASK, &previous, nil)
        }
        let copies = arguments.map { strdup($0) }
        defer { copies.forEach { free($0) } }
        var pointers = copies.map { UnsafePointer<CChar>($0) }
        var lengths = arguments.map { $0.utf8.count }
        let raw = pointers.withUnsafeMutableBufferPointer { argv in
            lengths.withUnsafeMutableBufferPointer { argvlen in
                redisCommandArgv(connection, Int32(arguments.count), argv.baseAddress, argvlen.baseAddress)
            }
        }
        guard let raw else {
            let message = errorText(connection)
            disconnect()
            throw ClientError(.storeFailed, "redis \(address.host):\(address.port): \(arguments[0]) failed: \(message)")
        }
        let reply = raw.assumingMemoryBound(to: redisReply.self)
        defer { freeReplyObject(raw) }
        switch reply.pointee.type {
        case REDIS_REPLY_NIL:
            return .missing
        case REDIS_REPLY_STRING:
            let bytes = UnsafeRawBufferPointer(start: reply.pointee.str, count: Int(reply.pointee.len))
            return .text(String(decoding: bytes, as: UTF8.self))
        case REDIS_REPLY_INTEGER:  // DEL: how many keys it removed
            return .text(String(reply.pointee.integer))
        case REDIS_REPLY_ERROR:
            let bytes = UnsafeRawBufferPointer(start: reply.pointee.str, count: Int(reply.pointee.len))
            throw ClientError(.storeFailed, "redis: \(arguments[0]): \(String(decoding: bytes, as: UTF8.self))")
        default:
            return .ok
        }
    }

    private func disconnect() {
        if let context { redisFree(context) }
        context = nil
    }

    private func errorText(_ connection: UnsafeMutablePointer<redisContext>) -> String {
        withUnsafeBytes(of: connection.pointee.errstr) { bytes in
            let text = bytes.prefix { $0 != 0 }
            return text.isEmpty ? "error \(connection.pointee.err)" : String(decoding: text, as: UTF8.self)
        }
    }
}
