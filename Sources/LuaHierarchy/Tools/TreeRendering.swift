/// The three renderings of `luahier tree`: text for people (`TreeText.swift`), DOT for
/// Graphviz (`TreeDOT.swift`), JSON for tools (`TreeJSON.swift`).
///
/// Each is written in chunks to an `output` the caller gives, as it is made: a million-node
/// tree renders to a hundred megabytes or more, which is never held whole. `text()`, `dot()`
/// and `json()` gather the chunks into one string, for small trees and tests.
extension TreeDescription {
    /// The size a chunk reaches before it is handed on: large enough that a write per chunk
    /// costs nothing, small enough to be no memory at all beside the tree.
    static let chunkBytes = 64 << 10

    /// The bytes gathered so far, as text, leaving `bytes` empty for the next chunk.
    static func takeChunk(_ bytes: inout [UInt8]) -> String {
        defer { bytes.removeAll(keepingCapacity: true) }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// A whole rendering as one string.
    static func gathered(_ render: ((String) -> Void) -> Void) -> String {
        var whole = ""
        render { whole += $0 }
        return whole
    }

    // MARK: Pieces

    // The pieces below are raw text: names and types as the script gave them. Each rendering
    // escapes a whole line its own way (`display` for text, `DOTLabel` for DOT), so a cut
    // line never ends inside an escape.

    /// `#2 receiveEvent [Save, Tap]  rules.lua:7`; an alert handler's filter reads `alertable`.
    static func line(_ responder: Responder) -> String {
        let filter = responder.kind == .handleAlertErrors ? "alertable" : filterText(responder.filter)
        return "#\(responder.index) \(responder.kind.rawValue) \(filter)  \(responder.location)"
    }

    /// `subscribe Refresh  rules.lua:9`.
    static func line(_ subscription: Subscription) -> String {
        "subscribe \(filterText(subscription.types))  \(subscription.location)"
    }

    static func filterText(_ types: [String]) -> String {
        switch types.count {
        case 0: return "any"
        case 1: return types[0]
        default: return "[" + types.joined(separator: ", ") + "]"
        }
    }

    /// A node's head line: its name (the top's path for the top), then `triggers{...}` and
    /// `reports{...}`.
    func head(_ entry: Entry) -> String {
        var text = entry.parent == nil ? topPath : entry.name
        if !entry.triggers.isEmpty { text += "  triggers{" + entry.triggers.map(\.type).joined(separator: ", ") + "}" }
        if !entry.reports.isEmpty { text += "  reports{" + entry.reports.map(\.type).joined(separator: ", ") + "}" }
        return text
    }

    /// Whether a scalar is a control character, written as an escape wherever luahier shows text.
    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 32 || scalar.value == 127
    }

    /// `\u{a}` for a control character.
    static func escape(_ scalar: Unicode.Scalar) -> String {
        "\\u{\(String(scalar.value, radix: 16))}"
    }

    /// A line as one printable line: control characters are written as escapes.
    static func display(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var shown = ""
        for scalar in text.unicodeScalars {
            if isControl(scalar) { shown += escape(scalar) } else { shown.unicodeScalars.append(scalar) }
        }
        return shown
    }
}
