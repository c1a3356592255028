import ArgumentParser
import Glibc
import LuaHierarchy

/// `replay`'s report, in one of three formats: the summary comes first, yet the entries are
/// known only as the log streams past, so they are spooled to a temporary file (memory stays
/// bounded whatever the log's size) and copied out after the summary at the end.
final class ReplayReport {
    enum Format: String, ExpressibleByArgument, CaseIterable {
        case text, json, junit
    }

    let format: Format
    let logName: String
    let rulesName: String
    private(set) var same = 0, changed = 0, newlyInvalid = 0, unreadable = 0
    /// Shadow revisions' records, passed over.
    private(set) var shadowRecords = 0
    private var fieldCounts = [String: Int]()
    /// Changed requests (and, for junit, every testcase); for json, unreadable records apart.
    private let spool: UnsafeMutablePointer<FILE>
    private let unreadableSpool: UnsafeMutablePointer<FILE>
    private var spooledChanges = 0, spooledUnreadable = 0

    init(format: Format, logName: String, rulesName: String) throws {
        guard let spool = tmpfile(), let unreadableSpool = tmpfile() else {
            throw ValidationError("cannot make a temporary file for the report: \(String(cString: strerror(errno)))")
        }
        (self.format, self.logName, self.rulesName) = (format, logName, rulesName)
        (self.spool, self.unreadableSpool) = (spool, unreadableSpool)
    }

    deinit {
        fclose(spool)
        fclose(unreadableSpool)
    }

    var requests: Int { same + changed }
    var anythingChanged: Bool { changed > 0 || unreadable > 0 }

    /// Notes one record's verdict; `explanation` draws a changed request's new dispatch.
    func add(_ verdict: ReplayVerdict, explanation: (ReplayedRequest) -> [String]?) {
        switch verdict {
        case .same(let line):
            same += 1
            if format == .junit { put("<testcase classname=\"replay\" name=\"\(xml("\(logName):\(line)"))\"/>\n") }
        case .changed(let request):
            changed += 1
            if request.new["status"]?.stringValue == "invalid" && request.old["status"]?.stringValue != "invalid" { newlyInvalid += 1 }
            for field in request.changed { fieldCounts[field, default: 0] += 1 }
            spoolChange(request, explanation: explanation(request))
        case .shadow:
            shadowRecords += 1
        case .unreadable(let line, let reason):
            unreadable += 1
            switch format {
            case .text: put("unreadable: \(logName):\(line): \(PrintableText.field(reason))\n")
            case .json:
                let entry: Value = .map(["log_line": .int(Int64(line)), "error": .string(reason)])
                put((spooledUnreadable > 0 ? "," : "") + JSON.encode(entry), to: unreadableSpool)
                spooledUnreadable += 1
            case .junit:
                put("<testcase classname=\"replay\" name=\"\(xml("\(logName):\(line)"))\"><error type=\"unreadable\" message=\"\(xml(reason))\"/></testcase>\n")
            }
        }
    }

    /// Records seen so far.
    private var recordsSeen: Int { same + changed + unreadable }

    private func spoolChange(_ request: ReplayedRequest, explanation: [String]?) {
        let old = Self.shown(request.old), new = Self.shown(request.new)
        switch format {
        case .text:
            var text = "\nchanged: \(request.name(log: logName)): \(request.changed.joined(separator: ", "))\n"
            text += "  was: \(PrintableText.field(JSON.encode(old), limit: 4000))\n"
            text += "  now: \(PrintableText.field(JSON.encode(new), limit: 4000))\n"
            if request.changed.contains("responder"), request.oldKey != nil || request.newKey != nil {
                text += "  responder key: was \(request.oldKey ?? "none"), now \(request.newKey ?? "none")\n"
            }
            if let explanation {
                text += "  explain:\n" + explanation.map { "    " + $0 + "\n" }.joined()
            }
            put(text)
        case .json:
            var entry: [String: Value] = [
                "log_line": .int(Int64(request.logLine)), "fields": .array(request.changed.map(Value.string)),
                "old": old, "new": new,
            ]
            if let id = request.requestID { entry["request_id"] = id }
            if let id = request.id { entry["id"] = id }
            if let key = request.oldKey { entry["old_responder_key"] = .string(key) }
            if let key = request.newKey { entry["new_responder_key"] = .string(key) }
            if let explanation { entry["explanation"] = .array(explanation.map(Value.string)) }
            put((spooledChanges > 0 ? "," : "") + JSON.encode(.map(entry)))
            spooledChanges += 1
        case .junit:
            var body = "was: \(JSON.encode(old))\nnow: \(JSON.encode(new))\n"
            if let explanation { body += explanation.joined(separator: "\n") + "\n" }
            let message = "changed: " + request.changed.joined(separator: ", ")
            put("<testcase classname=\"replay\" name=\"\(xml(request.name(log: logName)))\"><failure type=\"changed\" message=\"\(xml(message))\">\(xml(body))</failure></testcase>\n")
        }
    }

