// swift-tools-version:6.2
import PackageDescription

// A release build of an executable links Swift's runtime into it, as SwiftPM's
// `--static-swift-stdlib` does: the dynamic loader then binds 7 libraries, not 18, and
// `luahier run` starts in 5.5M instructions instead of 10.8M (docs/performance.md, Startup).
// `-static-stdlib` alone leaves out the Foundation archives that `--static-swift-stdlib`
// names itself, so they are named here (the last two only needed with the Server trait,
// whose packages use Foundation; an archive nothing needs adds nothing). For luahier and the
// floor server it is measured against only: the library, and programs that embed it, link as
// their own builds say. From tools-version 6.2 SwiftPM lets a package that depends on this one
// by version use a product whose targets have unsafe flags. A release build of the tests
// (`swift build -c release --build-tests`) links these flags too, and cannot link the test
// libraries statically: the tests are built and run in debug.
let staticRuntimeInRelease: [LinkerSetting] = [
    .unsafeFlags(["-static-stdlib", "-l_FoundationCShims", "-l_FoundationCollections", "-lCoreFoundation", "-l_FoundationICU"],
                 .when(platforms: [.linux], configuration: .release))
]

let package = Package(
    name: "LuaHierarchy",
    // macOS 15: Synchronization's Mutex, the one lock of the server and the tests.
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "LuaHierarchy", targets: ["LuaHierarchy"]),
        .library(name: "LuaHierarchyServer", targets: ["LuaHierarchyServer"]),
        .executable(name: "luahier", targets: ["luahier"]),
    ],
    // `luahier serve` and the LuaHierarchyServer library are behind the Server trait, off by
    // default: depending on the package (or `swift run luahier`) resolves and builds no HTTP,
    // NIO or Prometheus package. `swift build --traits Server` (or an embedder's
    // `traits: ["Server"]`) brings them in.
    traits: [
        .trait(name: "Server", description: "luahier serve and the LuaHierarchyServer library (Hummingbird, Prometheus, swift-nio-ssl)"),
        .default(enabledTraits: []),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        // The library logs through swift-log to the embedder's Logger (never to stderr).
        .package(url: "https://github.com/apple/swift-log", from: "1.5.0"),
        // `swift package generate-documentation --target LuaHierarchy`: the DocC catalog.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.4.0"),
        // SHA-256 for a revision's content hash and a bundle's manifest; Ed25519 for bundle
        // signatures (RuleBundle). Already under the server stack. From 4.0 it imports
        // FoundationEssentials where there is one, not Foundation: 3.x's `import Foundation`
        // put Foundation, FoundationInternationalization and ICU in every link of the default
        // build, loaded and initialized at every start (docs/performance.md, Startup).
        .package(url: "https://github.com/apple/swift-crypto", "4.0.0"..<"5.0.0"),
        // `luahier serve` only (the LuaHierarchyServer target): HTTP, metrics, shutdown.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.0.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.0.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.0.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.0.0"),
        // Already under Hummingbird: named for the HTTP parts and fields the server's own
        // channel handler and headers use.
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.20.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.0.0"),
        // Already under Hummingbird (HummingbirdTLS): named for the certificate and key checks
        // `RulesServer.TLS` makes before the server starts.
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.0.0"),
        // The decision log's HTTP sink (LuaHierarchyServer, with the Server trait only).
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
    ],
    targets: [
        // Debian's liblua5.4-dev, found through pkg-config. Only the Lua bridge imports it.
        .systemLibrary(
            name: "CLua",
            pkgConfig: "lua5.4",
            providers: [.apt(["liblua5.4-dev"]), .brew(["lua"])]
        ),
        // The host's C, one header per unit in include/ (SwiftPM's module map takes the whole
        // folder). Units in dependency order, each using only those before it (luahier_guard.h):
        // guard, tags, errors, host, limits, watchdog, sandbox, pattern, jsonwrite, tape, walk, engine,
        // lines.
        // Only the bridge imports it.
        .target(name: "CLuaHost", dependencies: ["CLua", "CJSONReader", "CSignals"]),
        // The one JSON reader (Sources/CJSONReader/include/luahier_jsonread.h), without Lua:
        // Swift's `Value`s and the bridge's Lua values are read from JSON by the same rules.
        .target(name: "CJSONReader"),
        // Signal handlers without Lua (Sources/CSignals/include/luahier_signals.h): installing
        // one (the watchdog's interrupts), and a service's reload and shutdown flags, which
        // ServiceSignals wraps for the pool's watcher, `luahier serve` and the server.
        .target(name: "CSignals"),
        // Process-wide settings without Lua (Sources/CProcess/include/luahier_process.h) that an
        // executable makes at its start: malloc's, which ProcessMemory wraps for the CLI.
        .target(name: "CProcess"),
        // The package's Lua (Lua/*.lua: the walk, the preludes, the sandbox) is embedded at
        // build time by the EmbedLua plugin as `LuaSources`: no file is read at run time.
        .target(
            name: "LuaHierarchy",
            dependencies: [
                "CLua", "CLuaHost", "CJSONReader", "CSignals", "CProcess", .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            // A member is found only in a module the file imports: a dependency's `import
            // Foundation` (swift-crypto's, before 4.0) made `contains` on strings Foundation's
            // (`StringProtocol.range(of:)`), and Foundation a library every start loads.
            swiftSettings: [.enableUpcomingFeature("MemberImportVisibility")],
            plugins: [.plugin(name: "EmbedLua")]),
        // Files to Swift string constants, for the EmbedLua build-tool plugin (the library's
        // Lua, the server's docs/openapi.json); the host's chunks also compiled by the Lua the
        // package links, so that no start compiles them (`LuaBytecode`).
        .executableTarget(name: "embed-lua", dependencies: ["CLua", "CLuaHost"]),
        .plugin(name: "EmbedLua", capability: .buildTool(), dependencies: ["embed-lua"]),
        // zlib through pkg-config (Debian's zlib1g-dev): the HTTP decision sink gzips its batches.
        .systemLibrary(
            name: "CZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"]), .brew(["zlib"])]
        ),
        // The HTTP service over a RulesPool (`luahier serve`); knows nothing of Lua.
        .target(
            name: "LuaHierarchyServer",
            dependencies: [
                "LuaHierarchy",
                .product(name: "Hummingbird", package: "hummingbird", condition: .when(traits: ["Server"])),
                .product(name: "HummingbirdCore", package: "hummingbird", condition: .when(traits: ["Server"])),
                .product(name: "HummingbirdTLS", package: "hummingbird", condition: .when(traits: ["Server"])),
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: .when(traits: ["Server"])),
                .product(name: "Prometheus", package: "swift-prometheus", condition: .when(traits: ["Server"])),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: .when(traits: ["Server"])),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["Server"])),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: .when(traits: ["Server"])),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras", condition: .when(traits: ["Server"])),
                .product(name: "HTTPTypes", package: "swift-http-types", condition: .when(traits: ["Server"])),
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: .when(traits: ["Server"])),
                .target(name: "CZlib", condition: .when(traits: ["Server"])),
                .product(name: "Logging", package: "swift-log"),
            ],
            // docs/openapi.json, embedded as `ServerDocuments.openapi`: `GET /openapi.json`.
            plugins: [.plugin(name: "EmbedLua")]
        ),
        .executableTarget(
            name: "luahier",
            dependencies: [
                "LuaHierarchy",
                .target(name: "LuaHierarchyServer", condition: .when(traits: ["Server"])),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            // As the library's: a member of Foundation is used only where a file imports it.
            swiftSettings: [.enableUpcomingFeature("MemberImportVisibility")],
            linkerSettings: staticRuntimeInRelease
        ),
        // Run by hand (README, Performance): baselines and the engine side by side.
        .executableTarget(
            name: "luahier-bench",
            dependencies: ["LuaHierarchy", "CLua"],
            path: "Benchmarks/luahier-bench"
        ),
        // Run by hand (Benchmarks/serve): Hummingbird alone on `serve`'s route, the floor a
        // request of `luahier serve` is measured against. With the Server trait only; without
        // it the target builds a stub that says so.
        .executableTarget(
            name: "floor-server",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird", condition: .when(traits: ["Server"])),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["Server"])),
            ],
            path: "Benchmarks/floor-server",
            // Linked as luahier is: its start is the floor serve's is measured against.
            linkerSettings: staticRuntimeInRelease
        ),
        .testTarget(
            name: "LuaHierarchyTests",
            dependencies: ["LuaHierarchy", "CLua", "CLuaHost", .product(name: "Logging", package: "swift-log")]),
        // Depends on the executable so `swift test` builds the binary these tests run.
        .testTarget(name: "luahierTests", dependencies: ["luahier"], exclude: ["Golden", "Fixtures"]),
        // The server's routes in process (HummingbirdTesting): with the Server trait only; without
        // it the target builds empty.
        .testTarget(
            name: "LuaHierarchyServerTests",
            dependencies: [
                "LuaHierarchy",
                "LuaHierarchyServer",
                .product(name: "Hummingbird", package: "hummingbird", condition: .when(traits: ["Server"])),
                .product(name: "HummingbirdTesting", package: "hummingbird", condition: .when(traits: ["Server"])),
            ]),
    ]
)

// `LUAHIER_WERROR=1` (set by .ci/run): the project's own targets build with warnings as errors.
// Only by choice: an embedder's build is never failed by a newer compiler's new warning, and a
// dependency's warnings are its own.
if Context.environment["LUAHIER_WERROR"] != nil {
    for target in package.targets where target.type != .system && target.type != .plugin {
        if target.name.hasPrefix("C") {
            target.cSettings = (target.cSettings ?? []) + [.unsafeFlags(["-Werror"])]
        } else {
            target.swiftSettings = (target.swiftSettings ?? []) + [.unsafeFlags(["-warnings-as-errors"])]
        }
    }
}
