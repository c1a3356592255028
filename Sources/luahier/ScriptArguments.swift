import ArgumentParser
import Glibc
import LuaHierarchy

/// The rules script and the sandbox and limit flags: what `dispatch`, `check` and `tree`
/// take. Each declares the script's own arguments (after `--`) last, after any positional
/// of its own.
struct ScriptArguments: ParsableArguments {
    @Argument(help: "The Lua rules script (- for stdin, except for dispatch).")
    var file: String

    @OptionGroup(title: "Sandbox and limits")
    var host: HostOptions

    func validate() throws {
        if file != "-" { try Validate.readableFile(file) }
    }

    /// The script with these flags' settings.
    var script: RulesScript { RulesScript(file: file, host: host.settings) }

    /// How messages name the rules: the file, or `stdin` for `-`.
    var name: String { script.name }

    /// The rules file's text, read whole.
    func text() throws -> String { try script.text() }

    /// A hierarchy with these flags, before the script runs.
    func makeHierarchy() throws -> Hierarchy { try script.makeHierarchy() }

    /// The hierarchy after running the file (`RulesScript.loadForInspection`).
    func loadForInspection(arguments: [String]) throws -> Hierarchy {
        try script.loadForInspection(arguments: arguments)
    }
}

/// A rules script and the sandbox and limit settings it runs with, however the command line
/// was read (by the parser, or as a `PlainCommandLine`).
struct RulesScript {
    var file: String
    var host = HostSettings.defaults

    /// The checks `ScriptArguments` and `HostOptions` make.
    func validate() throws {
        if file != "-" { try Validate.readableFile(file) }
        try host.validate()
    }

    /// How messages name the rules: the file, or `stdin` for `-`.
    var name: String { file == "-" ? "stdin" : file }

    /// The rules file's text, read whole (a rules file is small): for `--rules-name`, which
    /// runs it under another name.
    func text() throws -> String {
        guard let handle = fopen(file, "rb") else { throw ValidationError("cannot read \(file): \(String(cString: strerror(errno)))") }
        defer { fclose(handle) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, handle) }
            if count <= 0 { break }
            bytes += chunk[..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// A hierarchy with these settings, before the script runs.
    func makeHierarchy() throws -> Hierarchy {
        try Hierarchy(options: try host.hierarchyOptions())
    }

    /// For the commands that inspect rules rather than run them (`check`, `tree`): the
    /// hierarchy after running the file, or exit 1 with `file:line: message` on stderr.
    /// `print` and presented errors go to stderr, so stdout holds only the command's result.
    func loadForInspection(arguments: [String]) throws -> Hierarchy {
        let hierarchy = try makeHierarchy()
        hierarchy.output = { Console.error($0) }
        hierarchy.presenter = Console.present
        hierarchy.onSafetyWarning = Console.warn
        do {
            try hierarchy.run(file: file, arguments: arguments)
        } catch {
            Console.scriptFailed(error)
            throw ExitCode(ExitStatus.failed(error))
        }
        return hierarchy
    }
}
