import ArgumentParser
import Glibc
import LuaHierarchy

/// stdout for results, stderr for everything else; every stderr line is whole.
enum Console {
    /// What became of writing to stdout.
    enum OutputState {
        case writing
        /// A write failed: `cannot write to stdout: REASON`.
        case failed(String)
        /// Given up on a reader that stopped reading when a signal came: the command ends as
        /// interrupted, which says so itself.
        case abandoned
    }

    nonisolated(unsafe) private(set) static var output = OutputState.writing

    /// Writes `text` and the terminator to stdout at once, unbuffered, as `lua.c`'s `print`
    /// flushes each line: a pipe (`| tee log`) sees each line when it is printed. A reader
    /// that closed the pipe ends the process quietly (status 141, as SIGPIPE would); any
    /// other failure is kept for `finishOutput()`.
    static func out(_ text: String, terminator: String = "\n") {
        guard case .writing = output else { return }
        var line = text + terminator
        line.withUTF8 { write($0, newline: false) }
    }

    /// For a script's `print`: its bytes, then a newline, as `out`; a failed write is raised
    /// at the script's line, so the script stops there unless it catches it.
    static func print(_ bytes: UnsafeBufferPointer<UInt8>) throws {
        if case .failed(let message) = output { throw OutputFailure(message: message) }
        write(bytes, newline: true)
        if case .failed(let message) = output { throw OutputFailure(message: message) }
    }

    struct OutputFailure: ReportableError {
        static let errorType = "OutputError"
        var message: String
        var errorType: String { Self.errorType }
        var errorMessage: String { message }
    }

    /// C's stdout (where `io.write` under --unsafe buffers) is flushed first, so the two keep
    /// their order, as with lua.c.
    private static func write(_ bytes: UnsafeBufferPointer<UInt8>, newline: Bool) {
        fflush(nil)
        var code = OutputWriter.writeAll(UnsafeRawBufferPointer(bytes), to: STDOUT_FILENO)
        if code == nil && newline { code = Self.newline.withUnsafeBytes { OutputWriter.writeAll($0, to: STDOUT_FILENO) } }
        guard let code else { return }
        if code == EPIPE { exit(ExitStatus.closedPipe) }
        output = code == OutputWriter.abandoned
            ? .abandoned : .failed("cannot write to stdout: \(String(cString: strerror(code)))")
    }

    private static let newline: [UInt8] = [UInt8(ascii: "\n")]

    /// Exit 1 with `luahier: cannot write to stdout: REASON` if any write to stdout failed
    /// (`> /dev/full`): results that were not written are an error, not a success.
    static func finishOutput() throws {
        if reportOutputFailure() { throw ExitCode(ExitStatus.scriptFailed) }
    }

    /// Prints `luahier: cannot write to stdout: REASON` if a write to stdout failed; whether
    /// stdout was left unwritten.
    static func reportOutputFailure() -> Bool {
        switch output {
        case .writing: return false
        case .abandoned: return true
        case .failed(let message):
            error("luahier: \(message)")
            return true
        }
    }

    /// Unbuffered, as stdout is, so output sent to one pipe keeps its order. Everything on
    /// stderr is host layout around script-made text, so it goes out as a bounded block with
    /// its control characters escaped (contract §7); fields a script made are escaped one by one
    /// before that (`PrintableText.field`).
    static func error(_ text: String) {
        var block = PrintableText.block(text.hasSuffix("\n") ? String(text.dropLast()) : text) + "\n"
        _ = block.withUTF8 { OutputWriter.writeAll(UnsafeRawBufferPointer($0), to: STDERR_FILENO) }
    }

    /// The CLI's presenter: an error that passed the root, with type, message, where, the
    /// node it was reported at, its cause chain and, for Lua errors, the traceback.
    static func present(_ presented: PresentedError) {
        let origin = presented.detached ? "in a detached subtree, reported at" : "reported at"
        var lines = ["luahier: unhandled error \(origin) \(PrintableText.field(presented.reportedAt))"]
        var error: Value? = presented.error
        var depth = 0
        while let current = error, depth < 16 {
            if depth > 0, current == .string(ErrorText.cycle) {
                lines.append("  caused by itself (the cause chain loops back to an error above)")
                error = nil
                break
            }
            lines.append("  " + (depth == 0 ? "" : "caused by ") + summary(of: current))
            if depth == 0, current["type"]?.stringValue == "LuaError", let traceback = current["traceback"]?.stringValue {
                lines += traceback.split(separator: "\n").map { "    " + $0 }
            }
            error = current["cause"]
            depth += 1
        }
        if error != nil { lines.append("  (cause chain cut at \(depth))") }
        Console.error(lines.joined(separator: "\n"))
    }

    /// A relaxed-safety warning, one line.
    static func warn(_ warning: SafetyWarning) {
        Console.error("luahier: warning: \(PrintableText.field("\(warning)"))")
    }

    /// `Type: message (file:line)`, as `ErrorText` reads the value.
    static func summary(of error: Value) -> String {
        var text = PrintableText.field(ErrorText.type(of: error), limit: 200)
        if let message = ErrorText.message(of: error) { text += ": " + PrintableText.field(message) }
        if let location = error["where"]?.stringValue { text += " (\(PrintableText.field(location, limit: 300)))" }
        return text
    }

    /// A dispatch's trace, printed when it finishes (so nested ones come first, indented):
    /// `trace: at PATH -> STATUS [by NODE #i kind (file:line)], ends as KIND TYPE`, then a
    /// line per responder called.
    static func printTrace(_ outcome: Outcome, depth: Int) {
        let indent = String(repeating: "  ", count: depth - 1)
        var head = "\(indent)trace: at \(PrintableText.field(outcome.at)) -> \(outcome.status.rawValue)"
        if let by = outcome.by, let responder = outcome.responder {
            head += " by \(PrintableText.field(by)) #\(responder.index) \(responder.kind.rawValue) (\(PrintableText.field(responder.location)))"
        }
        head += ", ends as \(outcome.kind.rawValue) \(PrintableText.field(outcome.value.typeName ?? "?", limit: 200))"
        var lines = [head]
        for step in outcome.trace ?? [] {
            lines.append("\(indent)  \(PrintableText.field("\(step)"))")
        }
        Console.error(lines.joined(separator: "\n"))
    }

    /// A script failure: `luahier: file:line: message`, then the traceback.
    static func scriptFailed(_ error: ScriptError) {
        // Below the block's line limit (4000), so the count of what was cut stays whole.
        var text = "luahier: \(PrintableText.field("\(error)", limit: 3000))"
        if let traceback = error.traceback { text += "\n" + traceback }
        Console.error(text)
    }

    /// One line on stderr for each reload (`--watch`, SIGHUP, `POST /v1/reload`).
    @Sendable static func reloaded(_ result: ReloadResult, trigger: RulesWatcher.Trigger) {
        reloaded(result, because: trigger.rawValue)
    }

    @Sendable static func reloaded(_ result: ReloadResult, because trigger: String) {
        error("luahier: " + reloadMessage(result, because: trigger))
    }

    /// `reloaded rules.lua (SIGHUP): revision 2 (sha256 …)`, and the like.
    static func reloadMessage(_ result: ReloadResult, because trigger: String) -> String {
        switch result {
        case .loaded(let revision):
            "reloaded \(revision.files[0]) (\(trigger)): revision \(revision)"
        case .unchanged(let revision):
            "reload (\(trigger)) found the rules unchanged: revision \(revision) keeps answering"
        case .failed(let running, let message):
            "reload (\(trigger)) failed, revision \(running) keeps answering: \(PrintableText.field(message))"
        }
    }
}
