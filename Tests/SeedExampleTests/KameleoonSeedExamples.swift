import ExperimentKit
import KameleoonKit
import Testing

// Every Swift example of the Kameleoon seed (003), each changed only in:
// - `import ssx` -> `import KameleoonKit`;
// - values: site code "demo" with `settings: seedSettings()` (the demo datafile from a local file, a state
//   directory of the test's own), experiment 75253 -> 3002 (search_ranking_semantic), its variations
//   148382 / 187791 -> 3201 / 3202, goal ids -> 8001 / 8002 (the demo's events);
// - where the seed's text is not valid Swift, the smallest fix, marked `// fix:` (a doubled `)`, Java's
//   `UUID.randomUUID().toString()` and `String userID = ...`, `try? x ?? "reference"` whose optional cannot
//   be assigned to a String, locals mutated from an escaping closure);
// - the iOS-only wrappers (`@UIApplicationMain class AppDelegate: UIApplicationDelegate`,
//   `applicationWillEnterForeground`) are dropped: their bodies run as the test;
// - placeholder comments (`// callback code`) become expectations.

// "Initializing Kameleoon Client"
public final class KameleoonDelegate: Sendable  // fix: Swift 6 wants the shared instance Sendable
{
    private static let siteCode = "demo"  // fix: an instance initializer cannot read another instance property
    public let kameleoonClient = ClientFactory.create(sitecode: siteCode, settings: seedSettings())
}

let kameleoonDelegate = KameleoonDelegate()

/// Waits until the shared client has fetched the demo datafile (the examples below assume it may not have).
private func readyDelegateClient() async -> KameleoonClient {
    let client = kameleoonDelegate.kameleoonClient
    _ = await client.runWhenReady(timeout: 10_000)
    return client
}

@Test func kameleoonInitializingTheClient() async {
    let kameleoonClient = kameleoonDelegate.kameleoonClient
    #expect(await kameleoonClient.runWhenReady(timeout: 10_000))
    #expect(kameleoonClient.ready)
}

// "Triggering an experiment", first sample (the `.ready` approach)
@Test func kameleoonTriggeringWithReady() async {
    _ = await readyDelegateClient()
    let kameleoonClient = kameleoonDelegate.kameleoonClient
    let userID = "1267576" // usually, this would be the internal ID of this user
    var variationID : VariationID
    var recommendedProductsNumber : Int = 0  // fix: read below on paths the seed leaves unset

    if (kameleoonClient.ready) {
        variationID = (try? kameleoonClient.triggerExperiment(userID, 3002)) ?? "reference"  // fix: parentheses
    }
    else {
        // The SDK is not ready, so the user is "out of the experiments". This is the same as if he was bucketed into the reference
        variationID = "reference"
    }

    if (variationID == "reference") {  // fix: one `)`
        //This is the default / reference number of products to display
        recommendedProductsNumber = 5
    }
    else if (variationID == "3201") {
        //We are changing number of recommended products for this variation to 10
        recommendedProductsNumber = 10
    }
    else if (variationID == "3202") {
        //We are changing number of recommended products for this variation to 8
        recommendedProductsNumber = 8
    }
    #expect([5, 10, 8].contains(recommendedProductsNumber))
    // Sticky: the same user gets the same variation again.
    #expect(((try? kameleoonClient.triggerExperiment(userID, 3002)) ?? "reference") == variationID)
}

// "Triggering an experiment", second sample (runWhenReady with a callback); also the reference's
// "Waiting until the Kameleoon Client is initialized"
@Test func kameleoonTriggeringWithRunWhenReady() {
    let kameleoonClient = kameleoonDelegate.kameleoonClient
    let userID = "1267576" // usually, this would be the internal ID of this user
    let outcomes = Collected<Int>()
    kameleoonClient.runWhenReady(1000) { success in
        var variationID : VariationID  // fix: locals of the callback, not of the enclosing function
        var recommendedProductsNumber : Int = 0
        if (success)
        {
            variationID = (try? kameleoonClient.triggerExperiment(userID, 3002)) ?? "reference"  // fix: parentheses
            if (variationID == "reference") {  // fix: one `)`
                //This is the default / reference number of products to display
                recommendedProductsNumber = 5
            }
            else if (variationID == "3201") {
                //We are changing number of recommended products for this variation to 10
                recommendedProductsNumber = 10
            }
            else if (variationID == "3202") {
                //We are changing number of recommended products for this variation to 8
                recommendedProductsNumber = 8
            }
        }
        else
        {
            variationID = "reference"
            recommendedProductsNumber = 5
        }
        outcomes.append(recommendedProductsNumber)
    }
    let numbers = outcomes.wait(for: 1)
    #expect(numbers.count == 1 && [5, 10, 8].contains(numbers[0]))
}

