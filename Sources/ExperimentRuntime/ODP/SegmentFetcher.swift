import ExperimentCore

/// Where ODP requests go: the host (scheme included, e.g. "https://api.zaius.com") and public API key.
public struct ODPEndpoint: Sendable, Equatable {
    public let host: String
    public let apiKey: String
}

/// The segments query of the ODP GraphQL API (`<host>/v3/graphql`), sent as the reference SDK sends it,
/// and the reading of its answer.
enum SegmentFetcher {
    /// The identifier kinds ODP knows: the host's user id, or a visitor id for anonymous users.
    static let userIdKey = "fs_user_id"
    static let vuidKey = "vuid"

    static func url(_ endpoint: ODPEndpoint) -> String { endpoint.host + "/v3/graphql" }

    /// The request body: a parameterized query with the user and the segments to check as variables.
    static func body(userKey: String, userValue: String, segments: [String]) -> [UInt8] {
        var json = PythonStyleJSON()
        json.raw("{\"query\": ")
        json.string("query($userId: String, $audiences: [String]) {customer(\(userKey): $userId) "
                    + "{audiences(subset: $audiences) {edges {node {name state}}}}}")
        json.raw(", \"variables\": {\"userId\": ")
        json.string(userValue)
        json.raw(", \"audiences\": ")
        json.stringArray(segments)
        json.raw("}}")
        return json.text
    }

    /// Asks ODP which of `segments` the user qualifies for. Blocking: run it off the decision path.
    static func fetch(_ endpoint: ODPEndpoint, userKey: String, userValue: String, segments: [String],
                      timeoutMs: Int, caFile: String? = nil) -> Result<[String], ClientError>
    {
        var request = HTTPRequest(method: "POST", url: url(endpoint),
                                  headers: ["content-type: application/json", "x-api-key: \(endpoint.apiKey)"],
                                  body: body(userKey: userKey, userValue: userValue, segments: segments),
                                  timeoutMs: timeoutMs)
        request.caFile = caFile
        switch HTTPClient.perform(request) {
        case .failure(let error):
            return .failure(failed(error.timedOut ? "network error: timed out" : "network error: \(error.message)"))
        case .success(let response):
            guard response.isSuccess else { return .failure(failed("HTTP status \(response.status)")) }
            return parse(response.body)
        }
    }

    /// The qualified segment names of a GraphQL answer, or why there are none.
    static func parse(_ body: [UInt8]) -> Result<[String], ClientError> {
        let document: JSONDocument
        do {
            document = try body.withUnsafeBytes { bytes throws(JSONError) in
                try JSONDocument.parse(bytes, what: "ODP response", maxBytes: 16 << 20, maxDepth: 64)
            }
        } catch {
            return .failure(failed("JSON decode error"))
        }
        // Values borrow the document's memory: keep it alive while they are read.
        return withExtendedLifetime(document) { read(document.root) }
    }

    private static func read(_ root: JSONValue) -> Result<[String], ClientError> {
        guard root.kind == .object else { return .failure(failed("decode error")) }
        if let errors = root.member("errors") {
            guard errors.kind == .array, errors.count > 0, let extensions = errors[0].member("extensions"),
                  extensions.kind == .object
            else { return .failure(failed("decode error")) }
            let classification = extensions.member("classification")?.string
            let code = extensions.member("code")?.string
            // The reference reads the code; ODP has also answered with only the classification.
            if code == "INVALID_IDENTIFIER_EXCEPTION" || classification == "InvalidIdentifierException" {
                let detail = errors[0].member("message")?.string.map { ": \($0)" } ?? ""
                return .failure(ClientError(.invalidUserId,
                                            "audience segments fetch failed (invalid identifier)\(detail)"))
            }
            return .failure(failed(classification ?? code ?? "decode error"))
        }
        guard let edges = root.member("data")?.member("customer")?.member("audiences")?.member("edges"),
              edges.kind == .array
        else { return .failure(failed("decode error")) }
        var qualified: [String] = []
        for edge in edges.elements {
            guard let node = edge.member("node"), node.kind == .object, let name = node.member("name")?.string
            else { return .failure(failed("decode error")) }
            if node.member("state")?.string == "qualified" { qualified.append(name) }
        }
        return .success(qualified)
    }

    static func failed(_ reason: String) -> ClientError {
        ClientError(.fetchFailed, "audience segments fetch failed (\(reason))")
    }
}
