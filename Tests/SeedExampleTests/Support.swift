import ExperimentKit
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// What the seed examples need in place of the vendors' hosts: the demo datafile served from a file:// URL
// (the site code / project token "demo" names examples/datafiles/demo.json), a state directory of the
// test's own, and no network (events go to an in-process dispatcher).

let datafilesDirectory: String = {
    var path = #filePath  // .../Tests/SeedExampleTests/Support.swift
    for _ in 0..<3 { path = String(path[..<path.lastIndex(of: "/")!]) }
    return path + "/examples/datafiles"
}()

/// A state directory of the test's own (never the user's default one).
func stateDirectory() -> String {
    let base = getenv("XDG_STATE_HOME").map { String(cString: $0) } ?? "/tmp"
    mkdir(base, 0o700)
    var template = Array((base + "/seed-examples-XXXXXX").utf8CString)
    guard let made = mkdtemp(&template) else { fatalError("mkdtemp failed") }
    return String(cString: made)
}

/// The settings every seed example's client gets: local datafile, own state, events kept in process.
func seedSettings() -> ClientSettings {
    var settings = ClientSettings(stateDirectory: stateDirectory(), eventEndpoint: "none",
                                  datafileURLTemplate: "file://" + datafilesDirectory + "/{sdk_key}.json")
    settings.closeTimeoutMs = 5_000
    return settings
}

/// Values a callback running on another thread hands back.
final class Collected<T: Sendable>: Sendable {
    private let values = Mutex<[T]>([])
    func append(_ value: T) { values.withLock { $0.append(value) } }
    var all: [T] { values.withLock { $0 } }

    /// Waits (up to 10 s) until `count` values came.
    func wait(for count: Int) -> [T] {
        for _ in 0..<1_000 where all.count < count { usleep(10_000) }
        return all
    }
}

/// Delivers the client's event batches to a list instead of the network (what "sent" means in the tests).
func collectEvents(of client: ExperimentClient) -> Collected<EventRequest> {
    let events = Collected<EventRequest>()
    client.setEventDispatcher { request in
        events.append(request)
        return true
    }
    return events
}
