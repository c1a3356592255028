import ArgumentParser
import Glibc
import LuaHierarchy

/// `luahier replay RULES.lua LOG|- [--jobs N] [--format text|json|junit]`: what a rules
/// change would do to real traffic (docs/replay.md).
struct Replay: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Run every request of a decision log again against RULES and report the outcomes that changed.",
        discussion: """
            LOG holds decision records, one JSON object a line (docs/replay.md): each has the \
            request (or request_text) and the outcome it got. Every request is answered again \
            by RULES, on a pool of --jobs states as dispatch answers lines, and the new \
            outcome is compared with the logged one on status, kind, type (the value's or the \
            error's), by, responder (by its key FILE#NODEPATH#N when the record has \
            responder_key, so lines that moved do not count) and value (as JSON). The report \
            (stdout) starts with a summary, then lists each changed request with its old and \
            new outcome and the explanation of its new dispatch (as explain --run draws it). \
            A record that cannot be read is reported with its LOG:line. Exit 0 when nothing \
            changed, 1 when some outcome changed, a record could not be read or the rules \
            failed to load, 2 on usage errors.
            """
    )

    @Option(parsing: .unconditional, help: "Workers, each with its own Lua state and its own copy of the rules' globals.")
    var jobs = 1

    @Option(help: "text (the default), json (one object) or junit (a testcase per request) for CI.")
    var format: ReplayReport.Format = .text

    @Option(help: ArgumentHelp("How error requests' `where` names their line, as the logging side did: request (serve), or dispatch's input (stdin, FILE).", valueName: "name"))
    var inputName = "request"

    @Option(help: ArgumentHelp("Name RULES as the logged rules were named (their file in `responder` and keys), for a changed copy kept at another path.", valueName: "name"))
    var rulesName: String?

    @Option(parsing: .unconditional, help: ArgumentHelp("Changed requests whose new dispatch is drawn (0: none).", valueName: "count"))
    var maxExplained = 100

    @Option(parsing: .unconditional, help: ArgumentHelp("Longest record, e.g. 1M, 16M; longer ones are reported unreadable.", valueName: "size"))
    var maxRecord = "16M"

    /// The rules script, sandbox flags, arguments.
    @OptionGroup
    var rules: ScriptArguments

    @Argument(help: ArgumentHelp("The decision log, NDJSON (- for stdin).", valueName: "log"))
    var log: String

    @Argument(parsing: .postTerminator, help: "Arguments for the rules script, after --.")
    var arguments: [String] = []

    func validate() throws {
        if log != "-" { try Validate.readableFile(log) }
        if rules.file == "-" { throw ValidationError("replay reads its rules from a file, not stdin") }
        guard (1...256).contains(jobs) else { throw ValidationError("--jobs must be between 1 and 256") }
        guard maxExplained >= 0 else { throw ValidationError("--max-explained must be 0 or more") }
        guard try maxRecordBytes() > 0 else { throw ValidationError("--max-record must be more than 0") }
    }

    private func maxRecordBytes() throws -> Int {
        try Size.bytes(maxRecord, of: "max-record", example: "1M or 16M")
    }

    func run() throws {
        let source = try rulesName.map { _ in try rules.text() }
        var options = RulesPool.Options(rulesFile: rules.file, workers: jobs)
        if let rulesName, let source { options = RulesPool.Options(rulesSource: source, name: rulesName, workers: jobs) }
        options.arguments = arguments
        options.hierarchy = try rules.host.hierarchyOptions()
        options.inputName = inputName
        options.stampsRevision = false
        options.responderKeys = true
        options.print = { Console.error($0) }
        options.presentWhileLoading = { Console.present($0) }
        let logName = log == "-" ? "stdin" : log
        let descriptor = log == "-" ? STDIN_FILENO : open(log, O_RDONLY)
        guard descriptor >= 0 else { throw ValidationError("cannot open \(log): \(String(cString: strerror(errno)))") }
        defer { if descriptor != STDIN_FILENO { close(descriptor) } }
        let report = try ReplayReport(format: format, logName: logName, rulesName: rules.name)
        fflush(nil)
        let pool: RulesPool
        do {
            pool = try RulesPool(options: options)
        } catch {
            Console.scriptFailed(error)
            throw ExitCode(ExitStatus.failed(error))
        }
        var reader = DecisionLogReader(descriptor: descriptor, maxRecord: try maxRecordBytes())
        let explainer = ReplayExplainer(rules: rules, source: source.map { ($0, rulesName ?? rules.file) }, arguments: arguments, budget: maxExplained)
        var interrupted = false
        _ = pool.answerInOrder(inFlight: 2 * jobs + 2, next: {
            Interruption.signal == nil ? ReplayBatch.read(from: &reader) : nil
        }, finish: { batch in
            interrupted = interrupted || batch.interrupted
            for verdict in batch.verdicts { report.add(verdict, explanation: explainer.explain) }
        })
        pool.shutDownBlocking()
        interrupted = interrupted || Interruption.signal != nil
        report.finish(interrupted: interrupted)
        if let failure = reader.failure { Console.error("luahier: \(logName): \(failure)") }
        // The text report starts with the summary; the others say it on stderr too.
        if format != .text { Console.error("luahier: replayed \(report.summary)") }
        try ExitStatus.finishCommand()
        if report.anythingChanged || reader.failure != nil { throw ExitCode(ExitStatus.scriptFailed) }
    }
}

