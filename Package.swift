// swift-tools-version:6.0
import PackageDescription

// The decision path crosses three modules with generic code (DecisionService over the ABI's attribute
// source): cross-module optimization lets the compiler specialize it instead of dispatching generically.
// Exclusivity checks stay on in debug builds (and so in `swift test`); release builds leave them out: on the
// decision path each check was a call into the runtime's access set.
let optimized: [SwiftSetting] = [.unsafeFlags(["-cross-module-optimization", "-enforce-exclusivity=unchecked"],
                                              .when(configuration: .release))]

// Layers, one direction of dependency: experiment (C ABI) -> ExperimentRuntime -> ExperimentCore.
let package = Package(
    name: "libexperiment",
    products: [
        // libexperiment.so: the only product users link. Its exported surface is include/experiment.h.
        .library(name: "experiment", type: .dynamic, targets: ["experiment"]),
        // Command-line tool over the same library: validate datafiles, decide, explain, batch-decide JSONL.
        .executable(name: "experiment-cli", targets: ["experiment-cli"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        // json-c: the library's one JSON reader (datafiles, options, JSON attributes and tags, profiles,
        // server responses). A pure parser, so Core may use it. Datafiles are parsed one top-level array
        // element at a time from the caller's buffer (StreamedDatafile): no tree of a whole datafile.
        .systemLibrary(name: "CJSONC", path: "Sources/CJSONC", pkgConfig: "json-c",
                       providers: [.apt(["libjson-c-dev"])]),
        .systemLibrary(name: "CSQLite", path: "Sources/CSQLite", pkgConfig: "sqlite3",
                       providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CCurl", path: "Sources/CCurl", pkgConfig: "libcurl",
                       providers: [.apt(["libcurl4-openssl-dev"])]),
        // No pkgConfig: hiredis.pc adds -D_FILE_OFFSET_BITS=64, which SwiftPM refuses with a warning; the
        // headers are in /usr/include/hiredis and the shim includes them by that path.
        .systemLibrary(name: "CHiredis", path: "Sources/CHiredis", providers: [.apt(["libhiredis-dev"])]),
        // The public header as a Swift module, so the ABI target shares the exact C layouts.
        .systemLibrary(name: "CExperimentABI", path: "Sources/CExperimentABI"),
        // Pure decision logic: datafile -> compiled config, bucketing, audiences, decisions, event payloads.
        .target(name: "ExperimentCore", dependencies: ["CJSONC"], swiftSettings: optimized),
        // Moving parts: client state, config snapshots, user stores, event dispatch, HTTP, SQLite, Redis.
        .target(name: "ExperimentRuntime", dependencies: ["ExperimentCore", "CSQLite", "CCurl", "CHiredis"],
                swiftSettings: optimized),
        // The C ABI only: @_cdecl functions translating C <-> Swift.
        .target(name: "experiment", dependencies: ["ExperimentRuntime", "ExperimentCore", "CExperimentABI"],
                exclude: ["exports.map"], swiftSettings: optimized,
                linkerSettings: [
                    .unsafeFlags([
                        "-use-ld=lld",
                        "-Xlinker", "-soname=libexperiment.so.0",
                        "-Xlinker", "--version-script=Sources/experiment/exports.map",
                        "-Xlinker", "-z", "-Xlinker", "nodelete",
                    ]),
                ]),
        .executableTarget(name: "experiment-cli",
                          dependencies: ["ExperimentRuntime", "ExperimentCore",
                                         .product(name: "ArgumentParser", package: "swift-argument-parser")],
                          swiftSettings: optimized,
                          // lld, as for the library (and the static Foundation that ArgumentParser pulls in
                          // links without GNU ld's mktemp link-time warning).
                          linkerSettings: [.unsafeFlags(["-use-ld=lld"])]),
        .testTarget(name: "ExperimentCoreTests", dependencies: ["ExperimentCore", "CJSONC"],
                    exclude: ["generate_matcher_vectors.py"]),
        // Loads the shipped .build/release/libexperiment.so with dlopen and calls the exported C ABI.
        .testTarget(name: "ExperimentABITests", dependencies: ["CExperimentABI"]),
    ]
)

// `EXPERIMENT_LIBRARY_ONLY=1 swift build --product experiment`: the library's targets alone. The Python source
// distribution builds libexperiment.so this way from its own copy of Sources/: it carries no Tests/ and no CLI,
// and must not download the CLI's swift-argument-parser.
if Context.environment["EXPERIMENT_LIBRARY_ONLY"] == "1" {
    var needed: Set<String> = []
    var pending = ["experiment"]
    while let name = pending.popLast() {
        guard needed.insert(name).inserted, let target = package.targets.first(where: { $0.name == name }) else {
            continue
        }
        for dependency in target.dependencies {
            switch dependency {
            case .targetItem(let dependencyName, _), .byNameItem(let dependencyName, _):
                pending.append(dependencyName)
            default:
                fatalError("the library depends on another package's product: the source distribution cannot build it")
            }
        }
    }
    package.products = package.products.filter { $0.name == "experiment" }
    package.targets = package.targets.filter { needed.contains($0.name) }
    package.dependencies = []
}
