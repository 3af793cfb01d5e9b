import ExperimentKit
import Testing
#if canImport(Glibc)
import Glibc
#endif

// The Swift examples of the Optimizely initialization seed (001) that ExperimentKit serves, each changed only
// in: the import; `OptimizelyClient` read as ExperimentKit's `ExperimentClient` (the alias below: ExperimentKit
// has no product named after Optimizely); "<Your_SDK_Key>" -> "demo" with `settings: seedSettings()` (the
// demo datafile from a local file, a state directory of the test's own); "flagKey" -> "checkout_redesign";
// the bundled datafile read from examples/datafiles instead of `Bundle.main`; the placeholder comments and
// `print`s become expectations. Not served here (see docs/swift-seeds.md): OptimizelySdkSettings (the ODP
// settings struct), the Objective-C examples, the UIApplication delegate example.

typealias OptimizelyClient = ExperimentClient

private let userId = "user-123"
private let flagKey = "checkout_redesign"

/// The bundled datafile (the seed's `String(contentsOfFile: Bundle.main.path(...))`).
func readSeedDatafile() -> String {
    var bytes: [UInt8] = []
    guard let file = fopen(datafilesDirectory + "/demo.json", "rb") else { return "" }
    defer { fclose(file) }
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while case let count = fread(&buffer, 1, buffer.count, file), count > 0 { bytes += buffer[0..<count] }
    return String(decoding: bytes, as: UTF8.self)
}

private let localDatafile = readSeedDatafile()

@Suite struct OptimizelySeedExamples {
    // "Examples": synchronous, then asynchronous with a callback
    @Test func synchronousAndAsynchronousStart() throws {
        // Build and config OptimizelyClient
        let optimizely = try OptimizelyClient(sdkKey: "demo", settings: seedSettings())
        let user = optimizely.createUserContext(userId: userId)
        let datafileJSON = localDatafile

        // Synchronously initialize the client, then make a decision for a flag rule (such as an A/B test)
        do {
            try optimizely.start(datafile: datafileJSON)

          let decision = user.decide(key: flagKey)
          let variationKey = decision.variationKey
          #expect(variationKey != nil)
        } catch {
          // errors
          Issue.record(error)
        }

        // Or, instantiate it asynchronously with a callback (a second client: the seed says to use one way)
        let asynchronous = try OptimizelyClient(sdkKey: "demo", settings: seedSettings())
        let asyncUser = asynchronous.createUserContext(userId: userId)
        let keys = Collected<String?>()
        asynchronous.start { result in
            let decision = asyncUser.decide(key: flagKey)
          let variationKey = decision.variationKey
          keys.append(variationKey)
        }
        #expect(keys.wait(for: 1).first! != nil)
        optimizely.close()
        asynchronous.close()
    }

    // "Enable bundled datafiles"
    @Test func bundledDatafile() throws {
        let optimizely = try OptimizelyClient(sdkKey: "demo", settings: seedSettings())

        do {
            let datafileJSON = localDatafile
            try optimizely.start(datafile: datafileJSON)

            // Optimizely SDK initialized successfully
            #expect(optimizely.isReady)
        } catch {
            // Optimizely SDK initialization failed
            Issue.record(error)
        }
        // "Dispose of the client"
        optimizely.close()
    }

    // "Configure datafile polling"
    @Test func datafilePolling() throws {
        // Datafile update interval can be configured when the SDK is configured
        // Background datafile update is disabled if periodicDownloadInterval is zero
        let optimizely = try OptimizelyClient(sdkKey: "demo",
                                              periodicDownloadInterval: 5*60, settings: seedSettings())
        // every 5 minutes
        try optimizely.start(datafile: localDatafile)
        #expect(optimizely.isReady)
        optimizely.close()
    }

    // "More sample code": S1, S2, S3
    @Test(arguments: ["S1", "S2", "S3"]) func synchronousSamples(sample: String) throws {
        let optimizely: OptimizelyClient
        switch sample {
        case "S1":
            optimizely = try OptimizelyClient(sdkKey: "demo", settings: seedSettings())
            try? optimizely.start(datafile: localDatafile)
        case "S2":
            optimizely = try OptimizelyClient(sdkKey: "demo", settings: seedSettings())
            try? optimizely.start(datafile: localDatafile,
                                  doUpdateConfigOnNewDatafile: true)
        default:
            optimizely = try OptimizelyClient(sdkKey: "demo",
                                              periodicDownloadInterval: 60, settings: seedSettings())
            try? optimizely.start(datafile: localDatafile)
        }
        let user = optimizely.createUserContext(userId: userId)
        let decision = user.decide(key: flagKey)
        let variationKey = decision.variationKey
        #expect(variationKey != nil)
        optimizely.close()
    }

    // "More sample code": A1, A2
    @Test(arguments: [nil, 60]) func asynchronousSamples(periodicDownloadInterval: Int?) throws {
        let optimizely = try OptimizelyClient(sdkKey: "demo",
                                              periodicDownloadInterval: periodicDownloadInterval, settings: seedSettings())
        let keys = Collected<String?>()
        optimizely.start { result in
            let user = optimizely.createUserContext(userId: userId)
            let decision = user.decide(key: flagKey)
            let variationKey = decision.variationKey
            keys.append(variationKey)
        }
        #expect(keys.wait(for: 1).first! != nil)
        optimizely.close()
    }

    // "More sample code": A3 (async-await)
    @Test func asynchronousAwaitSample() async throws {
        let optimizely = try OptimizelyClient(sdkKey: "demo",
                                              periodicDownloadInterval: 60, settings: seedSettings())
        let task = Task { [optimizely] in
            do {
                try await optimizely.start()
            } catch {
                Issue.record("Optimizely SDK initiliazation failed: \(error)")
            }
        }
        await task.value
        #expect(optimizely.isReady)
        optimizely.close()
    }
}
