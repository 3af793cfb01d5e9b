import CCurl

/// One HTTP request as the runtime sends it (datafile fetches, event batches, segment queries).
public struct HTTPRequest: Sendable {
    public var method: String = "GET"
    public var url: String
    /// Header lines as "Name: value".
    public var headers: [String] = []
    public var body: [UInt8] = []
    /// The whole transfer, connect included, must finish within this.
    public var timeoutMs: Int = 10_000
    /// A response body larger than this fails the request (a runaway server cannot exhaust memory).
    public var maxResponseBytes: Int = 64 << 20
    /// Polled during the transfer (at least once a second): true aborts it, so a closing client need not
    /// wait out a slow server.
    public var isCancelled: (@Sendable () -> Bool)? = nil
    /// The CA bundle trusted for HTTPS (the client option `ca_file`); nil: `CACertificates.processDefault`.
    public var caFile: String? = nil

    public init(method: String = "GET", url: String, headers: [String] = [], body: [UInt8] = [],
                timeoutMs: Int = 10_000)
    {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeoutMs = timeoutMs
    }
}

public struct HTTPResponse: Sendable {
    public let status: Int
    public let body: [UInt8]
    /// Response header lines, names lowercased: ["etag": "\"abc\""].
    public let headers: [String: String]

    public var isSuccess: Bool { (200..<300).contains(status) }
}

/// A request that got no HTTP answer: DNS failure, refused or reset connection, timeout, oversized body.
public struct HTTPError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public let timedOut: Bool
    public var description: String { message }
}

/// Blocking HTTP(S) over libcurl. Each call uses its own easy handle, so it is safe from any thread;
/// callers run it on their own background threads, never on the decision path.
public enum HTTPClient {
    private static let initialized: Bool = {
        curl_global_init(Int(CURL_GLOBAL_DEFAULT))
        return true
    }()

    /// How often a cancellable transfer asks whether it was cancelled while it waits for the network.
    static let cancelPollMs: Int32 = 10

    public static func perform(_ request: HTTPRequest) -> Result<HTTPResponse, HTTPError> {
        _ = initialized
        guard let handle = curl_easy_init() else {
            return .failure(HTTPError(message: "curl_easy_init failed", timedOut: false))
        }
        defer { curl_easy_cleanup(handle) }
        let sink = ResponseSink(limit: request.maxResponseBytes, isCancelled: request.isCancelled)
        var headerList: UnsafeMutablePointer<curl_slist>? = nil
        for line in request.headers { headerList = curl_slist_append(headerList, line) }
        defer { curl_slist_free_all(headerList) }

        let sinkPointer = Unmanaged.passUnretained(sink).toOpaque()
        _ = exp_curl_setopt_string(handle, CURLOPT_URL, request.url)
        _ = exp_curl_setopt_long(handle, CURLOPT_NOSIGNAL, 1)
        _ = exp_curl_setopt_long(handle, CURLOPT_TIMEOUT_MS, max(1, request.timeoutMs))
        _ = exp_curl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, max(1, request.timeoutMs))
        _ = exp_curl_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 1)
        _ = exp_curl_setopt_long(handle, CURLOPT_MAXREDIRS, 5)
        _ = exp_curl_setopt_string(handle, CURLOPT_ACCEPT_ENCODING, "")
        _ = exp_curl_setopt_slist(handle, CURLOPT_HTTPHEADER, headerList)
        _ = exp_curl_setopt_callback(handle, CURLOPT_WRITEFUNCTION, ResponseSink.writeBody)
        _ = exp_curl_setopt_pointer(handle, CURLOPT_WRITEDATA, sinkPointer)
        _ = exp_curl_setopt_callback(handle, CURLOPT_HEADERFUNCTION, ResponseSink.writeHeader)
        _ = exp_curl_setopt_pointer(handle, CURLOPT_HEADERDATA, sinkPointer)
        if request.isCancelled != nil {
            _ = exp_curl_setopt_long(handle, CURLOPT_NOPROGRESS, 0)
            _ = exp_curl_setopt_progress(handle, ResponseSink.progress)
            _ = exp_curl_setopt_pointer(handle, CURLOPT_XFERINFODATA, sinkPointer)
        }
        let trust = CACertificates.processDefault
        if let file = request.caFile ?? trust.file { _ = exp_curl_setopt_string(handle, CURLOPT_CAINFO, file) }
        if let directory = trust.directory { _ = exp_curl_setopt_string(handle, CURLOPT_CAPATH, directory) }
        if request.method != "GET" { _ = exp_curl_setopt_string(handle, CURLOPT_CUSTOMREQUEST, request.method) }

        let code: CURLcode = request.body.withUnsafeBytes { body in
            if request.method == "POST" || !body.isEmpty {
                _ = exp_curl_setopt_long(handle, CURLOPT_POSTFIELDSIZE, body.count)
                _ = exp_curl_setopt_pointer(handle, CURLOPT_POSTFIELDS,
                                            UnsafeMutableRawPointer(mutating: body.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!))
            }
            guard request.isCancelled != nil else { return curl_easy_perform(handle) }
            return exp_curl_perform_cancellable(handle, ResponseSink.cancelCheck, sinkPointer, Self.cancelPollMs)
        }
        withExtendedLifetime(sink) {}
        guard code == CURLE_OK else {
            let reason = sink.overflowed ? "response larger than \(request.maxResponseBytes) bytes"
                       : code == CURLE_ABORTED_BY_CALLBACK ? "cancelled" : String(cString: curl_easy_strerror(code))
            return .failure(HTTPError(message: "\(request.method) \(request.url): \(reason)",
                                      timedOut: code == CURLE_OPERATION_TIMEDOUT))
        }
        var status = 0
        _ = exp_curl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        return .success(HTTPResponse(status: status, body: sink.body, headers: sink.headers))
    }
}

