// swift-tools-version:6.0
import PackageDescription

// No unsafeFlags here: SwiftPM refuses them in a package that another package depends on by version. The
// shipped libexperiment.so's compiler and linker flags (cross-module optimization, SONAME, the exports map,
// lld, nodelete) are passed by its build commands, from Sources/experiment/shipping.flags (see `make lib`).

// Layers, one direction of dependency: experiment (C ABI) -> ExperimentRuntime -> ExperimentCore, and
// ExperimentKit (the Swift API) -> ExperimentRuntime -> ExperimentCore beside the C ABI.
let package = Package(
    name: "libexperiment",
    products: [
        // libexperiment.so: the only product users link. Its exported surface is include/experiment.h.
        .library(name: "experiment", type: .dynamic, targets: ["experiment"]),
        // The Swift API for Swift programs that depend on this package: clients, user contexts, decide,
        // track, listeners (Optimizely Swift SDK style). Built from source into the program.
        .library(name: "ExperimentKit", targets: ["ExperimentKit"]),
        // The seeds' Swift API shapes over the same runtime: an app written against Kameleoon's Swift SDK
        // (`import ssx`) or Sigma's iOS SDK (`import SigmaSDK`) builds with `import KameleoonKit` /
        // `import SigmaKit` (docs/swift-seeds.md maps every call).
        .library(name: "KameleoonKit", targets: ["KameleoonKit"]),
        .library(name: "SigmaKit", targets: ["SigmaKit"]),
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
        .target(name: "ExperimentCore", dependencies: ["CJSONC"]),
        // Moving parts: client state, config snapshots, user stores, event dispatch, HTTP, SQLite, Redis.
        .target(name: "ExperimentRuntime", dependencies: ["ExperimentCore", "CSQLite", "CCurl", "CHiredis"]),
        // The C ABI only: @_cdecl functions translating C <-> Swift.
        .target(name: "experiment", dependencies: ["ExperimentRuntime", "ExperimentCore", "CExperimentABI"],
                exclude: ["exports.map", "shipping.flags"]),
        // The Swift API: Swift types over the runtime (not over the C ABI).
        .target(name: "ExperimentKit", dependencies: ["ExperimentRuntime", "ExperimentCore"]),
        .target(name: "KameleoonKit", dependencies: ["ExperimentKit", "ExperimentRuntime", "ExperimentCore"]),
        .target(name: "SigmaKit", dependencies: ["ExperimentKit", "ExperimentRuntime", "ExperimentCore"]),
        .executableTarget(name: "experiment-cli",
                          dependencies: ["ExperimentRuntime", "ExperimentCore",
                                         .product(name: "ArgumentParser", package: "swift-argument-parser")]),
        .testTarget(name: "ExperimentCoreTests", dependencies: ["ExperimentCore", "CJSONC"],
                    exclude: ["generate_matcher_vectors.py"]),
        // Loads the shipped .build/release/libexperiment.so with dlopen and calls the exported C ABI.
        .testTarget(name: "ExperimentABITests", dependencies: ["CExperimentABI"]),
        .testTarget(name: "ExperimentKitTests", dependencies: ["ExperimentKit"]),
        // The seed documents' Swift examples, changed only in their import and the values they need.
        .testTarget(name: "SeedExampleTests", dependencies: ["KameleoonKit", "SigmaKit", "ExperimentKit"]),
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
