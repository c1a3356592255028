/// How `luahier test` shows a run: as a person reads it, as JUnit XML for CI systems, and as
/// JSON for tools. Every text the rules or tests made is escaped (PrintableText, XML).
extension TestRun {
    // MARK: Text

    /// One test as it ends: `ok  name (file:line)`, or `FAIL` with why, expected against
    /// actual, and the dispatch's trace. `colour`: ANSI colours (only on a terminal).
    public static func textLines(for result: TestResult, colour: Bool) -> [String] {
        func paint(_ text: String, _ code: String) -> String { colour ? "\u{1B}[\(code)m\(text)\u{1B}[0m" : text }
        let name = PrintableText.field(result.name, limit: 400)
        let time = Self.fixed(result.seconds * 1000, 1) + " ms"
        switch result.status {
        case .passed: return ["\(paint("ok", "32"))     \(name) (\(time))"]
        case .skipped: return ["\(paint("skip", "33"))   \(name)"]
        case .failed, .error:
            var lines = ["\(paint(result.status == .failed ? "FAIL " : "ERROR", "31"))  \(name) (\(PrintableText.field(result.location)))"]
            guard let failure = result.failure else { return lines }
            let message = PrintableText.block(failure.message, lineLimit: 4000, lineCount: 60)
            let head = failure.location.map { PrintableText.field($0) + ": " } ?? ""
            for (offset, line) in message.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                lines.append("       " + (offset == 0 ? head : "") + line)
            }
            if let expected = failure.expected { lines.append("       expected: " + PrintableText.field(expected, limit: 2000)) }
            if let actual = failure.actual { lines.append("       actual:   " + PrintableText.field(actual, limit: 2000)) }
            if let trace = failure.trace {
                lines.append("       trace:")
                if trace.isEmpty { lines.append("         (no responder was offered the value)") }
                let drawing = TraceDrawing(title: "", steps: trace, ending: "end")
                for line in drawing.lines().dropFirst().dropLast() { lines.append("         " + line) }
            }
            return lines
        }
    }

    /// The summary line: `3 passed, 1 failed, 0 errors, 0 skipped (2 files) in 0.12 s`.
    public var summary: String {
        "\(count(.passed)) passed, \(count(.failed)) failed, \(count(.error)) errors, \(count(.skipped)) skipped "
            + "(\(files) file\(files == 1 ? "" : "s")) in \(Self.fixed(seconds, 2)) s"
    }

    /// The coverage table: per rules file, then every responder and subscription with the
    /// number of tests that reached it; the never-reached ones marked (red on a terminal).
    public static func coverageLines(_ report: CoverageReport, colour: Bool) -> [String] {
        func paint(_ text: String) -> String { colour ? "\u{1B}[31m\(text)\u{1B}[0m" : text }
        var lines = ["coverage:"]
        for file in report.files {
            lines.append("  \(PrintableText.field(file.file))  \(file.reached) of \(file.total) reached (\(Self.fixed(file.percent, 1))%)")
        }
        let width = report.entries.map { PrintableText.field($0.location).count }.max() ?? 0
        for entry in report.entries {
            let location = PrintableText.field(entry.location)
            let padded = location + String(repeating: " ", count: max(0, width - location.count))
            let filter = entry.filter.isEmpty ? "any" : entry.filter.joined(separator: ", ")
            let what = "\(PrintableText.field(entry.node)) \(entry.index.map { "#\($0) " } ?? "")\(entry.kind) \(PrintableText.field(filter))"
            let count = entry.tests == 0 ? "never" : "\(entry.tests) test\(entry.tests == 1 ? "" : "s")"
            let padCount = String(repeating: " ", count: max(0, 8 - count.count))
            let never = entry.tests == 0
            lines.append("  \(never ? paint("!") : " ") \(padded)  \(never ? paint(count) : count)\(padCount)  \(what)")
        }
        return lines
    }

    // MARK: JUnit XML

    /// JUnit XML: one `testsuite` per file, one `testcase` per test; a failed assertion is a
    /// `failure`, a raised error or limit an `error`, a filtered test `skipped`.
    public var junitXML: String {
        var xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        xml += "<testsuites name=\"luahier test\" tests=\"\(results.count)\" failures=\"\(count(.failed))\" errors=\"\(count(.error))\" skipped=\"\(count(.skipped))\" time=\"\(Self.seconds(seconds))\">\n"
        var files: [String] = []
        for result in results where !files.contains(result.file) { files.append(result.file) }
        for file in files {
            let tests = results.filter { $0.file == file }
            let time = tests.reduce(0) { $0 + $1.seconds }
            xml += "  <testsuite name=\"\(Self.xml(file))\" tests=\"\(tests.count)\" failures=\"\(tests.filter { $0.status == .failed }.count)\" errors=\"\(tests.filter { $0.status == .error }.count)\" skipped=\"\(tests.filter { $0.status == .skipped }.count)\" time=\"\(Self.seconds(time))\">\n"
            for test in tests {
                xml += "    <testcase classname=\"\(Self.xml(file))\" name=\"\(Self.xml(test.name))\" file=\"\(Self.xml(file))\" time=\"\(Self.seconds(test.seconds))\""
                switch test.status {
                case .passed:
                    xml += "/>\n"
                case .skipped:
                    xml += ">\n      <skipped/>\n    </testcase>\n"
                case .failed, .error:
                    let element = test.status == .failed ? "failure" : "error"
                    let message = test.failure.map { ($0.location.map { $0 + ": " } ?? "") + $0.message } ?? ""
                    let body = Self.textLines(for: test, colour: false).dropFirst().joined(separator: "\n")
                    xml += ">\n      <\(element) message=\"\(Self.xml(message))\" type=\"\(test.status == .failed ? "AssertionFailed" : "Error")\">\(Self.xml(body))</\(element)>\n    </testcase>\n"
                }
            }
            xml += "  </testsuite>\n"
        }
        return xml + "</testsuites>\n"
    }

    static func seconds(_ value: Double) -> String { fixed(value, 3) }

    /// `value` with `digits` decimals (no Foundation here).
    static func fixed(_ value: Double, _ digits: Int) -> String {
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        let scaled = Int64((abs(value) * scale).rounded())
        let whole = scaled / Int64(scale), part = scaled % Int64(scale)
        var decimals = String(part)
        while decimals.count < digits { decimals = "0" + decimals }
        return (value < 0 && scaled != 0 ? "-" : "") + String(whole) + (digits > 0 ? "." + decimals : "")
    }

    /// Text for XML attributes and content: escaped, and without the characters XML 1.0
    /// cannot hold (other control characters are written as `\u{..}`).
    static func xml(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "\n", "\t": out.unicodeScalars.append(scalar)
            case "\r": out += "&#13;"
            default:
                if scalar.value < 0x20 || (0xFFFE...0xFFFF).contains(scalar.value) {
                    out += "\\u{\(String(scalar.value, radix: 16))}"
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out
    }

    // MARK: JSON

    /// The run as one JSON object (format version 1).
    public var json: String {
        var object: [String: Value] = [
            "version": 1,
            "passed": .int(Int64(count(.passed))), "failed": .int(Int64(count(.failed))),
            "errors": .int(Int64(count(.error))), "skipped": .int(Int64(count(.skipped))),
            "files": .int(Int64(files)), "seconds": .double((seconds * 1000).rounded() / 1000),
            "tests": .array(results.map(Self.json)),
        ]
        if let coverage { object["coverage"] = Self.json(coverage) }
        return JSON.encode(.map(object))
    }

    static func json(_ result: TestResult) -> Value {
        var object: [String: Value] = [
            "file": .string(result.file), "name": .string(result.name), "where": .string(result.location),
            "status": .string(result.status.rawValue), "seconds": .double((result.seconds * 1e6).rounded() / 1e6),
        ]
        if let failure = result.failure {
            var failed: [String: Value] = ["message": .string(failure.message)]
            if let location = failure.location { failed["where"] = .string(location) }
            if let expected = failure.expected { failed["expected"] = .string(expected) }
            if let actual = failure.actual { failed["actual"] = .string(actual) }
            if let trace = failure.trace { failed["trace"] = .array(trace.map { .string($0.description) }) }
            object["failure"] = .map(failed)
        }
        return .map(object)
    }

    static func json(_ coverage: CoverageReport) -> Value {
        .map([
            "files": .array(coverage.files.map {
                .map(["file": .string($0.file), "reached": .int(Int64($0.reached)), "total": .int(Int64($0.total)),
                      "percent": .double(($0.percent * 10).rounded() / 10)])
            }),
            "entries": .array(coverage.entries.map { entry in
                var object: [String: Value] = [
                    "where": .string(entry.location), "node": .string(entry.node), "kind": .string(entry.kind),
                    "filter": .array(entry.filter.map(Value.string)), "tests": .int(Int64(entry.tests)),
                ]
                if let index = entry.index { object["index"] = .int(Int64(index)) }
                return .map(object)
            }),
        ])
    }
}
