import Glibc
import ArgumentParser
import LuaHierarchy

/// The sandbox and limit settings, with the CLI's defaults: the one place they and their
/// checks live. The flags (`HostOptions`) start from these defaults, and so do the command
/// lines read without the parser (`PlainCommandLine.hostSettings()`).
struct HostSettings {
    var unsafe = false
    var maxInstructions = 0
    var maxMemory = "512M"
    var timeout: Double = 30
    var dispatchMaxInstructions = 0
    var dispatchTimeout: Double = 5

    static let defaults = HostSettings()

    func validate() throws {
        guard maxInstructions >= 0 else { throw ValidationError("--max-instructions must be 0 or more") }
        guard dispatchMaxInstructions >= 0 else { throw ValidationError("--dispatch-max-instructions must be 0 or more") }
        guard timeout >= 0, timeout.isFinite else { throw ValidationError("--timeout must be 0 or more seconds") }
        guard dispatchTimeout >= 0, dispatchTimeout.isFinite else {
            throw ValidationError("--dispatch-timeout must be 0 or more seconds")
        }
        _ = try memoryBytes()
    }

    /// `--max-memory` in bytes.
    func memoryBytes() throws -> Int {
        try Size.bytes(maxMemory, of: "max-memory", example: "64M or 1G")
    }

    /// The hierarchy options these settings describe.
    func hierarchyOptions() throws -> Hierarchy.Options {
        var options = Hierarchy.Options()
        options.logger = ConsoleLogHandler.logger
        options.libraries = unsafe ? .full : .sandboxed
        let memory = try memoryBytes()
        options.limits = Limits(
            instructions: maxInstructions == 0 ? nil : maxInstructions,
            time: timeout == 0 ? nil : timeout,
            memory: memory == 0 ? nil : memory,
            dispatchInstructions: dispatchMaxInstructions == 0 ? nil : dispatchMaxInstructions,
            dispatchTime: dispatchTimeout == 0 ? nil : dispatchTimeout)
        return options
    }
}

/// Flags every subcommand that loads scripts shares: the sandbox and the limits. Numbers are
/// parsed `.unconditional`ly, so `--timeout -5` is read as a value (and refused by
/// `validate()` with a reason) rather than as a flag named `-5`.
struct HostOptions: ParsableArguments {
    @Flag(help: "Open the full standard library (io, os, debug, C modules) for trusted scripts.")
    var unsafe = HostSettings.defaults.unsafe

    @Option(parsing: .unconditional, help: "Lua instructions (and host work) per script run, exact (0, the default: none; a count hook slows every instruction).")
    var maxInstructions: Int = HostSettings.defaults.maxInstructions

    @Option(parsing: .unconditional, help: ArgumentHelp("Memory held on the scripts' behalf (Lua heap and host copies), e.g. 64M, 1G (0: no limit).", valueName: "size"))
    var maxMemory: String = HostSettings.defaults.maxMemory

    @Option(parsing: .unconditional, help: ArgumentHelp("Seconds per script run (0: no limit).", valueName: "seconds"))
    var timeout: Double = HostSettings.defaults.timeout

    @Option(parsing: .unconditional, help: "Lua instructions per dispatch, exact, within what is left of the script's (0, the default: none of its own).")
    var dispatchMaxInstructions: Int = HostSettings.defaults.dispatchMaxInstructions

    @Option(parsing: .unconditional, help: ArgumentHelp("Seconds per dispatch, within what is left of the script's (0: no limit of its own).", valueName: "seconds"))
    var dispatchTimeout: Double = HostSettings.defaults.dispatchTimeout

    var settings: HostSettings {
        HostSettings(
            unsafe: unsafe, maxInstructions: maxInstructions, maxMemory: maxMemory, timeout: timeout,
            dispatchMaxInstructions: dispatchMaxInstructions, dispatchTimeout: dispatchTimeout)
    }

    func validate() throws {
        try settings.validate()
    }

    /// The hierarchy options these flags describe.
    func hierarchyOptions() throws -> Hierarchy.Options {
        try settings.hierarchyOptions()
    }
}

/// Sizes on the command line: a number with an optional K, M or G suffix (powers of 1024),
/// without a minus sign (`-0` is no size, though `Int` reads it as 0, which may mean "no limit").
enum Size {
    static func bytes(_ text: String) -> Int? {
        guard !text.hasPrefix("-") else { return nil }
        let upper = text.uppercased()
        // A switch, not a `[Character: Int]`: that dictionary costs a conformance lookup
        // (`Character: Hashable`) at every start.
        let scale = switch upper.last {
        case "K": 1 << 10
        case "M": 1 << 20
        case "G": 1 << 30
        default: 1
        }
        let digits = scale == 1 ? upper : String(upper.dropLast())
        guard let number = Int(digits), number >= 0, number <= Int.max / scale else { return nil }
        return number * scale
    }

    /// `text` in bytes, or the usage error of the option `name` (its long name) that shows
    /// `example` of what it takes.
    static func bytes(_ text: String, of name: String, example: String) throws -> Int {
        guard let bytes = bytes(text) else { throw ValidationError("--\(name) takes a size such as \(example), not '\(text)'") }
        return bytes
    }
}

/// Checks `validate()` methods share.
enum Validate {
    /// A file at `path` that can be read, or the reason it cannot: "no such file: PATH",
    /// "PATH is a directory", "cannot read PATH: Permission denied".
    static func readableFile(_ path: String) throws {
        var status = stat()
        guard stat(path, &status) == 0 else {
            if errno == ENOENT || errno == ENOTDIR { throw ValidationError("no such file: \(path)") }
            throw ValidationError("cannot read \(path): \(String(cString: strerror(errno)))")
        }
        if (status.st_mode & S_IFMT) == S_IFDIR { throw ValidationError("\(path) is a directory") }
        guard access(path, R_OK) == 0 else {
            throw ValidationError("cannot read \(path): \(String(cString: strerror(errno)))")
        }
    }
}
