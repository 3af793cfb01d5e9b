import ExperimentCore
#if canImport(Glibc)
import Glibc
#endif

/// CMAB settings of a client (options `cmab_prediction_endpoint`, `cmab_cache_size`, `cmab_cache_timeout_s`,
/// `cmab_request_timeout_ms`), with the reference SDK's defaults.
public struct CMABOptions: Sendable {
    /// The prediction URL; `{rule_id}` is replaced by the experiment's id.
    public var predictionEndpoint = "https://prediction.cmab.optimizely.com/predict/{rule_id}"
    /// Cached predictions (users x rules); 0 turns the cache off (every decision asks the service).
    public var cacheSize = 10_000
    /// A cached prediction older than this is asked again; 0: never stale.
    public var cacheTimeoutSeconds = 30 * 60
    /// Each attempt must finish within this (the reference's 10 s).
    public var requestTimeoutMs = 10_000
    /// The client's `ca_file`.
    public var caFile: String? = nil
    public init() {}
}

/// The runtime's CMAB decisions (the reference's DefaultCmabService and DefaultCmabClient): a cache of
/// predictions by user and rule, checked against a key of the user's filtered attributes, and the
/// prediction request over libcurl, tried twice (a retry after 100 ms) as the reference's retry config.
///
/// Decisions of the same user and rule are serialized by one of a fixed set of locks (as the reference's
/// lock stripes), so a concurrent second decision finds the first one's prediction in the cache.
public final class CMABService: CMABDecisionProvider, @unchecked Sendable {
    struct Entry {
        let attributesKey: String
        let variationId: String
        let uuid: CMABUUID
        let storedAt: Double
    }

    let options: CMABOptions
    let logger: Logger
    private let cache: Locked<LRUCache<Entry>>
    private let stripes: [Lock]
    private let isClosed: @Sendable () -> Bool

    /// Predictions the service was asked for (HTTP requests started, retries included), for tests and stats.
    public let requestCount = Locked(0)

    public init(options: CMABOptions, logger: Logger, isClosed: @escaping @Sendable () -> Bool = { false }) {
        self.options = options
        self.logger = logger
        self.isClosed = isClosed
        cache = Locked(LRUCache(capacity: max(1, options.cacheSize)))
        stripes = (0..<64).map { _ in Lock() }
    }

    public func cmabDecision(_ request: CMABRequest, options: DecideOptions, collectReasons: Bool) -> CMABResult {
        var hasher = Hasher()
        hasher.combine(request.userId)
        hasher.combine(request.ruleId)
        let stripe = stripes[Int(UInt(bitPattern: hasher.finalize()) % UInt(stripes.count))]
        return stripe.withLock { decision(request, options) }
    }

    private func decision(_ request: CMABRequest, _ decide: DecideOptions) -> CMABResult {
        var reasons: [String] = []
        let user = request.userId, rule = request.ruleId
        if decide.contains(.ignoreCMABCache) {
            reasons.append(ReasonMessages.cmabIgnoringCache(user: user, rule: rule))
            logger.log(.debug, reasons[reasons.count - 1])
            return CMABResult(answer: fetch(request), reasons: reasons)
        }
        let cacheOn = self.options.cacheSize > 0
        if decide.contains(.resetCMABCache) {
            reasons.append(ReasonMessages.cmabResettingCache(user: user, rule: rule))
            logger.log(.debug, reasons[reasons.count - 1])
            if cacheOn { cache.withLock { $0 = LRUCache(capacity: max(1, self.options.cacheSize)) } }
        }
        let key = "\(user.utf8.count)-\(user)-\(rule)"
        if decide.contains(.invalidateUserCMABCache) {
            reasons.append(ReasonMessages.cmabInvalidatingCache(user: user, rule: rule))
            logger.log(.debug, reasons[reasons.count - 1])
            cache.withLock { $0.removeValue(for: key) }
        }
        let now = Self.now()
        let timeout = Double(self.options.cacheTimeoutSeconds)
        let cached: Entry? = cacheOn ? cache.withLock { cache in
            guard let entry = cache.value(for: key) else { return nil }
            if timeout > 0 && now - entry.storedAt >= timeout {
                cache.removeValue(for: key)
                return nil
            }
            return entry
        } : nil
        if let cached {
            if cached.attributesKey == request.attributesKey {
                reasons.append(ReasonMessages.cmabCacheHit(user: user, rule: rule))
                logger.log(.debug, reasons[reasons.count - 1])
                return CMABResult(answer: CMABAnswer(variationId: cached.variationId, uuid: cached.uuid), reasons: reasons)
            }
            reasons.append(ReasonMessages.cmabCacheMismatch(user: user, rule: rule))
            logger.log(.debug, reasons[reasons.count - 1])
            cache.withLock { $0.removeValue(for: key) }
        } else {
            reasons.append(ReasonMessages.cmabCacheMiss(user: user, rule: rule))
            logger.log(.debug, reasons[reasons.count - 1])
        }
        guard let answer = fetch(request) else { return CMABResult(answer: nil, reasons: []) }
        reasons.append(ReasonMessages.cmabDecision(answer))
        logger.log(.debug, reasons[reasons.count - 1])
        if cacheOn {
            let entry = Entry(attributesKey: request.attributesKey, variationId: answer.variationId, uuid: answer.uuid,
                              storedAt: Self.now())
            cache.withLock { $0.set(entry, for: key) }
        }
        return CMABResult(answer: answer, reasons: reasons)
    }

