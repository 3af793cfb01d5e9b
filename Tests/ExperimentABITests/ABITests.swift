import CExperimentABI
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The real exported ABI: the shipped library loaded with dlopen, symbols looked up by name.
/// Uses EXPERIMENT_LIBRARY when set, else the repository's release build (run `make lib` first).
final class LoadedLibrary: @unchecked Sendable {
    let handle: UnsafeMutableRawPointer

    static let repositoryRoot: String = {
        var path = #filePath
        for _ in 0..<3 { path = String(path[..<path.lastIndex(of: "/")!]) }
        return path
    }()

    init() throws {
        let path = getenv("EXPERIMENT_LIBRARY").map { String(cString: $0) }
            ?? LoadedLibrary.repositoryRoot + "/.build/release/libexperiment.so"
        guard let handle = dlopen(path, RTLD_NOW | RTLD_LOCAL) else {
            throw LoadError(message: "dlopen(\(path)): \(String(cString: dlerror()))")
        }
        self.handle = handle
    }

    struct LoadError: Error { let message: String }

    func symbol<T>(_ name: String, as type: T.Type) -> T {
        guard let pointer = dlsym(handle, name) else { fatalError("missing exported symbol \(name)") }
        return unsafeBitCast(pointer, to: type)
    }

    var lastError: String { String(cString: symbol("exp_last_error", as: (@convention(c) () -> UnsafePointer<CChar>).self)()) }
}

typealias CreateFn = @convention(c) (UnsafePointer<CChar>?, UnsafeMutablePointer<OpaquePointer?>?) -> exp_status
typealias StartFn = @convention(c) (OpaquePointer?, UnsafePointer<CChar>?, Int) -> exp_status
typealias DecideFn = @convention(c) (OpaquePointer?, UnsafePointer<CChar>?, UnsafePointer<CChar>?,
                                     UnsafePointer<exp_attribute>?, Int, UInt32, UnsafeMutablePointer<exp_decision>?) -> exp_status
typealias ReleaseFn = @convention(c) (UnsafeMutablePointer<exp_decision>?) -> Void
typealias FreeClientFn = @convention(c) (OpaquePointer?) -> Void
typealias StatusStrFn = @convention(c) (exp_status) -> UnsafePointer<CChar>

let datafile = """
{"version": "4", "projectId": "1", "accountId": "2", "revision": "7", "attributes": [{"id": "50", "key": "plan"}],
 "audiences": [{"id": "60", "name": "pro", "conditions": "[\\"and\\", {\\"name\\": \\"plan\\", \\"type\\": \\"custom_attribute\\", \\"match\\": \\"exact\\", \\"value\\": \\"pro\\"}]"}],
 "experiments": [], "groups": [], "events": [],
 "rollouts": [{"id": "70", "experiments": [
   {"id": "71", "key": "pro_rule", "status": "Running", "layerId": "70", "audienceIds": ["60"], "forcedVariations": {},
    "variations": [{"id": "72", "key": "on", "featureEnabled": true, "variables": []}],
    "trafficAllocation": [{"entityId": "72", "endOfRange": 10000}]},
   {"id": "73", "key": "everyone_else", "status": "Running", "layerId": "70", "audienceIds": [], "forcedVariations": {},
    "variations": [{"id": "74", "key": "off", "featureEnabled": false, "variables": []}],
    "trafficAllocation": [{"entityId": "74", "endOfRange": 10000}]}]}],
 "featureFlags": [{"id": "80", "key": "pro_feature", "experimentIds": [], "rolloutId": "70", "variables": []}]}
"""

@Suite("Exported C ABI through dlopen")
struct ABITests {
    let library: LoadedLibrary

    init() throws { library = try LoadedLibrary() }

    func startedClient() -> OpaquePointer? {
        var client: OpaquePointer? = nil
        #expect(library.symbol("exp_client_create", as: CreateFn.self)(nil, &client) == EXP_OK)
        let status = datafile.withCString { library.symbol("exp_client_start", as: StartFn.self)(client, $0, strlen($0)) }
        #expect(status == EXP_OK, "\(library.lastError)")
        return client
    }

