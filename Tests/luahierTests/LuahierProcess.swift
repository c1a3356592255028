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
    static func run(
        _ arguments: [String], stdin: String? = nil, timeout: TimeInterval = 60, in folder: URL = packageRoot
    ) throws -> Result {
        try run(arguments, input: stdin.map { Data($0.utf8) }, timeout: timeout, in: folder)
    }

    /// As `run`, with raw bytes on stdin.
    static func run(
        _ arguments: [String], input stdin: Data?, timeout: TimeInterval = 60, in folder: URL = packageRoot
    ) throws -> Result {
        // A child that exits before reading all its input must not kill the tests with SIGPIPE.
        signal(SIGPIPE, SIG_IGN)
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        process.currentDirectoryURL = folder
        let out = Pipe(), err = Pipe(), input = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input
        try process.run()
        // Written from another thread, so a large input cannot block against a full stdout.
        let writer = input.fileHandleForWriting
        let feed = DispatchGroup()
        DispatchQueue.global().async(group: feed) {
            if let stdin { try? writer.write(contentsOf: stdin) }
            try? writer.close()
        }

        // Read both pipes while the process runs so a large output cannot block it.
        nonisolated(unsafe) var outData = Data(), errData = Data()
        let group = DispatchGroup()
        DispatchQueue.global().async(group: group) { outData = out.fileHandleForReading.readDataToEndOfFile() }
        DispatchQueue.global().async(group: group) { errData = err.fileHandleForReading.readDataToEndOfFile() }
        let deadline = DispatchTime.now() + timeout
        DispatchQueue.global().asyncAfter(deadline: deadline) { if process.isRunning { process.terminate() } }
        process.waitUntilExit()
        group.wait()
        feed.wait()
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

extension Luahier {
    struct Measured {
        var status: Int32?
        var signal: Int32?
        var stderr: String
        var stdout: String
        var peakKiB: Int
        var seconds: Double
    }

    /// Runs `luahier arguments...` and follows its peak resident memory; outputs go through
    /// files. Killed (SIGKILL) after `timeout` seconds.
    ///
    /// The peak is `VmHWM` from `/proc/PID/status`, polled while the child runs: wait4's
    /// `ru_maxrss` is no use here, because posix_spawn uses vfork and Linux carries the
    /// parent's high-water mark (the whole test process) into the child at exec.
    static func measure(_ arguments: [String], timeout: Double = 60) throws -> Measured {
        let folder = URL(fileURLWithPath: "/tmp/lh-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let outPath = folder.appendingPathComponent("out").path, errPath = folder.appendingPathComponent("err").path
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        let argv = ([binary.path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let started = Date()
        guard posix_spawn(&pid, binary.path, &actions, nil, argv, environ) == 0 else {
            throw CocoaError(.executableLoad)
        }
        let child = pid
        let watchdog = DispatchWorkItem { kill(child, SIGKILL) }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout, execute: watchdog)
        var status: Int32 = 0
        var peakKiB = 0
        while true {
            if let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
                let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
                let kib = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
            {
                peakKiB = max(peakKiB, kib)
            }
            let waited = waitpid(pid, &status, WNOHANG)
            if waited == pid || (waited < 0 && errno != EINTR) { break }
            usleep(2_000)
        }
        watchdog.cancel()
        let exited = (status & 0x7f) == 0
        return Measured(
            status: exited ? (status >> 8) & 0xff : nil,
            signal: exited ? nil : status & 0x7f,
            stderr: (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "",
            stdout: (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? "",
            peakKiB: peakKiB,
            seconds: Date().timeIntervalSince(started))
    }
}

extension Luahier {
    /// Runs `luahier arguments...` with stdout going to the file at `stdout` (`/dev/full`),
    /// or, when nil, to a pipe whose reading end is already closed. Exit status or signal,
    /// and stderr.
    static func spawn(_ arguments: [String], stdout: String?, stdin: String = "") throws -> (status: Int32?, signal: Int32?, stderr: String) {
        signal(SIGPIPE, SIG_IGN)
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        process.currentDirectoryURL = packageRoot
        let closed = Pipe()
        if let stdout {
            process.standardOutput = FileHandle(forWritingAtPath: stdout)
        } else {
            process.standardOutput = closed
        }
        let err = Pipe(), input = Pipe()
        process.standardError = err
        process.standardInput = input
        try process.run()
        if stdout == nil { try closed.fileHandleForReading.close() }
        let feed = DispatchGroup()
        DispatchQueue.global().async(group: feed) {
            try? input.fileHandleForWriting.write(contentsOf: Data(stdin.utf8))
            try? input.fileHandleForWriting.close()
        }
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        feed.wait()
        let exited = process.terminationReason == .exit
        return (exited ? process.terminationStatus : nil, exited ? nil : process.terminationStatus, String(decoding: errData, as: UTF8.self))
    }

    /// The SHA-256 of `text`, in hex (by `sha256sum`).
    static func sha256(_ text: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        try input.fileHandleForWriting.write(contentsOf: Data(text.utf8))
        try input.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(String(decoding: data, as: UTF8.self).prefix(64))
    }
}
