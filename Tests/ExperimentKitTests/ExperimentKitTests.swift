import ExperimentKit
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

// The Swift API over the runtime, used as an app uses it, on examples/datafiles/demo.json. The expected
// decisions are optimizely-sdk 5.7.0's for the same users (python: Optimizely(datafile=...).
// create_user_context(id, attributes).decide(key)).

private let datafilesDirectory: String = {
    var path = #filePath  // .../Tests/ExperimentKitTests/ExperimentKitTests.swift
    for _ in 0..<3 { path = String(path[..<path.lastIndex(of: "/")!]) }
    return path + "/examples/datafiles"
}()

private func readFile(_ path: String) -> String {
    guard let file = fopen(path, "rb") else { fatalError("cannot open \(path)") }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
        let count = fread(&buffer, 1, buffer.count, file)
        if count == 0 { break }
        bytes += buffer[0..<count]
    }
    return String(decoding: bytes, as: UTF8.self)
}

private let demoDatafile = readFile(datafilesDirectory + "/demo.json")

/// A state directory of the test's own (never the user's default one): under $XDG_STATE_HOME, which the
/// Makefile points into .build, else under /tmp.
private func stateDirectory() -> String {
    let base = getenv("XDG_STATE_HOME").map { String(cString: $0) } ?? "/tmp"
    mkdir(base, 0o700)
    var template = Array((base + "/experimentkit-test-XXXXXX").utf8CString)
    guard let made = mkdtemp(&template) else { fatalError("mkdtemp failed") }
    return String(cString: made)
}

private func settings() -> ClientSettings {
    var settings = ClientSettings(stateDirectory: stateDirectory(), eventEndpoint: "none")
    settings.closeTimeoutMs = 5_000
    return settings
}

private func demoClient(defaultDecideOptions: [DecideOption] = []) throws -> ExperimentClient {
    try ExperimentClient(datafile: demoDatafile, defaultDecideOptions: defaultDecideOptions, settings: settings())
}

/// Values a closure running on another thread hands back.
private final class Collected<T: Sendable>: Sendable {
    private let values = Mutex<[T]>([])
    func append(_ value: T) { values.withLock { $0.append(value) } }
    var all: [T] { values.withLock { $0 } }
}

@Test func decidesTheDemoFlagsAsTheReference() throws {
    let client = try demoClient()
    defer { client.close() }
    let alice = client.createUserContext(userId: "alice", attributes: ["plan": "premium", "country": "NL"])
    let checkout = alice.decide(key: "checkout_redesign")
    #expect(checkout.flagKey == "checkout_redesign")
    #expect(checkout.variationKey == "control")
    #expect(checkout.enabled)
    #expect(checkout.ruleKey == "checkout_redesign_ab")
    #expect(checkout.variables == ["button_color": "blue", "show_trust_badges": false, "steps": 3])
    #expect(checkout.reasons.isEmpty)
    #expect(checkout.userContext.userId == "alice")

    let shipping = alice.decide(key: "free_shipping")
    #expect(shipping.variationKey == "on" && shipping.ruleKey == "free_shipping_nl_de")
    #expect(shipping.variable("threshold_cents") == .int(0))
    #expect(shipping.variable("banner_text")?.stringValue == "Free shipping on every order")

    let user1 = client.createUserContext(userId: "user-1")
    let ranking = user1.decide(key: "search_ranking")
    #expect(ranking.variationKey == "semantic" && ranking.enabled && ranking.ruleKey == "search_ranking_semantic")
    #expect(ranking.variables["ranking_config"] == ["algorithm": "semantic", "boost_in_stock": true, "max_results": 48])
    let dark = user1.decide(key: "dark_mode")
    #expect(dark.variationKey == nil && !dark.enabled && dark.ruleKey == nil)
    #expect(dark.variables == ["contrast": 1.0, "follow_system_theme": false])
    #expect(dark.variable("contrast")?.doubleValue == 1.0)
}

