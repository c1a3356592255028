// swift-tools-version:6.1
import PackageDescription

// An embedder of the LuaHierarchy library, as a Swift program depends on it: by path, without
// the Server trait, so it resolves no server package. CI builds and runs it.
let package = Package(
    name: "Embedder",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "LuaHierarchy", path: "../.."),
        .package(url: "https://github.com/apple/swift-log", from: "1.5.0"),
    ],
    targets: [
        .executableTarget(
            name: "Embedder",
            dependencies: [
                .product(name: "LuaHierarchy", package: "LuaHierarchy"),
                .product(name: "Logging", package: "swift-log"),
            ]
        )
    ]
)
