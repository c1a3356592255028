/// How an error value reads for people, in one place for every printer (the CLI's
/// presenter and script failures, `ScriptError.description`).
///
/// contract §3 reads a bare string as `{type = "Error", message = s}`; the same holds for a
/// `cause` that is a string. A table with no `message` reads as its other fields, so
/// `error({code = 42})` says `Error: {code = 42}` rather than nothing. (A table's
/// `__tostring` has by then become its `message`: the host's message handler asks it.)
package enum ErrorText {
    /// Fields that say where and why, not what: left out of a rendering of the rest.
    static let bookkeeping: Set<String> = ["type", "message", "where", "traceback", "cause"]
    /// The most fields, and characters per field, a rendering shows.
    static let shownFields = 8
    static let shownCharacters = 60

    /// What a table inside itself reads as once described as plain data: an error whose
    /// `cause` is itself (or an error further out) has this as its cause.
    public static let cycle = "<cycle>"

    /// `type`, "Error" when absent (or for a value that is not a table).
    public static func type(of error: Value) -> String {
        error["type"]?.stringValue ?? "Error"
    }

    /// What the error says: its `message`; a bare string or number itself; else a short
    /// rendering of its other fields (`{code = 42}`); nil when there is nothing to say.
    public static func message(of error: Value) -> String? {
        switch error {
        case .string(let text): return text
        case .int, .double, .bool: return error.description
        case .bytes(let bytes): return String(decoding: bytes, as: UTF8.self)
        case .null: return nil
        case .array: return short(error)
        case .map(let fields):
            if let message = fields["message"] { return message.stringValue ?? message.description }
            let rest = fields.keys.filter { !bookkeeping.contains($0) }.sorted()
            guard !rest.isEmpty else { return nil }
            var parts = rest.prefix(shownFields).map { "\($0) = \(short(fields[$0]!))" }
            if rest.count > shownFields { parts.append("…") }
            return "{" + parts.joined(separator: ", ") + "}"
        }
    }

    /// A field's value in a few characters: strings quoted and cut, tables as `{…}`.
    private static func short(_ value: Value) -> String {
        switch value {
        case .array(let items): return items.isEmpty ? "{}" : "{…}"
        case .map(let fields): return fields.isEmpty ? "{}" : "{…}"
        case .string(let text) where text.count > shownCharacters:
            return String(reflecting: String(text.prefix(shownCharacters)) + "…")
        default: return value.description
        }
    }
}