@Test func decideAllAndDecideForKeys() throws {
    let client = try demoClient()
    defer { client.close() }
    let user42 = client.createUserContext(userId: "user-42", attributes: ["plan": "premium"])
    let all = user42.decideAll()
    #expect(Set(all.keys) == ["checkout_redesign", "free_shipping", "search_ranking", "dark_mode"])
    #expect(all["free_shipping"]?.variationKey == "on")
    #expect(all["free_shipping"]?.ruleKey == "default-rollout-5002-6002")
    #expect(all["search_ranking"]?.variationKey == "bm25")

    let user1 = client.createUserContext(userId: "user-1")
    #expect(Set(user1.decideAll(options: [.enabledFlagsOnly]).keys) == ["search_ranking"])

    let some = user1.decide(keys: ["search_ranking", "no_such_flag"], options: [.includeReasons])
    #expect(some["search_ranking"]?.variationKey == "semantic")
    #expect(some["search_ranking"]?.reasons.isEmpty == false)
    let unknown = try #require(some["no_such_flag"])
    #expect(!unknown.enabled && unknown.variationKey == nil && unknown.reasons.isEmpty)
    #expect(user1.decideForKeys(["dark_mode", "search_ranking"], options: [.enabledFlagsOnly]).keys.sorted()
            == ["search_ranking"])
    #expect(user1.decide(key: "search_ranking", options: [.excludeVariables]).variables.isEmpty)
}

@Test func defaultDecideOptionsApplyToEveryCall() throws {
    let client = try demoClient(defaultDecideOptions: [.excludeVariables, .includeReasons])
    defer { client.close() }
    let decision = client.createUserContext(userId: "user-1").decide(key: "checkout_redesign")
    #expect(decision.variables.isEmpty)
    #expect(!decision.reasons.isEmpty)
}

@Test func decisionsThatCannotBeMadeComeBackDisabledWithTheReason() throws {
    let client = try demoClient()
    let user = client.createUserContext(userId: "user-1")
    let unknown = user.decide(key: "no_such_flag")
    #expect(!unknown.enabled && unknown.variationKey == nil && unknown.flagKey == "no_such_flag")
    #expect(unknown.reasons == ["No flag was found for key \"no_such_flag\"."])

    let notStarted = try ExperimentClient(sdkKey: nil, settings: settings())
    #expect(!notStarted.isReady)
    let early = notStarted.createUserContext(userId: "user-1").decide(key: "checkout_redesign")
    #expect(!early.enabled && early.reasons == ["Optimizely SDK not configured properly yet."])
    #expect(notStarted.createUserContext(userId: "user-1").decideAll().isEmpty)
    notStarted.close()

    client.close()
    #expect(!client.isReady)
    let closed = user.decide(key: "checkout_redesign")
    #expect(!closed.enabled && closed.reasons.count == 1)
    #expect(throws: ExperimentError.self) { try user.trackEvent(eventKey: "purchase") }
}

@Test func refusedDatafilesAndOptionsThrow() {
    let notJSON = #expect(throws: ExperimentError.self) { try ExperimentClient(datafile: "{not json", settings: settings()) }
    #expect(notJSON?.code == .invalidJSON)
    let notDatafile = #expect(throws: ExperimentError.self) {
        try ExperimentClient(datafile: "{\"version\": \"4\"}", settings: settings())
    }
    #expect(notDatafile?.code == .invalidDatafile)
    var bad = settings()
    bad.eventEndpoint = "ftp://example.com"
    let option = #expect(throws: ExperimentError.self) { try ExperimentClient(sdkKey: "k", settings: bad) }
    #expect(option?.code == .invalidOption)
}

