import ArgumentParser
import LuaHierarchy

/// Loads a rules file for the commands that inspect rather than run (`tree`, `check`):
/// `print` and presented errors go to stderr, so stdout holds only the command's result.
enum RulesLoader {
    /// The hierarchy after running `file`, or exit 1 with `file:line: message` on stderr.
    static func load(_ file: String, arguments: [String], host: HostOptions) throws -> Hierarchy {
        let hierarchy = try Hierarchy(options: try host.hierarchyOptions())
        hierarchy.output = { Console.error($0) }
        hierarchy.presenter = Console.present
        hierarchy.onSafetyWarning = Console.warn
        do {
            try hierarchy.run(file: file, arguments: arguments)
        } catch {
            Console.scriptFailed(error)
            throw ExitCode(ExitStatus.scriptFailed)
        }
        return hierarchy
    }
}
