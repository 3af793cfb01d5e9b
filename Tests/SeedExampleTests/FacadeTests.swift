import ExperimentKit
import KameleoonKit
import SigmaKit
import Testing

// What the seed examples do not show: the facades' errors and edges, on the same local setup.

@Test func kameleoonRefusedSettingsGiveAClientThatIsNeverReady() async {
    var settings = seedSettings()
    settings.requestTimeoutMs = -5  // refused by the library's option rules
    let client = ClientFactory.create(sitecode: "demo", settings: settings)
    #expect(!client.ready)
    #expect(await client.runWhenReady(timeout: 50) == false)
    #expect(throws: KameleoonError.sdkNotReady) { try client.triggerExperiment("u", 3002) }
}

@Test func kameleoonRunWhenReadyTimesOutWithoutADatafile() async {
    let client = ClientFactory.create(sitecode: "no-such-site", settings: seedSettings())
    #expect(await client.runWhenReady(timeout: 100) == false)
}

@Test func kameleoonTriggerIsStickyAndRejectsBadGoals() async throws {
    let client = try ClientFactory.create(sitecode: "demo", datafile: readSeedDatafile(), settings: seedSettings())
    #expect(client.ready)
    var seen: Set<String> = []
    for user in 0..<50 {
        guard let variation = try? client.triggerExperiment(visitorCode: "user-\(user)", experimentID: 3002) else { continue }
        #expect(try client.triggerExperiment("user-\(user)", 3002) == variation)
        seen.insert(variation)
    }
    #expect(seen == ["3201", "3202"])
    #expect(throws: KameleoonError.self) { try client.trackConversion(userID: "u", goalID: "not-a-number") }
    #expect(throws: KameleoonError.self) { try client.trackConversion(userID: "u", goalID: -1) }
}

@Suite(.serialized) struct SigmaFacadeTests {
    @Test func typedErrorsAndTags() async throws {
        let user = SigmaUser.Builder().setUserId("u-1").setCustomProperty("gold", key: "tier").build()
        let client = try Sigma.initializeClient(projectToken: "demo", initialUser: user, tag: "second",
                                                settings: seedSettings())
        defer { Sigma.removeClient(tag: "second") }
        #expect(Sigma.getClient(tag: "second") === client)
        #expect(Sigma.getClient(tag: "default") == nil)
        await #expect(throws: SigmaError.self) { try await client.getExperiment(name: "no_such_experiment") }
        await #expect(throws: SigmaError.self) { try await client.getHoldout(name: "no_such_holdout") }
        await #expect(throws: SigmaError.self) {
            let _: Int? = try await client.checkFlag(flagName: "checkout_redesign")  // a flag alone is a Bool
        }
        let steps: Int? = try await client.checkFlag(flagName: "checkout_redesign", variableKey: "steps")
        let enabled: Bool? = try await client.checkFlag(flagName: "checkout_redesign")
        #expect(enabled != nil && steps != nil)
        await #expect(throws: SigmaError.self) {
            try await client.includeForce(experimentName: "search_ranking_semantic", groupIndex: 7)
        }
    }

    @Test func anonymousUserGetsAnId() throws {
        let client = try Sigma.initializeClient(projectToken: "demo", tag: "anonymous", settings: seedSettings())
        defer { Sigma.removeClient(tag: "anonymous") }
        #expect(client.user.userId?.hasPrefix("anonymous-") == true)
    }
}
