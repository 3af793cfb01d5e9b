import ExperimentKit
import SigmaKit
import Testing

// Every Swift example of the Sigma seed (004), each changed only in:
// - `import SigmaSDK` -> `import SigmaKit`;
// - values: project token "demo" with `settings: seedSettings()` (the demo datafile from a local file, a
//   state directory of the test's own), the demo's names for the flag ("my_first_flag" -> "checkout_redesign",
//   "my_feature_flag" -> "search_ranking"), the experiment ("my_first_experiment", "experiment_name" ->
//   "search_ranking_semantic") and the holdout ("my_first_holdout" -> "q4_global_holdout");
// - placeholder comments ("// Обработка ...") become expectations, and the callback examples wait for their
//   callbacks (they run on a background thread).
// The examples share Sigma's "default" tag, so they run one after the other.

/// Sigma's initialization example (with the user example's user), as the other examples expect it done.
private func initializeDefaultClient() throws -> SigmaClient {
    let user = SigmaUser.Builder()
    .setUserId("123")
    .setCustomProperty(true, key: "isAuthorized")
    .setEmail("user123@expf.ru")
    .build()
    return try Sigma.initializeClient(projectToken: "demo", initialUser: user, settings: seedSettings())
}

@Suite(.serialized) struct SigmaSeedExamples {
    // "Инициализация SDK": the user builder
    @Test func creatingASigmaUser() {
        let user = SigmaUser.Builder()
        .setUserId("123")
        .setCustomProperty(true, key: "isAuthorized")
        .setEmail("user123@expf.ru")
        .build()
        #expect(user.userId == "123")
        #expect(user.properties == ["custom.isAuthorized": true, "email": "user123@expf.ru"])
    }