    /// One prediction: a fresh UUID, then up to two attempts 100 ms apart. Nil when both fail (logged).
    func fetch(_ request: CMABRequest) -> CMABAnswer? {
        var generator = SystemRandomNumberGenerator()
        let uuid = CMABUUID.random(using: &generator)
        let url = options.predictionEndpoint.replacingPlaceholder("{rule_id}", with: percentEncoded(request.ruleId))
        let body = Array(request.body(uuid: uuid).utf8)
        let attempts = 2
        for attempt in 0..<attempts {
            if let variationId = attemptFetch(url: url, body: body) {
                return CMABAnswer(variationId: variationId, uuid: uuid)
            }
            if attempt < attempts - 1 {
                if isClosed() { break }
                logger.log(.info, "Retrying CMAB request (attempt: \(attempt + 1)) after 0.1 seconds...")
                usleep(100_000)
            }
        }
        logger.log(.error, "CMAB decision fetch failed with status: Exhausted all retries for CMAB request.")
        logger.log(.error, "Failed to fetch CMAB data for experiment \(request.experimentKey).")
        return nil
    }

    private func attemptFetch(url: String, body: [UInt8]) -> String? {
        var http = HTTPRequest(method: "POST", url: url, headers: ["Content-Type: application/json"], body: body,
                               timeoutMs: options.requestTimeoutMs)
        http.caFile = options.caFile
        http.maxResponseBytes = 1 << 20
        http.isCancelled = isClosed
        requestCount.withLock { $0 += 1 }
        switch HTTPClient.perform(http) {
        case .failure(let error):
            logger.log(.error, "CMAB decision fetch failed with status: \(error.message).")
            return nil
        case .success(let response):
            guard response.isSuccess else {
                logger.log(.error, "CMAB decision fetch failed with status: \(response.status).")
                return nil
            }
            let variationId = response.body.withUnsafeBytes { CMAB.predictedVariationId($0) }
            if variationId == nil { logger.log(.error, "Invalid CMAB fetch response.") }
            return variationId
        }
    }

    /// Empties the cache (the reference's RESET_CMAB_CACHE, for the whole client).
    public func resetCache() { cache.withLock { $0 = LRUCache(capacity: max(1, self.options.cacheSize)) } }

    private static func now() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }
}

/// One flag decision's view of the client's CMAB service: it remembers the prediction it handed out last, so
/// the decision's impression can carry its UUID (see `CMABDecisionProvider`).
final class CMABCall: CMABDecisionProvider {
    unowned(unsafe) let service: CMABService
    private var last: (ruleId: String, uuid: CMABUUID)? = nil

    init(service: CMABService) { self.service = service }

    func cmabDecision(_ request: CMABRequest, options: DecideOptions, collectReasons: Bool) -> CMABResult {
        let result = service.cmabDecision(request, options: options, collectReasons: collectReasons)
        last = result.answer.map { (request.ruleId, $0.uuid) }
        return result
    }

    /// The UUID of the prediction that chose `decision`'s variation, or nil (another rule decided, or a forced
    /// decision, whitelist or saved variation did, which ask no prediction for that rule).
    func uuid(of decision: FlagDecision, in config: ProjectConfig) -> CMABUUID? {
        guard let last, decision.holdout < 0, decision.experiment >= 0, decision.variation >= 0,
              config.hot.experiments[Int(decision.experiment)].isCMAB,
              config.experiments[Int(decision.experiment)].id.text.sameCodePoints(last.ruleId) else { return nil }
        return last.uuid
    }
}

extension String {
    /// Every occurrence of `placeholder` replaced (no Foundation).
    func replacingPlaceholder(_ placeholder: String, with value: String) -> String {
        let text = Array(utf8), mark = Array(placeholder.utf8)
        guard !mark.isEmpty else { return self }
        var out: [UInt8] = []
        var index = 0
        while index < text.count {
            if index + mark.count <= text.count && text[index..<(index + mark.count)].elementsEqual(mark) {
                out.append(contentsOf: value.utf8)
                index += mark.count
            } else {
                out.append(text[index])
                index += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
