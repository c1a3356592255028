/// The three renderings of `luahier tree`: text for people, DOT for Graphviz, JSON for tools.
extension TreeDescription {
    /// The tree drawn with box-drawing characters; under each node, its responders
    /// (`#index kind filter  file:line`) in order, then its subscriptions.
    ///
    ///     /
    ///     │  #1 receiveError any  rules.lua:20
    ///     ├── app  triggers{Tap}
    ///     │   │  #1 receiveEvent Tap  rules.lua:3
    ///     │   └── feed
    ///     │         subscribe Refresh  rules.lua:9
    ///     └── log
    public func text() -> String {
        var lines: [String] = []
        // segments[d] continues the lines below a node at depth d: "│   " while it has later
        // siblings, else blanks. Only the current path's segments are kept.
        var segments: [String] = []
        for entry in entries {
            segments.removeSubrange(min(entry.depth, segments.count)...)
            var head: String
            if entry.parent != nil {
                head = Self.indent(segments.dropFirst()) + (entry.isLastChild ? "└── " : "├── ") + Self.display(entry.name)
                segments.append(entry.isLastChild ? "    " : "│   ")
            } else {
                head = Self.display(topPath)
                segments.append("")
            }
            head += Self.declarationSummary(entry)
            lines.append(head)
            let detailPrefix = Self.indent(segments.dropFirst()) + (entry.hasChildren ? "│  " : "   ")
            for responder in entry.responders { lines.append(detailPrefix + Self.line(responder)) }
            for subscription in entry.subscriptions { lines.append(detailPrefix + Self.line(subscription)) }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Levels of indentation drawn in full; deeper lines show the last ones after "⋯ ", so a
    /// line stays short however deep the tree is.
    static let drawnLevels = 32

    private static func indent(_ segments: ArraySlice<String>) -> String {
        guard segments.count > drawnLevels else { return segments.joined() }
        return "⋯ " + segments.suffix(drawnLevels).joined()
    }

    /// A Graphviz digraph: one box per node (its name, declarations, responders and
    /// subscriptions as left-aligned lines), an edge from each parent to each child.
    public func dot() -> String {
        var lines = [
            "digraph luahier {",
            "  graph [rankdir=TB];",
            "  node [shape=box, fontname=\"monospace\", fontsize=10];",
        ]
        for (position, entry) in entries.enumerated() {
            var label = [Self.display(entry.parent == nil ? topPath : entry.name) + Self.declarationSummary(entry)]
            label += entry.responders.map(Self.line)
            label += entry.subscriptions.map(Self.line)
            let text = label.map { Self.dotEscaped($0) + "\\l" }.joined()
            lines.append("  n\(position) [label=\"\(text)\"];")
            if let parent = entry.parent { lines.append("  n\(parent) -> n\(position);") }
        }
        lines.append("}")
        return lines.joined(separator: "\n") + "\n"
    }

    /// `{"format": "luahier-tree", "version": 1, "nodes": [...]}`: the nodes flat, in
    /// preorder, each naming its parent's path; keys sorted, so the bytes are stable. Refused
    /// when the paths alone would take more than `maxPathBytes` (a very deep chain).
    public func json(maxPathBytes: Int = 64 << 20) throws(TreeTooLarge) -> String {
        let pathBytes = totalPathBytes
        guard pathBytes <= maxPathBytes else { throw TreeTooLarge(pathBytes: pathBytes, limit: maxPathBytes) }
        var paths: [String] = []
        paths.reserveCapacity(entries.count)
        forEachPath { _, path in paths.append(path) }
        let nodes: [Value] = entries.enumerated().map { position, entry in
            var node: [String: Value] = [
                "name": .string(entry.name),
                "path": .string(paths[position]),
                "depth": .int(Int64(entry.depth)),
                "triggers": .array(entry.triggers.map { .map(["type": .string($0.type), "where": .string($0.location)]) }),
                "reports": .array(entry.reports.map { .map(["type": .string($0.type), "where": .string($0.location)]) }),
                "subscriptions": .array(entry.subscriptions.map {
                    .map(["types": .array($0.types.map(Value.string)), "where": .string($0.location)])
                }),
                "responders": .array(entry.responders.map { responder in
                    var fields: [String: Value] = [
                        "index": .int(Int64(responder.index)), "kind": .string(responder.kind.rawValue),
                        "where": .string(responder.location),
                    ]
                    // An absent filter is "any": a list is never empty.
                    if !responder.filter.isEmpty { fields["filter"] = .array(responder.filter.map(Value.string)) }
                    return .map(fields)
                }),
            ]
            if let parent = entry.parent { node["parent"] = .string(paths[parent]) }
            return .map(node)
        }
        return JSON.encode(.map(["format": "luahier-tree", "version": 1, "nodes": .array(nodes)])) + "\n"
    }

    // MARK: Pieces

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
        case 1: return display(types[0])
        default: return "[" + types.map(display).joined(separator: ", ") + "]"
        }
    }

    private static func declarationSummary(_ entry: Entry) -> String {
        var text = ""
        if !entry.triggers.isEmpty { text += "  triggers{" + entry.triggers.map { display($0.type) }.joined(separator: ", ") + "}" }
        if !entry.reports.isEmpty { text += "  reports{" + entry.reports.map { display($0.type) }.joined(separator: ", ") + "}" }
        return text
    }

    /// A name or type as one printable line: control characters are written as escapes.
    static func display(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { $0.value < 32 || $0.value == 127 }) else { return text }
        return String(text.unicodeScalars.map { $0.value < 32 || $0.value == 127 ? "\\u{\(String($0.value, radix: 16))}" : String($0) }.joined())
    }

    /// Quoted-string escaping for DOT: backslash and quote.
    private static func dotEscaped(_ text: String) -> String {
        var escaped = ""
        for character in text {
            switch character {
            case "\\": escaped += "\\\\"
            case "\"": escaped += "\\\""
            default: escaped.append(character)
            }
        }
        return escaped
    }
}

/// A tree whose JSON rendering would be too large: its paths alone exceed the limit.
public struct TreeTooLarge: Error, Sendable, CustomStringConvertible {
    public var pathBytes: Int
    public var limit: Int
    public var description: String {
        "the tree is too deep for --format json: its paths alone take \(pathBytes) bytes (limit \(limit)); --format text and dot draw it"
    }
}
