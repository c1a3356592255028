import Foundation
import Testing

/// Runs the built `luahier` binary as a child process, as a user would.
enum Luahier {
    /// The package root: scripts and golden files are found from here, and the binary runs
    /// here so that messages name `scripts/x.lua`.
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// `luahier` sits beside the test bundle in the build's products folder.
    static let binary: URL = {
        let products = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        return products.appendingPathComponent("luahier")
    }()

    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
        /// Ended by a signal (a crash, or the timeout) rather than an exit.
        var signaled: Bool
    }

    /// Runs `luahier arguments...` with a wall-clock limit; a run past it is killed and
    /// reported as `signaled`.
    static func run(_ arguments: [String], stdin: String? = nil, timeout: TimeInterval = 60) throws -> Result {
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        process.currentDirectoryURL = packageRoot
        let out = Pipe(), err = Pipe(), input = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input
        try process.run()
        if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
        try input.fileHandleForWriting.close()

        // Read both pipes while the process runs so a large output cannot block it.
        nonisolated(unsafe) var outData = Data(), errData = Data()
        let group = DispatchGroup()
        DispatchQueue.global().async(group: group) { outData = out.fileHandleForReading.readDataToEndOfFile() }
        DispatchQueue.global().async(group: group) { errData = err.fileHandleForReading.readDataToEndOfFile() }
        let deadline = DispatchTime.now() + timeout
        DispatchQueue.global().asyncAfter(deadline: deadline) { if process.isRunning { process.terminate() } }
        process.waitUntilExit()
        group.wait()
        return Result(
            status: process.terminationStatus,
            stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errData, as: UTF8.self),
            signaled: process.terminationReason == .uncaughtSignal)
    }

    /// Writes `source` to a temporary script and returns its path. The path is kept short:
    /// Lua shortens chunk names over 60 bytes from the left in every `file:line`.
    static func script(_ source: String, name: String = "script.lua") throws -> String {
        let folder = URL(fileURLWithPath: "/tmp/lh-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent(name)
        try source.write(to: file, atomically: true, encoding: .utf8)
        return file.path
    }
}
