import LuaHierarchy

/// One logged decision set beside the outcome the rules give it now (docs/replay.md).
struct ReplayedRequest: Sendable {
    /// Where the record is in the log (1-based).
    var logLine: Int
    /// The record's `request_id` and the request's `id`, when it has them.
    var requestID: Value?
    var id: Value?
    /// The request as the rules see it, for the explanation: nil when it was not valid.
    var request: Value?
    var old: Value
    var new: Value
    var oldKey: String?
    var newKey: String?
    /// The compared fields that differ, in `ReplayComparison.fields` order.
    var changed: [String]

    /// `order-42 (id 3, log line 17)`: how a person finds it in the log.
    func name(log: String) -> String {
        var parts: [String] = []
        if let id { parts.append("id \(ReplayComparison.text(id))") }
        parts.append("\(log):\(logLine)")
        let named = requestID.map { "request \(ReplayComparison.text($0)) " } ?? "request "
        return PrintableText.field(named + "(" + parts.joined(separator: ", ") + ")")
    }
}

/// What became of one record.
enum ReplayVerdict: Sendable {
    /// Its line in the log.
    case same(logLine: Int)
    case changed(ReplayedRequest)
    /// The record could not be read: why, and its line in the log.
    case unreadable(logLine: Int, reason: String)
    /// A shadow revision's record (`"source":"shadow"`): a candidate's answer, not the
    /// outcome a client got, so not replayed.
    case shadow(logLine: Int)
}

enum ReplayComparison {
    /// The fields compared, in the order reports list them.
    static let fields = OutcomeDifferences.compared

    /// The record at `logLine` (its bytes) against `answer`, the outcome its request got now.
    static func judge(record bytes: ArraySlice<UInt8>, logLine: Int, answer: AnsweredRequest?) -> ReplayVerdict {
        let record: Value
        do {
            record = try bytes.withUnsafeBytes { try JSON.parse($0) }
        } catch {
            return .unreadable(logLine: logLine, reason: "not JSON: \(error)")
        }
        guard case .map(let fields) = record else { return .unreadable(logLine: logLine, reason: "a record is a JSON object") }
        if fields["source"]?.stringValue == "shadow" { return .shadow(logLine: logLine) }
        guard case .map? = fields["outcome"] else { return .unreadable(logLine: logLine, reason: "no \"outcome\" object") }
        guard fields["request"] != nil || fields["request_text"]?.stringValue != nil else {
            return .unreadable(logLine: logLine, reason: "no \"request\" (nor \"request_text\")")
        }
        if let key = fields["responder_key"], key.stringValue == nil, key != .null {
            return .unreadable(logLine: logLine, reason: "\"responder_key\" is not a string")
        }
        guard let answer else { return .unreadable(logLine: logLine, reason: "its request could not be replayed") }
        let new = answer.outcome.withUnsafeBytes { try? JSON.parse($0) } ?? .null
        let old = fields["outcome"]!
        let oldKey = fields["responder_key"]?.stringValue
        let changed = OutcomeDifferences.fields(old, new, oldKey: oldKey, newKey: answer.responderKey)
        if changed.isEmpty { return .same(logLine: logLine) }
        let request = fields["request"]
        return .changed(
            ReplayedRequest(
                logLine: logLine, requestID: fields["request_id"], id: request?["id"] ?? old["id"],
                request: request, old: old, new: new, oldKey: oldKey, newKey: answer.responderKey, changed: changed))
    }

    /// Whether the logged outcome's bytes are the new outcome's, once the members replay
    /// ignores at their front (`line`, then `revision`, as outcomes are written) are taken off,
    /// and the logged `responder_key` (a JSON string's bytes, when the record has one) is the
    /// new key: then nothing changed and nothing need be parsed, the common case, kept cheap.
    /// False says only that the slow comparison must decide.
    static func sameBytes(logged: ArraySlice<UInt8>, loggedKey: ArraySlice<UInt8>?, answer: AnsweredRequest) -> Bool {
        guard logged.first == UInt8(ascii: "{"), answer.outcome.first == UInt8(ascii: "{") else { return false }
        var rest = logged.dropFirst()
        if rest.starts(with: lineMember) {
            rest = rest.dropFirst(lineMember.count).drop { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
            guard rest.first == UInt8(ascii: ",") else { return false }
            rest = rest.dropFirst()
        }
        if rest.starts(with: revisionMember) {
            guard let end = rest.firstIndex(of: UInt8(ascii: "}")), rest.index(after: end) < rest.endIndex,
                rest[rest.index(after: end)] == UInt8(ascii: ",")
            else { return false }
            rest = rest[(end + 2)...]
        }
        guard rest.elementsEqual(answer.outcome.dropFirst()) else { return false }
        guard let loggedKey, !loggedKey.elementsEqual("null".utf8) else { return true }
        guard let newKey = answer.responderKey, !loggedKey.contains(UInt8(ascii: "\\")), loggedKey.count == newKey.utf8.count + 2 else {
            return false
        }
        return loggedKey.dropFirst().dropLast().elementsEqual(newKey.utf8)
    }

    private static let lineMember = Array(#""line":"#.utf8)
    private static let revisionMember = Array(#""revision":{"#.utf8)

    /// A value as JSON text (a string as itself).
    static func text(_ value: Value) -> String {
        value.stringValue ?? JSON.encode(value)
    }
}
