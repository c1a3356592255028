import Foundation
import ArgumentParser
import LuaHierarchy

/// Flags every subcommand that loads scripts shares: the sandbox and the limits.
struct HostOptions: ParsableArguments {
    @Flag(help: "Open the full standard library (io, os, debug, C modules) for trusted scripts.")
    var unsafe = false

    @Option(help: "Lua instructions (and host work) per script run (0: no limit).")
    var maxInstructions: Int = 1_000_000_000

    @Option(help: ArgumentHelp("Memory held on the scripts' behalf (Lua heap and host copies), e.g. 64M, 1G (0: no limit).", valueName: "size"))
    var maxMemory: String = "512M"

    @Option(help: ArgumentHelp("Seconds per script run (0: no limit).", valueName: "seconds"))
    var timeout: Double = 30

    @Option(help: "Lua instructions per dispatch, within what is left of the script's (0: no limit of its own).")
    var dispatchMaxInstructions: Int = 100_000_000

    @Option(help: ArgumentHelp("Seconds per dispatch, within what is left of the script's (0: no limit of its own).", valueName: "seconds"))
    var dispatchTimeout: Double = 5

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
        guard let bytes = Size.bytes(maxMemory) else {
            throw ValidationError("--max-memory takes a size such as 64M or 1G, not '\(maxMemory)'")
        }
        return bytes
    }

    /// The hierarchy options these flags describe.
    func hierarchyOptions() throws -> Hierarchy.Options {
        var options = Hierarchy.Options()
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

/// Sizes on the command line: a number with an optional K, M or G suffix (powers of 1024).
enum Size {
    static func bytes(_ text: String) -> Int? {
        let upper = text.uppercased()
        let units: [Character: Int] = ["K": 1 << 10, "M": 1 << 20, "G": 1 << 30]
        let scale = upper.last.flatMap { units[$0] } ?? 1
        let digits = scale == 1 ? upper : String(upper.dropLast())
        guard let number = Int(digits), number >= 0, number <= Int.max / scale else { return nil }
        return number * scale
    }
}

/// Checks `validate()` methods share.
enum Validate {
    /// A regular file (not a folder) at `path`, or "no such file: PATH".
    static func fileExists(_ path: String) throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else {
            throw ValidationError("no such file: \(path)")
        }
    }
}
