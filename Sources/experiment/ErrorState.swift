import CExperimentABI
import ExperimentRuntime
#if canImport(Glibc)
import Glibc
#endif

/// The calling thread's last error message (exp_last_error), in a per-thread malloc'd buffer that
/// pthread frees when the thread exits.
enum LastError {
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { pointer in free(pointer) }
        return key
    }()

    private static let empty: StaticString = ""

    static func set(_ message: String) {
        free(pthread_getspecific(key))
        pthread_setspecific(key, strdup(message))
    }

    @inline(__always)
    static func clear() {
        if let current = pthread_getspecific(key) {
            current.assumingMemoryBound(to: CChar.self).pointee = 0
        }
    }

    static var message: UnsafePointer<CChar> {
        if let current = pthread_getspecific(key) { return UnsafePointer(current.assumingMemoryBound(to: CChar.self)) }
        return UnsafeRawPointer(empty.utf8Start).assumingMemoryBound(to: CChar.self)
    }
}

@inline(__always)
func status(_ code: ErrorCode) -> exp_status { exp_status(rawValue: code.rawValue) }

let statusOK = exp_status(rawValue: 0)

/// Runs one API call: success clears the thread's last error, a failure records it and returns its code.
@inline(__always)
func api(_ body: () throws(ClientError) -> Void) -> exp_status {
    do {
        try body()
        LastError.clear()
        return statusOK
    } catch {
        LastError.set(error.message)
        return status(error.code)
    }
}

/// The client behind a handle (handles are retained `Client` references).
@inline(__always)
func client(_ handle: OpaquePointer?) throws(ClientError) -> Client {
    guard let handle else { throw ClientError(.invalidArgument, "client is NULL") }
    return Unmanaged<Client>.fromOpaque(UnsafeRawPointer(handle)).takeUnretainedValue()
}

/// Runs `body` with an object someone else keeps alive for the duration, without retaining it
/// (a retain writes to the object's reference count, which every thread using it shares).
@inline(__always)
func borrowing<Object: AnyObject, T>(_ object: Unmanaged<Object>, _ body: (Object) throws(ClientError) -> T)
    throws(ClientError) -> T
{
    let result: Result<T, ClientError> = object._withUnsafeGuaranteedRef { borrowed in
        do throws(ClientError) { return .success(try body(borrowed)) } catch { return .failure(error) }
    }
    return try result.get()
}

@inline(__always)
func required<T>(_ pointer: T?, _ name: StaticString) throws(ClientError) -> T {
    guard let pointer else { throw ClientError(.invalidArgument, "\(name) is NULL") }
    return pointer
}

/// A malloc'd copy of `text` for a `char **` out-parameter (freed by exp_free): every byte, NUL bytes included,
/// then a terminating NUL, so that the `_len` functions can give the whole text with its length.
func duplicate(_ text: String) -> UnsafeMutablePointer<CChar> { duplicateCounted(text).pointer }

/// `duplicate` and the copy's length in bytes (without the terminating NUL).
func duplicateCounted(_ text: String) -> (pointer: UnsafeMutablePointer<CChar>, count: Int) {
    var text = text
    return text.withUTF8 { bytes in
        let copy = malloc(bytes.count + 1)!.assumingMemoryBound(to: CChar.self)
        if let base = bytes.baseAddress { memcpy(copy, base, bytes.count) }
        copy[bytes.count] = 0
        return (copy, bytes.count)
    }
}

/// Stores a returned string and, when the caller asked for it, its length (0 for no string).
func store(_ text: String?, _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>,
           length: UnsafeMutablePointer<Int>?) {
    if let text {
        let (pointer, count) = duplicateCounted(text)
        out.pointee = pointer
        length?.pointee = count
    } else {
        out.pointee = nil
        length?.pointee = 0
    }
}