    /// An outcome as compared: without the fields replay ignores.
    static func shown(_ outcome: Value) -> Value {
        guard case .map(var fields) = outcome else { return outcome }
        for ignored in ["line", "revision"] { fields[ignored] = nil }
        return .map(fields)
    }

    /// `12 requests: 9 same, 3 changed (by 2, value 3), 1 newly invalid; 0 unreadable records`.
    var summary: String {
        let fields = ReplayComparison.fields.compactMap { field in fieldCounts[field].map { "\(field) \($0)" } }
        var text = "\(requests) request\(requests == 1 ? "" : "s"): \(same) same, \(changed) changed"
        if !fields.isEmpty { text += " (\(fields.joined(separator: ", ")))" }
        text += ", \(newlyInvalid) newly invalid; \(unreadable) unreadable record\(unreadable == 1 ? "" : "s")"
        if shadowRecords > 0 { text += "; \(shadowRecords) shadow record\(shadowRecords == 1 ? "" : "s") passed over" }
        return text
    }

    /// Writes the report to stdout: the summary, then what was spooled.
    func finish(interrupted: Bool) {
        switch format {
        case .text:
            Console.out("replay of \(PrintableText.field(logName)) against \(PrintableText.field(rulesName)): \(summary)"
                + (interrupted ? " (interrupted: the rest of the log was not replayed)" : ""))
            copy(spool)
        case .json:
            var counts: [String: Value] = [:]
            for field in ReplayComparison.fields { counts[field] = .int(Int64(fieldCounts[field] ?? 0)) }
            let summary: Value = .map([
                "log": .string(logName), "rules": .string(rulesName), "requests": .int(Int64(requests)),
                "same": .int(Int64(same)), "changed": .int(Int64(changed)), "fields": .map(counts),
                "newly_invalid": .int(Int64(newlyInvalid)), "unreadable": .int(Int64(unreadable)),
                "shadow_records": .int(Int64(shadowRecords)),
                "interrupted": .bool(interrupted),
            ])
            Console.out("{\"summary\":\(JSON.encode(summary)),\"changes\":[", terminator: "")
            copy(spool)
            Console.out("],\"unreadable\":[", terminator: "")
            copy(unreadableSpool)
            Console.out("]}")
        case .junit:
            let counts = "tests=\"\(recordsSeen)\" failures=\"\(changed)\" errors=\"\(unreadable)\""
            Console.out("<?xml version=\"1.0\" encoding=\"UTF-8\"?>")
            Console.out("<testsuites name=\"luahier replay\" \(counts)>")
            Console.out("<testsuite name=\"\(xml("replay of \(logName) against \(rulesName)"))\" \(counts)>")
            copy(spool)
            Console.out("</testsuite>\n</testsuites>")
        }
    }

    private func put(_ text: String, to file: UnsafeMutablePointer<FILE>? = nil) {
        var text = text
        text.withUTF8 { _ = fwrite($0.baseAddress, 1, $0.count, file ?? spool) }
    }

    /// Copies a spool to stdout, cut only before a byte that starts a character.
    private func copy(_ file: UnsafeMutablePointer<FILE>) {
        fflush(file)
        rewind(file)
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        var carried: [UInt8] = []
        while true {
            let count = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, file) }
            if count <= 0 { break }
            var bytes = carried + chunk[..<count]
            let cut = bytes.lastIndex { $0 < 0x80 || $0 >= 0xC0 } ?? bytes.count
            carried = Array(bytes[cut...])
            bytes.removeSubrange(cut...)
            Console.out(String(decoding: bytes, as: UTF8.self), terminator: "")
        }
        if !carried.isEmpty { Console.out(String(decoding: carried, as: UTF8.self), terminator: "") }
    }

    /// Text for an XML attribute or element: markup escaped, characters XML 1.0 cannot hold
    /// replaced.
    private func xml(_ text: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "\n", "\t": escaped.unicodeScalars.append(scalar)
            case _ where scalar.value < 0x20 || (0xFFFE...0xFFFF).contains(scalar.value): escaped += "\u{FFFD}"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }
}