    @Test func versionMatchesHeader() {
        let version = library.symbol("exp_version", as: (@convention(c) () -> UnsafePointer<CChar>).self)()
        #expect(String(cString: version) == EXP_VERSION_STRING)
    }

    @Test func decideTypedAttributes() {
        let client = startedClient()
        defer { library.symbol("exp_client_free", as: FreeClientFn.self)(client) }
        let decide = library.symbol("exp_decide", as: DecideFn.self)
        let release = library.symbol("exp_decision_release", as: ReleaseFn.self)
        var decision = exp_decision()
        let status = "plan".withCString { key in
            "pro".withCString { value in
                var attribute = exp_attr_string(key, value)
                return decide(client, "user-1", "pro_feature", &attribute, 1, 0, &decision)
            }
        }
        #expect(status == EXP_OK)
        #expect(decision.enabled == 1)
        #expect(String(cString: decision.variation_key) == "on")
        #expect(String(cString: decision.rule_key) == "pro_rule")
        release(&decision)
        #expect(decision.variation_key == nil)

        #expect(decide(client, "user-1", "pro_feature", nil, 0, 0, &decision) == EXP_OK)
        #expect(decision.enabled == 0)
        #expect(String(cString: decision.rule_key) == "everyone_else")
        release(&decision)
    }

    @Test func badInputsGiveCodesAndMessages() {
        let client = startedClient()
        defer { library.symbol("exp_client_free", as: FreeClientFn.self)(client) }
        let decide = library.symbol("exp_decide", as: DecideFn.self)
        var decision = exp_decision()
        #expect(decide(nil, "u", "pro_feature", nil, 0, 0, &decision) == EXP_ERR_INVALID_ARGUMENT)
        #expect(library.lastError == "client is NULL")
        #expect(decide(client, nil, "pro_feature", nil, 0, 0, &decision) == EXP_ERR_INVALID_ARGUMENT)
        #expect(library.lastError == "user_id is NULL")
        #expect(decide(client, "u", "nope", nil, 0, 0, &decision) == EXP_ERR_UNKNOWN_FLAG)
        #expect(library.lastError.contains("unknown flag \"nope\""))
        // The reference's error decision, filled even without INCLUDE_REASONS.
        #expect(String(cString: decision.flag_key) == "nope" && decision.enabled == 0 && decision.variation_key == nil)
        #expect(decision.reason_count == 1 && String(cString: decision.reasons[0]!) == "No flag was found for key \"nope\".")
        library.symbol("exp_decision_release", as: ReleaseFn.self)(&decision)
        let invalid: [UInt8] = [0x75, 0xC3, 0x28, 0]
        let status = invalid.withUnsafeBufferPointer {
            decide(client, UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), "pro_feature", nil, 0, 0, &decision)
        }
        #expect(status == EXP_ERR_INVALID_UTF8)
        #expect(decide(client, "u", "pro_feature", nil, 3, 0, &decision) == EXP_ERR_INVALID_ARGUMENT)
        #expect(decide(client, "u", "pro_feature", nil, 0, 1 << 20, &decision) == EXP_ERR_INVALID_ARGUMENT)
        // The client still works after every error.
        #expect(decide(client, "u", "pro_feature", nil, 0, 0, &decision) == EXP_OK)
        library.symbol("exp_decision_release", as: ReleaseFn.self)(&decision)
        let name = library.symbol("exp_status_str", as: StatusStrFn.self)(EXP_ERR_UNKNOWN_FLAG)
        #expect(String(cString: name) == "EXP_ERR_UNKNOWN_FLAG")
    }

    @Test func rejectedDatafileKeepsConfig() {
        let client = startedClient()
        defer { library.symbol("exp_client_free", as: FreeClientFn.self)(client) }
        let start = library.symbol("exp_client_start", as: StartFn.self)
        let garbage = "{\"version\": \"4\"} trailing"
        #expect(garbage.withCString { start(client, $0, strlen($0)) } == EXP_ERR_INVALID_JSON)
        #expect(library.lastError.contains("datafile"))
        var decision = exp_decision()
        #expect(library.symbol("exp_decide", as: DecideFn.self)(client, "u", "pro_feature", nil, 0, 0, &decision) == EXP_OK)
        library.symbol("exp_decision_release", as: ReleaseFn.self)(&decision)
    }
}
