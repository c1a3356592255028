import Foundation
import PackagePlugin

/// Embeds files of the package in the target it is applied to, at build time: `embed-lua`
/// turns them into one generated Swift file of string constants, made again whenever one of
/// them changes. The binary carries them; nothing is read at run time.
///
/// What each target embeds is said once, in `embeddings`: the library its Lua (the files in
/// Lua/, as `LuaSources`, and its host chunks compiled, as `LuaBytecode`: the Lua it links
/// reads a dump about seven times faster than it compiles the text), the server its API
/// document (docs/openapi.json, as
/// `ServerDocuments`, byte for byte: `GET /openapi.json` answers exactly the file).
@main
struct EmbedLua: BuildToolPlugin {
    /// Files a target embeds, and the enum that holds them.
    struct Embedding: Sendable {
        /// The generated enum (and file) name.
        var enumName: String
        /// The files, from the package root.
        var files: @Sendable (URL) throws -> [URL]
        /// Kept byte for byte; otherwise a final newline is dropped (a Lua chunk's text).
        var exact: Bool
        /// Of the files, the host chunks also compiled at build time (`LuaBytecode`), and the
        /// walk, whose two variants are.
        var compiled: [String] = []
        var walk: String?
    }

    static let embeddings: [String: Embedding] = [
        "LuaHierarchy": Embedding(enumName: "LuaSources", files: { root in
            try FileManager.default.contentsOfDirectory(at: root.appendingPathComponent("Lua"), includingPropertiesForKeys: nil)
                .filter { $0.pathExtension == "lua" }
                .sorted { $0.lastPathComponent < $1.lastPathComponent }
        }, exact: false, compiled: ["host_prelude.lua", "sandbox.lua"], walk: "walk.lua"),
        "LuaHierarchyServer": Embedding(enumName: "ServerDocuments", files: { root in
            [root.appendingPathComponent("docs/openapi.json")]
        }, exact: true),
    ]

    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        guard let embedding = Self.embeddings[target.name] else {
            Diagnostics.error("EmbedLua: \(target.name) has no entry in the plugin's embeddings")
            return []
        }
        let files = try embedding.files(context.package.directoryURL)
        let output = context.pluginWorkDirectoryURL.appendingPathComponent("\(embedding.enumName).swift")
        func path(_ name: String) throws -> String {
            guard let file = files.first(where: { $0.lastPathComponent == name }) else {
                throw PluginError(message: "EmbedLua: \(target.name) compiles \(name), which it does not embed")
            }
            return file.path
        }
        var compiling: [String] = []
        for name in embedding.compiled { compiling += ["--compile", try path(name)] }
        if let walk = embedding.walk { compiling += ["--walk", try path(walk)] }
        return [
            .buildCommand(
                displayName: "Embedding \(files.count) files in \(target.name)",
                executable: try context.tool(named: "embed-lua").url,
                arguments: ["--enum", embedding.enumName] + (embedding.exact ? ["--exact"] : []) + compiling
                    + [output.path] + files.map(\.path),
                inputFiles: files,
                outputFiles: [output]
            )
        ]
    }
}

/// A mistake in the plugin's own embeddings.
struct PluginError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}
