/// Downloads a project's datafile: the URL from the template and SDK key, a bearer token when configured,
/// conditional requests (If-None-Match / If-Modified-Since) and retries with exponential back-off.
struct DatafileFetcher: Sendable {
    enum Outcome {
        case fetched(body: [UInt8], etag: String?, lastModified: String?)
        /// 304: the datafile the validators came from is still current.
        case notModified
        case failed(message: String)
    }

    /// Validators of the datafile in use, sent so an unchanged datafile costs a 304 and no body.
    struct Validators: Sendable {
        var etag: String?
        var lastModified: String?
    }

    let url: String
    /// The URL as messages show it: the SDK key redacted (logs must not carry secrets).
    let displayURL: String
    let accessToken: String?
    let timeoutMs: Int
    let retryCount: Int
    let maxBytes: Int
    let caFile: String?

    /// Back-off before retry n (1-based): 200 ms doubled each time, at most 5 s.
    static func backoffMs(retry: Int) -> Int64 { min(5_000, 200 << Int64(min(retry - 1, 10))) }

    init(options: ClientOptions, sdkKey: String, maxBytes: Int) {
        url = Self.url(template: options.datafileURLTemplate, sdkKey: sdkKey)
        displayURL = options.datafileURLTemplate.replacingAll("{sdk_key}", with: "{sdk_key=\(Logger.redacted(sdkKey))}")
        accessToken = options.datafileAccessToken
        timeoutMs = options.requestTimeoutMs
        retryCount = options.retryCount
        caFile = options.caFile
        self.maxBytes = maxBytes
    }

    /// The template with `{sdk_key}` replaced by the key, percent-encoding bytes that are not URL-safe.
    static func url(template: String, sdkKey: String) -> String {
        template.replacingAll("{sdk_key}", with: percentEncoded(sdkKey))
    }

    /// Fetches with up to `retryCount` retries; `pause(ms)` sleeps between attempts and answers false when
    /// the client is closing (the fetch then gives up at once).
    func fetch(validators: Validators, log: (String) -> Void, pause: (Int64) -> Bool,
               isCancelled: @escaping @Sendable () -> Bool) -> Outcome {
        // EXPERIMENT_DATAFILE_URL_TEMPLATE=none (test suites): no network at all.
        if url == ClientOptions.disabledEventEndpoint {
            return .failed(message: "datafile fetching is off (EXPERIMENT_DATAFILE_URL_TEMPLATE=none)")
        }
        var lastFailure = ""
        for attempt in 0...retryCount {
            if attempt > 0 {
                let delay = Self.backoffMs(retry: attempt)
                log("datafile fetch failed (\(lastFailure)); retry \(attempt) of \(retryCount) in \(delay) ms")
                guard pause(delay) else { return .failed(message: "\(lastFailure); stopped: the client closed") }
            }
            switch once(validators, isCancelled) {
            case .success(let outcome): return outcome
            case .failure(let failure):
                lastFailure = failure.message
                if !failure.retryable { return .failed(message: lastFailure) }
            }
        }
        let tries = retryCount + 1
        return .failed(message: "\(lastFailure) (\(tries) attempt\(tries == 1 ? "" : "s"))")
    }

    private struct Failure: Error {
        let message: String
        let retryable: Bool
    }

    private func once(_ validators: Validators, _ isCancelled: @escaping @Sendable () -> Bool) -> Result<Outcome, Failure> {
        var headers = ["Accept: application/json"]
        if let accessToken { headers.append("Authorization: Bearer \(accessToken)") }
        if let etag = validators.etag { headers.append("If-None-Match: \(etag)") }
        if let modified = validators.lastModified { headers.append("If-Modified-Since: \(modified)") }
        var request = HTTPRequest(url: url, headers: headers, timeoutMs: timeoutMs)
        request.maxResponseBytes = maxBytes
        request.isCancelled = isCancelled
        request.caFile = caFile
        switch HTTPClient.perform(request) {
        case .failure(let error):
            // An oversized body is the server's answer, not a passing fault: retrying cannot help.
            let final = error.message.contains("response larger than") || isCancelled()
            return .failure(Failure(message: error.message.replacingAll(url, with: displayURL), retryable: !final))
        case .success(let response):
            let status = response.status
            if status == 304 { return .success(.notModified) }
            // file:// answers with status 0.
            if response.isSuccess || (status == 0 && url.hasPrefix("file://")) {
                return .success(.fetched(body: response.body, etag: response.headers["etag"],
                                         lastModified: response.headers["last-modified"]))
            }
            let retryable = status >= 500 || status == 429 || status == 408
            return .failure(Failure(message: "GET \(displayURL): HTTP \(status)", retryable: retryable))
        }
    }
}

extension String {
    /// Every occurrence of `target` replaced (no Foundation in the library).
    func replacingAll(_ target: String, with replacement: String) -> String {
        let source = Array(utf8), pattern = Array(target.utf8)
        guard !pattern.isEmpty, source.count >= pattern.count else { return self }
        var result: [UInt8] = []
        result.reserveCapacity(source.count)
        var index = 0
        while index < source.count {
            if index + pattern.count <= source.count, source[index..<(index + pattern.count)].elementsEqual(pattern) {
                result.append(contentsOf: replacement.utf8)
                index += pattern.count
            } else {
                result.append(source[index])
                index += 1
            }
        }
        return String(decoding: result, as: UTF8.self)
    }
}
