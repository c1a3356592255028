import Foundation
import PackagePlugin

/// Embeds the package's Lua (the files in Lua/) in the target it is applied to, at build time:
/// `embed-lua` turns them into one generated Swift file of string constants (`LuaSources`), made
/// again whenever one of them changes. The binary carries its Lua; nothing is read at run time.
@main
struct EmbedLua: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let folder = context.package.directoryURL.appendingPathComponent("Lua")
        let scripts = try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "lua" }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
        let output = context.pluginWorkDirectoryURL.appendingPathComponent("LuaSources.swift")
        return [
            .buildCommand(
                displayName: "Embedding \(scripts.count) Lua files in \(target.name)",
                executable: try context.tool(named: "embed-lua").url,
                arguments: [output.path] + scripts.map(\.path),
                inputFiles: scripts,
                outputFiles: [output]
            )
        ]
    }
}