@Test func forcedDecisionsBelongToTheContext() throws {
    let client = try demoClient()
    defer { client.close() }
    let user = client.createUserContext(userId: "user-1")
    let flag = DecisionContext(flagKey: "checkout_redesign")
    #expect(user.decide(key: "checkout_redesign").variationKey == "off")
    #expect(user.setForcedDecision(context: flag, decision: ForcedDecision(variationKey: "on")))
    #expect(user.getForcedDecision(context: flag) == ForcedDecision(variationKey: "on"))
    let forced = user.decide(key: "checkout_redesign", options: [.includeReasons])
    #expect(forced.variationKey == "on" && forced.enabled)
    #expect(forced.reasons.contains { $0.contains("forced") || $0.contains("Forced") })
    // Another context of the same user id does not see it; a copy does.
    #expect(client.createUserContext(userId: "user-1").decide(key: "checkout_redesign").variationKey == "off")
    #expect(user.copy().decide(key: "checkout_redesign").variationKey == "on")

    let rule = DecisionContext(flagKey: "checkout_redesign", ruleKey: "checkout_redesign_ab")
    let alice = client.createUserContext(userId: "alice", attributes: ["plan": "premium"])
    alice.setForcedDecision(context: rule, decision: ForcedDecision(variationKey: "one_page_checkout"))
    #expect(alice.decide(key: "checkout_redesign").variationKey == "one_page_checkout")
    #expect(alice.removeForcedDecision(context: rule))
    #expect(!alice.removeForcedDecision(context: rule))
    #expect(alice.decide(key: "checkout_redesign").variationKey == "control")

    #expect(user.removeAllForcedDecisions())
    #expect(user.getForcedDecision(context: flag) == nil)
    #expect(user.decide(key: "checkout_redesign").variationKey == "off")
}

@Test func attributesCanChange() throws {
    let client = try demoClient()
    defer { client.close() }
    let user = client.createUserContext(userId: "user-42")
    #expect(user.decide(key: "checkout_redesign").variationKey == "off")
    user.setAttribute(key: "plan", value: "premium")
    #expect(user.attributes == ["plan": "premium"])
    #expect(user.decide(key: "checkout_redesign").variationKey == "control")
    user.removeAttribute(key: "plan")
    #expect(user.attributes.isEmpty)
}

@Test func trackAndImpressionEventsReachTheDispatcher() throws {
    let client = try demoClient()
    let bodies = Collected<String>()
    client.setEventDispatcher { request in
        #expect(request.httpVerb == "POST")
        bodies.append(request.body)
        return true
    }
    let user = client.createUserContext(userId: "alice", attributes: ["plan": "premium"])
    _ = user.decide(key: "checkout_redesign")
    try user.trackEvent(eventKey: "purchase", eventTags: ["revenue": 4200, "category": "shoes"])
    #expect(throws: ExperimentError(.unknownEvent, "unknown event \"no_such_event\"")) {
        try user.trackEvent(eventKey: "no_such_event")
    }
    #expect(client.close() == 0)
    let all = bodies.all.joined(separator: "\n")
    #expect(all.contains("\"campaign_activated\""))
    #expect(all.contains("\"key\":\"purchase\""))
    #expect(all.contains("\"revenue\":4200"))
}

@Test func listenersHearDecisionsAndConversionsUntilRemoved() throws {
    let client = try demoClient()
    defer { client.close() }
    let decisions = Collected<DecisionNotification>()
    let tracks = Collected<TrackNotification>()
    let decisionId = client.notificationCenter.addDecisionNotificationListener { decisions.append($0) }
    client.notificationCenter.addTrackNotificationListener { tracks.append($0) }
    let user = client.createUserContext(userId: "alice", attributes: ["plan": "premium"])
    _ = user.decide(key: "checkout_redesign", options: [.disableDecisionEvent])
    try user.trackEvent(eventKey: "add_to_cart", eventTags: ["value": 2.5])

    let heard = try #require(decisions.all.first)
    #expect(heard.type == "flag" && heard.userId == "alice" && heard.attributes == ["plan": "premium"])
    #expect(heard.decisionInfo["flag_key"] == "checkout_redesign")
    #expect(heard.decisionInfo["variation_key"] == "control")
    #expect(heard.decisionInfo["decision_event_dispatched"] == false)
    let track = try #require(tracks.all.first)
    #expect(track.eventKey == "add_to_cart" && track.userId == "alice" && track.eventTags == ["value": 2.5])

    #expect(client.notificationCenter.removeNotificationListener(id: decisionId))
    #expect(!client.notificationCenter.removeNotificationListener(id: decisionId))
    _ = user.decide(key: "checkout_redesign")
    #expect(decisions.all.count == 1)
}

