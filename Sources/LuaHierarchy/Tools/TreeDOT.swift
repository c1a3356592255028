/// `luahier tree --format dot`: a Graphviz digraph.
extension TreeDescription {
    /// A Graphviz digraph: one box per node (its name, declarations, responders and
    /// subscriptions as left-aligned lines), an edge from each parent to each child.
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
            let lines = [head(entry)] + entry.responders.map(Self.line) + entry.subscriptions.map(Self.line)
            let label = lines.map { Self.dotEscaped(Self.display($0)) + "\\l" }.joined()
            bytes += "  n\(position) [label=\"\(label)\"];\n".utf8
            if let parent = entry.parent { bytes += "  n\(parent) -> n\(position);\n".utf8 }
            if bytes.count >= Self.chunkBytes { try output(Self.takeChunk(&bytes)) }
        }
        bytes += "}\n".utf8
        try output(Self.takeChunk(&bytes))
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
