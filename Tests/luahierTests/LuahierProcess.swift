import Foundation

/// A child process the tests drive: by default the built `luahier`, run from the package
/// root. Its stdout and stderr are read as they come by threads of their own, so a test can
/// wait for a line (an event), never for a length of time; it can write to stdin, send a
/// signal, and wait for the exit. `Luahier.run` is this, run to completion.
final class LuahierProcess: @unchecked Sendable {
    /// Where the child's stdout goes.
    enum Output {
        /// A pipe read into `stdout` as it comes.
        case captured
        /// A pipe nobody reads: once it is full, the child's writes block.
        case unread
        /// A pipe whose reading end is closed at once: the child's writes fail (EPIPE).
        case closed
        /// A file, such as `/dev/full` or `/dev/null`.
        case file(String)
    }

    let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private let errors = Pipe()
    private let unreadOutput: Bool
    /// Guards everything below, and is signalled at every change of it.
    private let changed = NSCondition()
    private var stdoutBytes: [UInt8] = []
    private var stdoutTaken = 0
    private var stderrBytes: [UInt8] = []
    private var stdoutEnded = false
    private var stderrEnded = false
    private var exited = false
    /// How it ended, as the termination handler read it.
    private var exitStatus: ExitStatus?
    private enum ExitStatus {
        case exit(Int32)
        case signal(Int32)
    }
    private var stderrPaused = false

    init(
        _ arguments: [String], environment: [String: String]? = nil, executable: URL = Luahier.binary,
        folder: URL = Luahier.packageRoot, stdout: Output = .captured, stdin: Bool = true
    ) throws {
        // A child that exits before reading all its input must not kill the tests with SIGPIPE.
        signal(SIGPIPE, SIG_IGN)
        process.executableURL = executable
        process.arguments = arguments
        process.currentDirectoryURL = folder
        if let environment { process.environment = environment }
        process.standardInput = stdin ? input : FileHandle.nullDevice
        process.standardError = errors
        unreadOutput = { if case .unread = stdout { true } else { false } }()
        switch stdout {
        case .captured, .unread, .closed: process.standardOutput = output
        case .file(let path):
            guard let handle = FileHandle(forWritingAtPath: path) else { throw CocoaError(.fileNoSuchFile) }
            process.standardOutput = handle
        }
        process.terminationHandler = { [weak self] ended in
            guard let self else { return }
            changed.lock()
            exited = true
            exitStatus = ended.terminationReason == .exit ? .exit(ended.terminationStatus) : .signal(ended.terminationStatus)
            changed.broadcast()
            changed.unlock()
        }
        try process.run()
        if case .closed = stdout { try output.fileHandleForReading.close() }
        if case .captured = stdout {
            startReading(output.fileHandleForReading.fileDescriptor, isStdout: true)
        } else {
            stdoutEnded = true
        }
        startReading(errors.fileHandleForReading.fileDescriptor, isStdout: false)
    }