/// Records read from the log, their requests answered on one state, and what became of each.
final class ReplayBatch: RequestBatch, @unchecked Sendable {
    /// The records' bytes, one after another, then the text of any given as `request_text`.
    private(set) var requestBytes: [UInt8] = []
    private(set) var requestSpans: [RequestSpan] = []
    private struct Record {
        var logLine: Int
        var bytes: Range<Int>?
        var tooLong: Int?
        /// Its request's place in `requestSpans`.
        var span: Int?
        /// Its members, when it reads as a JSON object.
        var scanned: ScannedRecord?
    }
    private var records: [Record] = []
    /// Set on the state's thread, read by the caller after the pool hands the batch back.
    private(set) var verdicts: [ReplayVerdict] = []
    private(set) var interrupted = false

    static let maxRecords = 256, maxBytes = 1 << 20

    /// The next records of the log, nil at its end.
    static func read(from reader: inout DecisionLogReader) -> ReplayBatch? {
        let batch = ReplayBatch()
        while batch.records.count < maxRecords && batch.requestBytes.count < maxBytes, let line = reader.next() {
            switch line {
            case .tooLong(let number, let bytes):
                batch.records.append(Record(logLine: number, tooLong: bytes))
            case .record(let number, let bytes):
                batch.add(bytes, logLine: number)
            }
        }
        return batch.records.isEmpty ? nil : batch
    }

    private func add(_ bytes: ArraySlice<UInt8>, logLine: Int) {
        let start = requestBytes.count
        requestBytes.append(contentsOf: bytes)
        var record = Record(logLine: logLine, bytes: start..<requestBytes.count)
        let scanned = ScannedRecord(requestBytes[start...])
        if scanned.complete { record.scanned = scanned }
        // A shadow revision's record: not replayed (`judge` finds one the scan could not).
        if scanned.complete && scanned.isShadow {
            records.append(record)
            return
        }
        if let request = scanned.request {
            record.span = requestSpans.count
            requestSpans.append(RequestSpan(number: scanned.line ?? 1, start: request.lowerBound, count: request.count))
        } else if let text = Self.requestText(bytes) {
            // Not valid JSON when it was logged: replayed as the same text.
            record.span = requestSpans.count
            let textStart = requestBytes.count
            requestBytes.append(contentsOf: text.text.utf8)
            requestSpans.append(RequestSpan(number: text.line ?? 1, start: textStart, count: requestBytes.count - textStart))
        }
        records.append(record)
    }

    /// A record's `request_text` and `line`, read from the whole record.
    private static func requestText(_ bytes: ArraySlice<UInt8>) -> (text: String, line: Int?)? {
        guard let record = bytes.withUnsafeBytes({ try? JSON.parse($0) }), let text = record["request_text"]?.stringValue else { return nil }
        return (text, record["line"]?.intValue.map { Int($0) })
    }

    func answered(_ answers: [AnsweredRequest]) {
        for record in records {
            if let span = record.span, span >= answers.count {
                interrupted = true
                break
            }
            if let tooLong = record.tooLong {
                verdicts.append(.unreadable(logLine: record.logLine, reason: "the record is \(tooLong) bytes, over --max-record"))
                continue
            }
            if record.scanned?.isShadow == true {
                verdicts.append(.shadow(logLine: record.logLine))
                continue
            }
            if let span = record.span, let scanned = record.scanned, let outcome = scanned.outcome,
                ReplayComparison.sameBytes(
                    logged: requestBytes[outcome], loggedKey: scanned.responderKey.map { requestBytes[$0] }, answer: answers[span])
            {
                verdicts.append(.same(logLine: record.logLine))
                continue
            }
            verdicts.append(
                ReplayComparison.judge(
                    record: requestBytes[record.bytes!], logLine: record.logLine, answer: record.span.map { answers[$0] }))
        }
    }
}

/// Draws a changed request's new dispatch as `explain --run` does, on a state of its own
/// (loaded at the first change), for the first `budget` changes.
final class ReplayExplainer {
    private let rules: ScriptArguments
    /// With `--rules-name`: the rules' text and the name it runs under.
    private let source: (text: String, name: String)?
    private let arguments: [String]
    private var budget: Int
    private var hierarchy: Hierarchy?
    private var loadFailure: String?

    init(rules: ScriptArguments, source: (text: String, name: String)?, arguments: [String], budget: Int) {
        (self.rules, self.source, self.arguments, self.budget) = (rules, source, arguments, budget)
    }

    func explain(_ request: ReplayedRequest) -> [String]? {
        guard budget > 0 else { return nil }
        budget -= 1
        if request.new["status"]?.stringValue == "invalid" {
            return ["not dispatched: " + (request.new["error"]?["message"]?.stringValue ?? "the request is not valid")]
        }
        guard let fields = request.request, let at = fields["at"]?.stringValue else { return nil }
        let domain: Domain = fields["error"] != nil ? .error : .event
        guard let payload = fields[domain.rawValue], let value = Explain.message(payload, as: domain) else { return nil }
        guard let hierarchy = loaded() else { return loadFailure.map { ["cannot explain: \($0)"] } }
        do {
            guard let node = try hierarchy.node(at: at) else { return ["no node at \(PrintableText.field(at))"] }
            return try Explain.drawnRun(of: value, as: domain, at: node, on: hierarchy).lines()
        } catch {
            return ["cannot explain: \(PrintableText.field("\(error)"))"]
        }
    }

    /// The state explanations run on; the rules' print is dropped (the pool printed it).
    private func loaded() -> Hierarchy? {
        if let hierarchy { return hierarchy }
        guard loadFailure == nil else { return nil }
        do {
            let loading = try rules.makeHierarchy()
            loading.output = { _ in }
            if let source {
                try loading.run(source: source.text, chunkName: source.name, arguments: arguments)
            } else {
                try loading.run(file: rules.file, arguments: arguments)
            }
            hierarchy = loading
            return loading
        } catch {
            loadFailure = "\(error)"
            return nil
        }
    }
}
