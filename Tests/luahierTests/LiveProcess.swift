import Foundation

/// A running `luahier` whose pipes the test drives: write a line, read an answer while the
/// child still runs, send it a signal. For the behaviours that only show over time (contract §8:
/// `print` flushed per line, answers written as they are ready, SIGINT and SIGTERM).
final class LiveProcess: @unchecked Sendable {
    let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private let errors = Pipe()
    private var pending: [UInt8] = []
    private var errorBytes = Data()
    private let errorsRead = DispatchGroup()

    init(
        _ arguments: [String], environment: [String: String]? = nil, executable: URL = Luahier.binary,
        folder: URL = Luahier.packageRoot
    ) throws {
        signal(SIGPIPE, SIG_IGN)
        process.executableURL = executable
        process.arguments = arguments
        process.currentDirectoryURL = folder
        if let environment { process.environment = environment }
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let handle = errors.fileHandleForReading
        DispatchQueue.global().async(group: errorsRead) { [self] in
            let data = handle.readDataToEndOfFile()
            errorBytes = data
        }
    }

    /// Writes `text` to the child's stdin (no newline added).
    func write(_ text: String) {
        try? input.fileHandleForWriting.write(contentsOf: Data(text.utf8))
    }

    /// Closes the child's stdin (end of input).
    func closeInput() {
        try? input.fileHandleForWriting.close()
    }

    /// The next line of stdout (without its newline), or nil if none came within `timeout`
    /// seconds or stdout ended.
    func readLine(timeout: Double) -> String? {
        let descriptor = output.fileHandleForReading.fileDescriptor
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeSubrange(...newline)
                return line
            }
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { return nil }
            var request = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&request, 1, Int32(left * 1000) + 1) > 0 else { continue }
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = read(descriptor, &buffer, buffer.count)
            if count <= 0 { return nil }
            pending += buffer[..<count]
        }
    }

    /// The rest of stdout, to its end, as bytes.
    func readRestBytes() -> [UInt8] {
        let rest = output.fileHandleForReading.readDataToEndOfFile()
        defer { pending = [] }
        return pending + [UInt8](rest)
    }

    /// The rest of stdout, to its end.
    func readRest() -> String {
        let rest = output.fileHandleForReading.readDataToEndOfFile()
        defer { pending = [] }
        return String(decoding: pending + rest, as: UTF8.self)
    }

    func send(_ signal: Int32) {
        kill(process.processIdentifier, signal)
    }

    /// Sends `signal` and waits for the end (`finish`): the exit status (nil: ended by a
    /// signal), stderr, and the seconds from the signal to the end.
    func stop(by signal: Int32, timeout: Double = 10) -> (status: Int32?, stderr: String, seconds: Double) {
        let sent = Date()
        send(signal)
        let (status, stderr) = finish(timeout: timeout)
        return (status, stderr, Date().timeIntervalSince(sent))
    }

    var isRunning: Bool { process.isRunning }

    /// Waits (at most `timeout` seconds, then kills it) and returns the exit status, or nil
    /// when the child ended by a signal; and all of stderr.
    func finish(timeout: Double = 30) -> (status: Int32?, stderr: String) {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        // SIGKILL: a child stuck with its signals blocked would ignore terminate()'s SIGTERM.
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        errorsRead.wait()
        let status = process.terminationReason == .exit ? process.terminationStatus : nil
        return (status, String(decoding: errorBytes, as: UTF8.self))
    }
}