    /// A thread of its own (a busy dispatch queue may start work late) that appends what the
    /// descriptor yields until its end.
    private func startReading(_ descriptor: Int32, isStdout: Bool) {
        let thread = Thread { [self] in
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                if !isStdout {
                    // Paused: the pipe fills and the child's writes there block, until it exits.
                    changed.lock()
                    while stderrPaused && !exited { _ = changed.wait(until: Date().addingTimeInterval(1)) }
                    changed.unlock()
                }
                let count = read(descriptor, &buffer, buffer.count)
                if count < 0 && errno == EINTR { continue }
                changed.lock()
                if count > 0 {
                    if isStdout { stdoutBytes += buffer[..<count] } else { stderrBytes += buffer[..<count] }
                } else if isStdout {
                    stdoutEnded = true
                } else {
                    stderrEnded = true
                }
                changed.broadcast()
                changed.unlock()
                if count <= 0 { return }
            }
        }
        thread.start()
    }

    /// Waits, up to `timeout` seconds, until `ready` holds (checked at every change). Whether it does.
    private func waitUntil(timeout: Double, _ ready: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        changed.lock()
        defer { changed.unlock() }
        while !ready() {
            if !changed.wait(until: deadline) { return ready() }
        }
        return true
    }

    // MARK: Input

    /// Writes `text` to the child's stdin (no newline added).
    func write(_ text: String) {
        write(Data(text.utf8))
    }

    func write(_ data: Data) {
        try? input.fileHandleForWriting.write(contentsOf: data)
    }

    /// Closes the child's stdin (end of input).
    func closeInput() {
        try? input.fileHandleForWriting.close()
    }

    // MARK: Output

    /// All of stdout so far.
    var stdout: String {
        changed.lock()
        defer { changed.unlock() }
        return String(decoding: stdoutBytes, as: UTF8.self)
    }

    /// All of stderr so far.
    var stderr: String {
        changed.lock()
        defer { changed.unlock() }
        return String(decoding: stderrBytes, as: UTF8.self)
    }

    /// The next line of stdout not yet taken (without its newline), or nil if none came within
    /// `timeout` seconds or stdout ended first.
    func readLine(timeout: Double = 60) -> String? {
        var line: String?
        _ = waitUntil(timeout: timeout) {
            if let newline = stdoutBytes[stdoutTaken...].firstIndex(of: UInt8(ascii: "\n")) {
                line = String(decoding: stdoutBytes[stdoutTaken..<newline], as: UTF8.self)
                stdoutTaken = newline + 1
                return true
            }
            return stdoutEnded
        }
        return line
    }

    /// The rest of stdout not yet taken, to its end (at most `timeout` seconds), as bytes.
    func readRestBytes(timeout: Double = 60) -> [UInt8] {
        _ = waitUntil(timeout: timeout) { stdoutEnded }
        changed.lock()
        defer { changed.unlock() }
        let rest = Array(stdoutBytes[stdoutTaken...])
        stdoutTaken = stdoutBytes.count
        return rest
    }

    /// The rest of stdout not yet taken, to its end.
    func readRest(timeout: Double = 60) -> String {
        String(decoding: readRestBytes(timeout: timeout), as: UTF8.self)
    }

    /// Waits until `condition` holds of all of stderr so far; false if it did not within
    /// `timeout` seconds, or stderr ended without it.
    @discardableResult
    func waitForStderr(timeout: Double = 60, _ condition: (String) -> Bool) -> Bool {
        waitUntil(timeout: timeout) { condition(String(decoding: stderrBytes, as: UTF8.self)) || stderrEnded }
            && condition(stderr)
    }

    /// As `waitForStderr`, of stdout (all of it, taken or not).
    @discardableResult
    func waitForStdout(timeout: Double = 60, _ condition: (String) -> Bool) -> Bool {
        waitUntil(timeout: timeout) { condition(String(decoding: stdoutBytes, as: UTF8.self)) || stdoutEnded }
            && condition(stdout)
    }

    /// Stops reading stderr until the child exits: the pipe fills, and its writes there block.
    func stopReadingStderr() {
        changed.lock()
        stderrPaused = true
        changed.unlock()
    }

    /// Waits until the unread stdout pipe (`.unread`) is full: it has no page left, so the
    /// child's next write blocks. Its byte count cannot say so (small writes fill their pages
    /// partly), and the child may wait in `poll` rather than `write`: the pipe is asked, through
    /// a writing end of our own, whether it takes more.
    func waitUntilStdoutIsFull(timeout: Double = 60) -> Bool {
        precondition(unreadOutput, "stdout is read")
        let writer = open("/proc/self/fd/\(output.fileHandleForReading.fileDescriptor)", O_WRONLY | O_NONBLOCK | O_CLOEXEC)
        guard writer >= 0 else { return false }
        defer { close(writer) }
        return Luahier.eventually(timeout: timeout) {
            var request = pollfd(fd: writer, events: Int16(POLLOUT), revents: 0)
            return poll(&request, 1, 0) == 0
        }
    }

    // MARK: The process

    var isRunning: Bool { process.isRunning }

    func send(_ signal: Int32) {
        kill(process.processIdentifier, signal)
    }

    /// The descriptors the child has open (`/proc/PID/fd`); nil once it is gone.
    var openDescriptors: Int? {
        try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(process.processIdentifier)/fd").count
    }

    /// The child's memory mappings (lines of `/proc/PID/maps`); nil once it is gone.
    var mappings: Int? {
        // Read to its end: a /proc file's size reads as 0, and a read by that size stops short.
        guard let file = FileHandle(forReadingAtPath: "/proc/\(process.processIdentifier)/maps"),
            let text = try? file.readToEnd()
        else { return nil }
        return text.split(separator: UInt8(ascii: "\n")).count
    }

    /// CPU time the child has used, in clock ticks (`/proc/PID/stat`: user plus system).
    var cpuTicks: Int {
        guard let stat = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return 0 }
        // Fields after the name: state is the first, utime the 12th, stime the 13th.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12 else { return 0 }
        return (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0)
    }

    /// Waits until the child has used `ticks` more clock ticks of CPU time than now: it is
    /// running the busy code a test started it on, however loaded the machine.
    @discardableResult
    func waitForCPU(ticks: Int = 10, timeout: Double = 60) -> Bool {
        let start = cpuTicks
        return Luahier.eventually(timeout: timeout) { cpuTicks >= start + ticks || !isRunning }
    }

    /// Whether one of the child's threads is blocked in `read` on its stdin
    /// (`/proc/PID/task/TID/syscall`: the call's number, then its arguments in hex).
    var isReadingStdin: Bool {
        #if arch(x86_64)
        let reads: Set<Substring> = ["0"]
        #else
        let reads: Set<Substring> = ["63"]
        #endif
        let tasks = "/proc/\(process.processIdentifier)/task"
        let threads = (try? FileManager.default.contentsOfDirectory(atPath: tasks)) ?? []
        return threads.contains { thread in
            let call = (try? String(contentsOfFile: "\(tasks)/\(thread)/syscall", encoding: .utf8)) ?? ""
            let fields = call.split(separator: " ")
            return fields.count > 1 && reads.contains(fields[0]) && fields[1] == "0x0"
        }
    }

    /// The peak resident memory so far, in KiB (`VmHWM`, /proc); 0 until the child runs its
    /// own program. Between the spawn's fork and its exec, /proc shows a copy of the test
    /// process (its memory, its peak), which is not the child's.
    var peakKiB: Int {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(process.processIdentifier)/exe")) ?? ""
        guard exe == process.executableURL?.resolvingSymlinksInPath().path else { return 0 }
        let status = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    /// The resident memory now, in bytes (`VmRSS`, /proc).
    var residentBytes: Int {
        let status = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
    }

    /// Whether the child exits within `seconds` (it is left running if not).
    func exits(within seconds: Double) -> Bool {
        waitUntil(timeout: seconds) { exited }
    }

    /// How the child ended.
    struct Ended {
        /// The exit status; nil when a signal ended it.
        var status: Int32?
        /// The signal that ended it (a crash, or the kill past the timeout).
        var signal: Int32?
        var stderr: String
    }

    /// Waits for the exit (at most `timeout` seconds, then kills it) and for the ends of its
    /// outputs (what it wrote last).
    @discardableResult
    func waitForExit(timeout: Double = 60) -> Ended {
        if !exits(within: timeout) {
            // SIGKILL: a child stuck with its signals blocked would ignore SIGTERM.
            send(SIGKILL)
        }
        // The termination handler's word, not `Process.waitUntilExit`: that one runs the
        // calling thread's run loop until Foundation notices the exit, and off the main thread
        // it has been seen to wait forever. The bound is against hangs only.
        _ = waitUntil(timeout: 600) { exited && stdoutEnded && stderrEnded }
        changed.lock()
        let status = exitStatus
        changed.unlock()
        switch status {
        case .exit(let code): return Ended(status: code, signal: nil, stderr: stderr)
        case .signal(let number): return Ended(status: nil, signal: number, stderr: stderr)
        case nil: return Ended(status: nil, signal: nil, stderr: stderr + "\n(the test's bound passed and it had not exited)")
        }
    }

    /// As `waitForExit`: the exit status (nil: ended by a signal) and all of stderr.
    func finish(timeout: Double = 60) -> (status: Int32?, stderr: String) {
        let ended = waitForExit(timeout: timeout)
        return (ended.status, ended.stderr)
    }

    /// Sends `signal` and waits for the end: the exit status (nil: ended by a signal), stderr,
    /// and the seconds from the signal to the end.
    func stop(by signal: Int32, timeout: Double = 60) -> (status: Int32?, stderr: String, seconds: Double) {
        let sent = Date()
        send(signal)
        let ended = waitForExit(timeout: timeout)
        return (ended.status, ended.stderr, Date().timeIntervalSince(sent))
    }
}
