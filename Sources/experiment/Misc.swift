import CExperimentABI
import ExperimentCore
import ExperimentRuntime
#if canImport(Glibc)
import Glibc
#endif

private let versionText: StaticString = "0.1.0"

@_cdecl("exp_version")
public func abiVersion() -> UnsafePointer<CChar> {
    UnsafeRawPointer(versionText.utf8Start).assumingMemoryBound(to: CChar.self)
}

@_cdecl("exp_last_error")
public func abiLastError() -> UnsafePointer<CChar> { LastError.message }

@_cdecl("exp_free")
public func abiFree(_ pointer: UnsafeMutableRawPointer?) { free(pointer) }

private let statusNames: [Int32: StaticString] = [
    0: "EXP_OK", -1: "EXP_ERR_INVALID_ARGUMENT", -2: "EXP_ERR_INVALID_JSON", -3: "EXP_ERR_INVALID_OPTION",
    -4: "EXP_ERR_INVALID_DATAFILE", -5: "EXP_ERR_UNSUPPORTED_VERSION", -6: "EXP_ERR_NOT_READY",
    -7: "EXP_ERR_UNKNOWN_FLAG", -8: "EXP_ERR_UNKNOWN_EXPERIMENT", -9: "EXP_ERR_UNKNOWN_EVENT",
    -10: "EXP_ERR_UNKNOWN_VARIATION", -11: "EXP_ERR_NOT_TARGETED", -12: "EXP_ERR_NOT_ALLOCATED",
    -13: "EXP_ERR_INVALID_UTF8", -14: "EXP_ERR_TOO_LARGE", -15: "EXP_ERR_TOO_DEEP",
    -16: "EXP_ERR_INVALID_EVENT_TAGS", -17: "EXP_ERR_CLOSED", -18: "EXP_ERR_BUFFER_TOO_SMALL",
    -19: "EXP_ERR_TIMEOUT", -20: "EXP_ERR_TAG_IN_USE", -21: "EXP_ERR_TYPE_MISMATCH", -22: "EXP_ERR_QUEUE_FULL", -23: "EXP_ERR_STORE", -24: "EXP_ERR_ODP_NOT_ENABLED", -25: "EXP_ERR_INVALID_USER_ID", -26: "EXP_ERR_FETCH_FAILED", -27: "EXP_ERR_NOT_FOUND",
    -28: "EXP_ERR_DELIVERY_FAILED",
    -99: "EXP_ERR_INTERNAL",
]
private let unknownStatus: StaticString = "EXP_ERR_UNKNOWN_STATUS"

@_cdecl("exp_status_str")
public func abiStatusString(_ code: exp_status) -> UnsafePointer<CChar> {
    let name = statusNames[code.rawValue] ?? unknownStatus
    return UnsafeRawPointer(name.utf8Start).assumingMemoryBound(to: CChar.self)
}

@_cdecl("exp_decide_options_parse")
public func abiDecideOptionsParse(_ names: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<UInt32>?) -> exp_status {
    api { () throws(ClientError) in
        let out = try required(out, "out_options")
        let document = try parseJSON(try required(names, "names_json"), what: "decide options")
        out.pointee = try ClientOptions.decideOptions(document.root, what: "decide options").rawValue
    }
}
