import CExperimentABI
import ExperimentCore
import ExperimentRuntime

@_cdecl("exp_client_start_sync")
public func abiClientStartSync(_ handle: OpaquePointer?, _ bundled: UnsafePointer<CChar>?, _ length: Int,
                               _ update: Int32, _ outSource: UnsafeMutablePointer<Int32>?) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        let length = try checkedCount(length, limit: DatafileCompiler.maxBytes, "length")
        let givenFirst = update & 0x10 != 0  // EXP_SYNC_GIVEN_FIRST
        guard let mode = SyncDatafileUpdate(rawValue: update & ~0x10) else {
            throw ClientError(.invalidArgument, "update: \(update) is not an EXP_SYNC_UPDATE_* value")
        }
        if bundled == nil && length > 0 { throw ClientError(.invalidArgument, "datafile is NULL but length is \(length)") }
        let copy = bundled.map { Array(UnsafeRawBufferPointer(start: $0, count: length)) }
        let source = try client.startSynchronously(bundled: copy, update: mode, givenFirst: givenFirst)
        outSource?.pointee = source == .cache ? 1 : 0
    }
}