/// The SDK key "demo" names examples/datafiles/demo.json through a file:// datafile URL.
private func fetchingSettings() -> ClientSettings {
    var settings = settings()
    settings.datafileURLTemplate = "file://" + datafilesDirectory + "/{sdk_key}.json"
    return settings
}

@Test func asynchronousStartWithCompletion() throws {
    let client = try ExperimentClient(sdkKey: "demo", settings: fetchingSettings())
    defer { client.close() }
    let results = Collected<Result<Void, ExperimentError>>()
    client.start { results.append($0) }
    // Waits for the background fetch (a local file) to call back; not a timing assertion.
    for _ in 0..<2_000 where results.all.isEmpty { usleep(5_000) }
    let result = try #require(results.all.first)
    #expect(throws: Never.self) { try result.get() }
    #expect(client.isReady && client.datafileRevision == "42")
    #expect(client.createUserContext(userId: "user-1").decide(key: "search_ranking").variationKey == "semantic")
}

@Test func asynchronousStartWithAwait() async throws {
    let client = try ExperimentClient(sdkKey: "demo", settings: fetchingSettings())
    defer { client.close() }
    try await client.start()
    #expect(client.createUserContext(userId: "user-42").decide(key: "free_shipping").variationKey == "on")

    let missing = try ExperimentClient(sdkKey: "no-such-datafile", settings: fetchingSettings())
    defer { missing.close() }
    let messages = Collected<String>()
    missing.setLogger { _, message in messages.append(message) }
    let failure = await #expect(throws: ExperimentError.self) { try await missing.start() }
    #expect(failure?.code == .fetchFailed)
    #expect(!missing.isReady)
    #expect(messages.all.contains { $0.contains("datafile fetch failed") })
}

@Test func synchronousStartWithAnSDKKeyUsesTheBundledDatafile() throws {
    let client = try ExperimentClient(sdkKey: "no-such-datafile", settings: fetchingSettings())
    defer { client.close() }
    client.setLogger { _, _ in }  // the background fetch of the next start's datafile fails: no such file
    try client.start(datafile: demoDatafile)
    #expect(client.isReady)
    #expect(client.createUserContext(userId: "alice", attributes: ["plan": "premium", "country": "NL"])
            .decide(key: "free_shipping").ruleKey == "free_shipping_nl_de")
    #expect(throws: ExperimentError.self) { try ExperimentClient(sdkKey: nil, settings: settings()).start(datafile: "[]") }
}

/// optimizelyConfig: the library's OptimizelyConfig document, as optimizely-sdk 5.7.0's get_optimizely_config()
/// gives it for demo.json (the Python differential test compares every field over many datafiles).
@Test func optimizelyConfigIsTheReferenceOne() throws {
    let client = try demoClient()
    let config = try client.optimizelyConfig
    #expect(config.datafile == demoDatafile)
    #expect(config.sdkKey == "" || !config.sdkKey.isEmpty)
    let flag = try #require(config.featuresMap["checkout_redesign"])
    #expect(flag.experimentRules.map(\.key) == ["checkout_redesign_ab"])
    let color = try #require(flag.variablesMap["button_color"])
    #expect(color.id == "9001" && color.key == "button_color" && color.type == "string" && color.value == "blue")
    let experiment = try #require(config.experimentsMap["checkout_redesign_ab"])
    #expect(experiment.audiences == "\"High-value adult carts\" OR \"Premium plan (legacy audience)\"")
    #expect(experiment.variationsMap["control"]?.featureEnabled == true)
    #expect(experiment.variationsMap["control"]?.variablesMap["button_color"]?.value == "blue")
    #expect(!flag.deliveryRules.isEmpty || flag.experimentRules.count == 1)
    #expect(try client.optimizelyConfig == config)
    client.close()

    let notStarted = try ExperimentClient(sdkKey: nil, settings: settings())
    let early = #expect(throws: ExperimentError.self) { try notStarted.optimizelyConfig }
    #expect(early?.code == .notReady)
    notStarted.close()
}