/// Collects a response's body and headers from curl's callbacks.
private final class ResponseSink {
    let limit: Int
    var body: [UInt8] = []
    var headers: [String: String] = [:]
    var overflowed = false
    let isCancelled: (@Sendable () -> Bool)?

    init(limit: Int, isCancelled: (@Sendable () -> Bool)?) {
        self.limit = limit
        self.isCancelled = isCancelled
    }

    static let progress: exp_curl_progress_callback = { context, _, _, _, _ in
        let sink = Unmanaged<ResponseSink>.fromOpaque(context!).takeUnretainedValue()
        return sink.isCancelled?() == true ? 1 : 0
    }

    static let cancelCheck: exp_curl_cancel_check = { context in
        let sink = Unmanaged<ResponseSink>.fromOpaque(context!).takeUnretainedValue()
        return sink.isCancelled?() == true ? 1 : 0
    }

    static let writeBody: exp_curl_data_callback = { data, size, count, context in
        let sink = Unmanaged<ResponseSink>.fromOpaque(context!).takeUnretainedValue()
        let length = size * count
        guard sink.body.count + length <= sink.limit else {
            sink.overflowed = true
            return 0  // curl aborts the transfer with CURLE_WRITE_ERROR
        }
        if let data { sink.body.append(contentsOf: UnsafeRawBufferPointer(start: data, count: length)) }
        return length
    }

    static let writeHeader: exp_curl_data_callback = { data, size, count, context in
        let sink = Unmanaged<ResponseSink>.fromOpaque(context!).takeUnretainedValue()
        let length = size * count
        guard let data else { return length }
        let line = String(decoding: UnsafeRawBufferPointer(start: data, count: length), as: UTF8.self)
        // A new status line (after a redirect or 100-continue) starts a new header set.
        if line.hasPrefix("HTTP/") { sink.headers.removeAll() }
        if let colon = line.firstIndex(of: ":") {
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingSpaces()
            sink.headers[name] = value
        }
        return length
    }
}

extension Substring {
    func trimmingSpaces() -> String {
        var slice = self[...]
        while let first = slice.first, first == " " || first == "\t" { slice = slice.dropFirst() }
        // "\r\n" is one Character (a grapheme cluster), distinct from "\r" and "\n".
        while let last = slice.last, last == " " || last == "\t" || last == "\r" || last == "\n" || last == "\r\n" {
            slice = slice.dropLast()
        }
        return String(slice)
    }
}