    // "Инициализация SDK": initializeClient, and the error for a tag in use
    @Test func initializingTheClient() {
        let token = "demo"
        let user = SigmaUser.Builder().setUserId("123").build()
        var initialized = false
        do {
        let client = try Sigma.initializeClient(projectToken: token, initialUser: user, settings: seedSettings())
        initialized = client.tag == "default"
        } catch let error {
        // Handle error
        Issue.record(error)
        }
        #expect(initialized)
        #expect(throws: SigmaError.initializationOfExistingClient(tag: "default")) {
            try Sigma.initializeClient(projectToken: token, initialUser: user, settings: seedSettings())
        }
        Sigma.removeClient(tag: "default")
        #expect(Sigma.getClient(tag: "default") == nil)
    }

    // "Получение значений Feature Flag"
    @Test func checkingAFlag() async throws {
        _ = try initializeDefaultClient()
        defer { Sigma.removeClient() }
        let values = Collected<Bool?>()

        guard let client = Sigma.getClient() else { return }

        // Callback версия
        client.checkFlag(
        flagName: "checkout_redesign",
        onSuccess: { (value: Bool?) in
        // Обработка значения Feature Flag
        values.append(value)
        },
        onError: { error in
        // Обработка ошибки
        Issue.record(error)
        }
        )

        // Async-await версия
        do {
        let firstFlag: Bool? = try await client.checkFlag(flagName: "checkout_redesign")
        // Обработка значения Feature Flag
        values.append(firstFlag)
        } catch let error {
        // Обработка ошибки
        Issue.record(error)
        }

        let seen = values.wait(for: 2)
        #expect(seen.count == 2 && seen[0] == seen[1] && seen[0] != nil)
    }

    // "Получение значений Feature Flag": the user's flags
    @Test func gettingTheUsersFlags() async throws {
        _ = try initializeDefaultClient()
        defer { Sigma.removeClient() }
        let kinds = Collected<String>()

        guard let client = Sigma.getClient() else { return }

        // Callback версия
        client.getUserFeatureFlagsDetails(
        onSuccess: { dictionary in
        if let dictionaryFlag = dictionary["search_ranking"] as? [String: Any] {
        // Обработка значения Feature Flag типа [String: Any]
        kinds.append("dictionary \(dictionaryFlag.keys.sorted())")
        } else {
        // Обработка значения Feature Flag типа Bool, Int, Double или String
        kinds.append("scalar")
        }
        },
        onError: { error in
        // Обработка ошибки
        Issue.record(error)
        }
        )

        // Async-await версия
        do {
        let dictionary = try await client.getUserFeatureFlagsDetails()
        if let dictionaryFlag = dictionary["search_ranking"] as? [String: Any] {
        // Обработка значения Feature Flag типа [String: Any]
        kinds.append("dictionary \(dictionaryFlag.keys.sorted())")
        } else {
        // Обработка значения Feature Flag типа Bool, Int, Double или String
        kinds.append("scalar")
        }
        } catch let error {
        // Обработка ошибки
        Issue.record(error)
        }

        #expect(kinds.wait(for: 2) == Array(repeating: "dictionary [\"ranking_config\"]", count: 2))
    }

    // "Получение экспериментов"
    @Test func gettingExperiments() async throws {
        _ = try initializeDefaultClient()
        defer { Sigma.removeClient() }
        let strings = Collected<String?>()
        let experiments = Collected<String?>()

        guard let client = Sigma.getClient() else { return }

        // Callback версии
        client.getAllUserExperiments(
        onSuccess: { experiments in
        // Обработка строки вида "expId.userGroupIndex|expId.userGroupIndex|...", где `expId` - идентификатор эксперимента, `userGroupIndex` - индекс группы пользователя в эксперименте.
        strings.append(experiments)
        },
        onError: { error in
        // Обработка ошибки
        Issue.record(error)
        }
        )

        client.getExperiment(
        name: "search_ranking_semantic",
        onSuccess: { experiment in
        // Обработка эксперимента
        experiments.append(experiment.map { "\($0.id).\($0.groupIndex)" })
        },
        onError: { error in
        // Обработка ошибки
        Issue.record(error)
        }
        )

        // Async-await версии
        do {
        let allExperiments = try await client.getAllUserExperiments()
        // Обработка строки вида "expId.userGroupIndex|expId.userGroupIndex|...", где `expId` - идентификатор эксперимента, `userGroupIndex` - индекс группы пользователя в эксперименте.
        strings.append(allExperiments)
        } catch let error {
        // Обработка ошибки
        Issue.record(error)
        }

        do {
        let userExperiment = try await client.getExperiment(name: "search_ranking_semantic")
        // Обработка эксперимента
        experiments.append(userExperiment.map { "\($0.id).\($0.groupIndex)" })
        } catch let error {
        // Обработка ошибки
        Issue.record(error)
        }

        let all = strings.wait(for: 2), mine = experiments.wait(for: 2)
        #expect(all.count == 2 && all[0] == all[1])
        #expect(mine.count == 2 && mine[0] == mine[1])
        // The experiment, when the user is in it, is one of the user's experiments.
        if let entry = mine.first ?? nil { #expect(all[0]?.split(separator: "|").contains(Substring(entry)) == true) }
    }

    // "Получение информации из эксперимента": getParamValue / getFeatureFlagValue
    @Test func readingAnExperiment() async throws {
        _ = try initializeDefaultClient()
        defer { Sigma.removeClient() }
        guard let client = Sigma.getClient() else { return }
        try await client.includeForce(experimentName: "search_ranking_semantic", groupIndex: 1)
        let experiment = try await client.getExperiment(name: "search_ranking_semantic")
        let config: [String: Any]? = experiment?.getParamValue(name: "ranking_config")  // a JSON variable
        let enabled: Bool? = try experiment?.getFeatureFlagValue(flagName: "search_ranking")
        #expect(experiment?.groupIndex == 1)
        #expect(config?["algorithm"] as? String == "semantic")
        #expect(enabled != nil)
    }

    // "Получение holdout-экспериментов"
    @Test func gettingHoldouts() async throws {
        _ = try initializeDefaultClient()
        defer { Sigma.removeClient() }
        let strings = Collected<String?>()
        let flags = Collected<Bool>()

        guard let client = Sigma.getClient() else { return }

        // Callback версии
        client.getAllUserHoldouts(
        onSuccess: { holdouts in
        // Обработка строки вида "holdoutId.userGroupIndex|holdoutId.userGroupIndex|...", где `holdoutId` - идентификатор holdout-эксперимента, `userGroupIndex` - индекс группы пользователя в holdout-эксперименте (всегда 0).
        strings.append(holdouts)
        },
        onError: { error in
        // Обработка ошибки
        Issue.record(error)
        }
        )

        client.getHoldout(
        name: "q4_global_holdout",
        onSuccess: { isInHoldout in
        // Обработка информации, попал ли пользователь в holdout-эксперимент
        flags.append(isInHoldout)
        },
        onError: { error in
        // Обработка ошибки
        Issue.record(error)
        }
        )

        // Async-await версии
        do {
        let allHoldouts = try await client.getAllUserHoldouts()
        // Обработка строки вида "holdoutId.userGroupIndex|holdoutId.userGroupIndex|...", где `holdoutId` - идентификатор holdout-эксперимента, `userGroupIndex` - индекс группы пользователя в holdout-эксперименте (всегда 0).
        strings.append(allHoldouts)
        } catch let error {
        // Обработка ошибки
        Issue.record(error)
        }

        do {
        let holdout = try await client.getHoldout(name: "q4_global_holdout")
        // Обработка информации, попал ли пользователь в holdout-эксперимент
        flags.append(holdout)
        } catch let error {
        // Обработка ошибки
        Issue.record(error)
        }

        let all = strings.wait(for: 2), held = flags.wait(for: 2)
        #expect(all.count == 2 && all[0] == all[1])
        #expect(held.count == 2 && held[0] == held[1])
        #expect((all[0] == "9001.0") == held[0])
    }

    // "Принудительное добавление пользователя в эксперимент (debug-only)"
    @Test func forcingMemberships() async throws {
        _ = try initializeDefaultClient()
        defer { Sigma.removeClient() }
        let done = Collected<String>()

        guard let client = Sigma.getClient() else { return }
        let experimentName = "search_ranking_semantic"

        // Callback версии
        client.includeForce(
        experimentName: experimentName,
        onSuccess: {
        // Пользователь добавлен в принудительный список
        done.append("included")
        },
        onError: { error in
        // Произошла ошибка
        Issue.record(error)
        }
        )
        #expect(done.wait(for: 1) == ["included"])
        #expect(try await client.getExperiment(name: experimentName) != nil)

        client.excludeForce(
        experimentName: experimentName,
        onSuccess: { experiment in
        // Пользователь исключен из принудительного списка
        done.append("excluded")
        },
        onError: { error in
        // Произошла ошибка
        Issue.record(error)
        }
        )
        #expect(done.wait(for: 2) == ["included", "excluded"])
        #expect(try await client.getExperiment(name: experimentName) == nil)

        // Async-await версии
        do {
        try await client.includeForce(experimentName: experimentName)
        // Пользователь добавлен в принудительный список
        done.append("included")
        } catch let error {
        // Произошла ошибка
        Issue.record(error)
        }

        do {
        try await client.excludeForce(experimentName: experimentName)
        // Пользователь исключен из принудительного списка
        done.append("excluded")
        } catch let error {
        // Произошла ошибка
        Issue.record(error)
        }
        #expect(done.all == ["included", "excluded", "included", "excluded"])

        try await client.excludeForceAll()
        #expect(try await client.getAllUserExperiments() == "")
    }

    // "Обновление информации о пользователе"
    @Test func updatingTheUser() throws {
        let client = try initializeDefaultClient()
        defer { Sigma.removeClient() }
        client.editUserProperties { $0.setGeoCountry("NL").setAppVersion("2.1") }
        #expect(client.user.properties["geo_country"] == "NL" && client.user.properties["email"] == "user123@expf.ru")
        client.setUserProperties { $0.setProfileId("p-1") }
        #expect(client.user.properties == ["profile_id": "p-1"] && client.user.userId == "123")
        client.clearUserProperties()
        #expect(client.user.properties.isEmpty)
    }
}
