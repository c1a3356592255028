import Foundation

/// Runs the built `luahier` binary as a user would, through `LuahierProcess`.
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
        /// Ended by a signal (a crash, or the kill past the timeout) rather than an exit.
        var signaled: Bool
    }

    /// Runs `luahier arguments...` to its end: killed past `timeout` seconds, and then
    /// reported as `signaled`.
    static func run(
        _ arguments: [String], stdin: String? = nil, timeout: TimeInterval = 60, in folder: URL = packageRoot
    ) throws -> Result {
        try run(arguments, input: stdin.map { Data($0.utf8) }, timeout: timeout, in: folder)
    }

    /// As `run`, with raw bytes on stdin.
    static func run(
        _ arguments: [String], input: Data?, timeout: TimeInterval = 60, in folder: URL = packageRoot,
        executable: URL = binary
    ) throws -> Result {
        let child = try LuahierProcess(arguments, executable: executable, folder: folder)
        // Written from another thread, so a large input cannot block against a full stdout.
        let feed = Thread {
            if let input { child.write(input) }
            child.closeInput()
        }
        feed.start()
        let ended = child.waitForExit(timeout: timeout)
        return Result(status: ended.status ?? ended.signal ?? 0, stdout: child.stdout, stderr: ended.stderr, signaled: ended.signal != nil)
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

    /// Checks `condition` until it holds or `timeout` seconds pass; whether it held. For events
    /// the tests can only look at (a counter in /metrics, a file, a process's state): the
    /// pause between looks is short and only paces the looking; the timeout is generous
    /// and fails a test only when the event never comes.
    @discardableResult
    static func eventually(timeout: Double = 60, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if try condition() { return true }
            usleep(5_000)
        }
        return try condition()
    }
}

extension Luahier {
    struct Measured {
        var status: Int32?
        var signal: Int32?
        var stderr: String
        var stdout: String
        var peakKiB: Int
        /// Wall-clock seconds from the start to the exit: it depends on the machine's load.
        var seconds: Double
        /// The child's CPU time (user plus system, all its threads), in seconds: the work it
        /// did, whatever the load; for checks that the work stays bounded.
        var cpuSeconds: Double
    }

    /// Clock ticks per second, the unit of `/proc/PID/stat`'s times.
    static let clockTicksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

    /// Runs `luahier arguments...` with stdin empty and follows its peak resident memory and
    /// its CPU time. Killed (SIGKILL) after `timeout` seconds: a guard against hangs only, far
    /// above any test's work (bound the work by `cpuSeconds`, which the load does not stretch).
    ///
    /// The peak is `VmHWM` from `/proc/PID/status`, and the CPU time utime plus stime from
    /// `/proc/PID/stat`, sampled while the child runs (the last sample comes before it is
    /// reaped, so up to 2 ms of CPU time may be missed): wait4's `ru_maxrss` is no use here,
    /// because posix_spawn uses vfork and Linux carries the parent's high-water mark (the
    /// whole test process) into the child at exec; and Foundation reaps the child itself.
    static func measure(_ arguments: [String], timeout: Double = 600) throws -> Measured {
        let started = Date()
        let child = try LuahierProcess(arguments)
        child.closeInput()
        var peakKiB = 0
        var cpuTicks = 0
        let deadline = started.addingTimeInterval(timeout)
        // Sampled every 2 ms until the exit; the sampling, not a wait for it.
        repeat {
            peakKiB = max(peakKiB, child.peakKiB)
            cpuTicks = max(cpuTicks, child.cpuTicks)
        } while !child.exits(within: 0.002) && Date() < deadline
        let ended = child.waitForExit(timeout: 0)
        return Measured(
            status: ended.status, signal: ended.signal, stderr: ended.stderr, stdout: child.stdout,
            peakKiB: peakKiB, seconds: Date().timeIntervalSince(started),
            cpuSeconds: Double(cpuTicks) / clockTicksPerSecond)
    }

    /// Runs `luahier arguments...` with stdout going to the file at `stdout` (`/dev/full`),
    /// or, when nil, to a pipe whose reading end is already closed. Exit status or signal,
    /// and stderr.
    static func spawn(_ arguments: [String], stdout: String?, stdin: String = "") throws -> (status: Int32?, signal: Int32?, stderr: String) {
        let child = try LuahierProcess(arguments, stdout: stdout.map { .file($0) } ?? .closed)
        let feed = Thread {
            child.write(stdin)
            child.closeInput()
        }
        feed.start()
        let ended = child.waitForExit()
        return (ended.status, ended.signal, ended.stderr)
    }

    /// The SHA-256 of `text`, in hex (by `sha256sum`).
    static func sha256(_ text: String) throws -> String {
        let result = try run([], input: Data(text.utf8), executable: URL(fileURLWithPath: "/usr/bin/sha256sum"))
        return String(result.stdout.prefix(64))
    }
}
