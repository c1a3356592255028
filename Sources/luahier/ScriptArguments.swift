import ArgumentParser
import LuaHierarchy

/// The script, the sandbox and limit flags, and the script's own arguments after `--`:
/// what `run`, `check` and `tree` all take.
struct ScriptArguments: ParsableArguments {
    @Argument(help: "The Lua script.")
    var file: String

    @OptionGroup(title: "Sandbox and limits")
    var host: HostOptions

    @Argument(parsing: .postTerminator, help: "Arguments for the script, after --.")
    var arguments: [String] = []

    func validate() throws {
        try Validate.fileExists(file)
    }

    /// A hierarchy with these flags, before the script runs.
    func makeHierarchy() throws -> Hierarchy {
        try Hierarchy(options: try host.hierarchyOptions())
    }

    /// For the commands that inspect rules rather than run them (`check`, `tree`): the
    /// hierarchy after running the file, or exit 1 with `file:line: message` on stderr.
    /// `print` and presented errors go to stderr, so stdout holds only the command's result.
    func loadForInspection() throws -> Hierarchy {
        let hierarchy = try makeHierarchy()
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
