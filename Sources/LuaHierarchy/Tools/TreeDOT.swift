/// `luahier tree --format dot`: a Graphviz digraph.
extension TreeDescription {
    /// A Graphviz digraph: one box per node (its name, declarations, responders and
    /// subscriptions as left-aligned lines), an edge from each parent to each child. Labels
    /// are bounded (`DOTLabel`), as Graphviz refuses a quoted string past 16 KiB.
    public func dot() -> String {
        Self.gathered { output in writeDOT(to: output) }
    }

    /// `dot()`, handed to `output` in chunks of about 64 KiB as it is written. An error
    /// `output` throws stops the writing and is rethrown.
    public func writeDOT<Failure: Error>(to output: (String) throws(Failure) -> Void) throws(Failure) {
        var bytes = Array("""
            digraph luahier {
              graph [rankdir=TB];
              node [shape=box, fontname="monospace", fontsize=10];

            """.utf8)
        for (position, entry) in entries.enumerated() {
            var label = DOTLabel()
            label.add(head(entry))
            // Only the lines shown are made: a node may hold thousands of responders.
            let responders = entry.responders.prefix(DOTLabel.detailLines)
            let subscriptions = entry.subscriptions.prefix(DOTLabel.detailLines - responders.count)
            for responder in responders { label.add(Self.line(responder)) }
            for subscription in subscriptions { label.add(Self.line(subscription)) }
            let hidden = entry.responders.count + entry.subscriptions.count - responders.count - subscriptions.count
            if hidden > 0 { label.add("… \(hidden) more") }
            bytes += "  n\(position) [label=\"\(label.text)\"];\n".utf8
            if let parent = entry.parent { bytes += "  n\(parent) -> n\(position);\n".utf8 }
            if bytes.count >= Self.chunkBytes { try output(Self.takeChunk(&bytes)) }
        }
        bytes += "}\n".utf8
        try output(Self.takeChunk(&bytes))
    }
}

/// A node's label in DOT: left-aligned lines inside a quoted string, each escaped and cut to
/// a fixed size, at most `detailLines` lines under the head.
///
/// Graphviz refuses a quoted string of 16,384 bytes or more ("scanning a quoted string ...
/// longer than 16384?"), so a long name, a long filter or many responders must not make one:
/// a label holds at most 2 + `detailLines` lines of at most `lineBytes` bytes and a short
/// note of what was cut, under 7 KiB.
struct DOTLabel {
    /// Responder and subscription lines shown under the head; a line `… N more` says how
    /// many of them follow.
    static let detailLines = 20
    /// The escaped bytes of a line's text shown before it is cut.
    static let lineBytes = 256

    private(set) var text = ""

    /// Appends `line` (raw text) as the label's next line.
    mutating func add(_ line: String) {
        // `\l` ends a left-aligned line.
        text += Self.shown(line) + "\\l"
    }

    /// `line` escaped: control characters as `\u{a}` as everywhere, then backslash and quote
    /// for DOT. A line whose escaped text passes `lineBytes` is cut at a character (never
    /// inside an escape, a UTF-8 sequence or a character's combining marks) and ends with
    /// `… (N more characters)`, N counting the characters cut.
    static func shown(_ line: String) -> String {
        // Most lines are short and plain: taken as they are, which keeps a million nodes fast.
        if line.utf8.count <= lineBytes, !line.unicodeScalars.contains(where: needsEscape) { return line }
        var shown = ""
        var used = 0
        var index = line.startIndex
        while index < line.endIndex {
            let piece = escaped(line[index])
            guard used + piece.utf8.count <= lineBytes else { break }
            shown += piece
            used += piece.utf8.count
            index = line.index(after: index)
        }
        if index < line.endIndex {
            let cut = line[index...].count
            shown += "… (\(cut) more character\(cut == 1 ? "" : "s"))"
        }
        return shown
    }

    private static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        TreeDescription.isControl(scalar) || scalar == "\\" || scalar == "\""
    }

    /// One character as it stands in a DOT label.
    private static func escaped(_ character: Character) -> String {
        var piece = ""
        for scalar in character.unicodeScalars {
            if TreeDescription.isControl(scalar) {
                piece += "\\" + TreeDescription.escape(scalar)
            } else if scalar == "\\" || scalar == "\"" {
                piece += "\\" + String(scalar)
            } else {
                piece.unicodeScalars.append(scalar)
            }
        }
        return piece
    }
}
