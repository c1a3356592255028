import ArgumentParser
import LuaHierarchy

/// The rules file and its arguments, for the commands that inspect rules rather than run
/// them (`check`, `tree`).
struct RulesScript: ParsableArguments {
    @Argument(help: "The rules script to load.")
    var file: String

    @OptionGroup(title: "Sandbox and limits")
    var host: HostOptions

    @Argument(parsing: .postTerminator, help: "Arguments for the script, after --.")
    var arguments: [String] = []

    func validate() throws {
        try Validate.fileExists(file)
    }

    /// The hierarchy after running the file, or exit 1 with `file:line: message` on stderr.
    /// `print` and presented errors go to stderr, so stdout holds only the command's result.
    func load() throws -> Hierarchy {
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