// "Tracking conversion" (getting started)
@Test func kameleoonTrackingConversionWithCallback() async {
    let kameleoonClient = await readyDelegateClient()
    let events = collectEvents(of: kameleoonClient.experimentClient)
    let userID = "a-random-user-id"  // fix: was Java's UUID.randomUUID().toString()
    let goalID = "8002"
    _ = (userID, goalID)  // the seed declares them and then passes literals
    let delivered = Collected<Bool>()

    kameleoonClient.trackConversion(userID : "1267576", goalID : 8001, revenue: 1.0) { success in
        if success {
            // callback code
            delivered.append(success)
        }
    }
    #expect(delivered.wait(for: 1) == [true])
    #expect(events.all.contains { $0.body.contains("1267576") })
}

// Reference: "Initialization", "Checking that the Kameleoon Client is properly initialized"
@Test func kameleoonReferenceInitialization() async {
    let siteCode = "demo"
    let kameleoonClient = ClientFactory.create(sitecode: siteCode, settings: seedSettings())
    _ = await kameleoonClient.runWhenReady(timeout: 10_000)
    let ready = kameleoonClient.ready
    #expect(ready)
}

// Reference: "Triggering experiments"
@Test func kameleoonReferenceTriggeringExperiments() async {
    let kameleoonClient = await readyDelegateClient()
    let userID = "user-75253"  // fix: was `String userID = UUID.randomUUID().toString()`
    let experimentID = 3002  // fix: was `Int experimentID = 75253`
    var variationID: String  // fix: was `String variationID`

    variationID = (try? kameleoonClient.triggerExperiment(userID, experimentID)) ?? "reference"  // fix: parentheses
    #expect(["reference", "3201", "3202"].contains(variationID))
}

// Reference: the errors triggerExperiment throws ("Exceptions Thrown")
@Test func kameleoonReferenceTriggerErrors() async {
    #expect(throws: KameleoonError.self) {  // a refused bundled datafile throws at once
        try ClientFactory.create(sitecode: "demo", datafile: "{}", settings: seedSettings())
    }
    // No datafile for this site code: the client never becomes ready.
    let unstarted = ClientFactory.create(sitecode: "no-such-site", settings: seedSettings())
    #expect(throws: KameleoonError.sdkNotReady) { try unstarted.triggerExperiment("u", 3002) }
    let kameleoonClient = await readyDelegateClient()
    #expect(throws: KameleoonError.experimentConfigurationNotFound) { try kameleoonClient.triggerExperiment("u", 75253) }
    // 3001 targets plan = premium: a user without it is not targeted.
    #expect(throws: KameleoonError.notTargeted) { try kameleoonClient.triggerExperiment("u", 3001) }
}

// Reference: "Tracking Conversion", "Saving data" and the data types, "Flushing saved data"
@Test func kameleoonReferenceDataAndConversions() async throws {
    let kameleoonClient = await readyDelegateClient()
    let events = collectEvents(of: kameleoonClient.experimentClient)
    let userID = "data-user"  // fix: was UUID.randomUUID().toString()
    let goalID = "8002"

    try? kameleoonClient.addData(userID : userID, data : Interest(2))
    try? kameleoonClient.addData(userID : userID, data : Conversion(goalID : 32, revenue : 10.0, negative : false))
    try? kameleoonClient.trackConversion(userID : userID, goalID : goalID, revenue: 10.0)

    // Custom Data Type
    try? kameleoonClient.addData(userID : userID, Custom(id : 1, value : "some custom value"))

    // Flushing saved data
    try? kameleoonClient.addData(userID : userID, data : Interest(2))
    try? kameleoonClient.addData(userID : userID, data : Conversion(goalID : 32, revenue : 10.0, negative : false))
    try? kameleoonClient.flush(userID : userID)

    try kameleoonClient.flush()
    let bodies = events.all.map(\.body).filter { $0.contains("data-user") }
    #expect(bodies.count == 2)
    #expect(bodies.contains { $0.contains("some custom value") })
}
