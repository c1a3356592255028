/// `luahier tree --format json`: the stable format for tools.
extension TreeDescription {
    /// The format's version, written in every document; it changes when the format does.
    /// Version 2 names each node's parent by its index and writes no paths but the top's:
    /// version 1's path on every node took the square of the depth in a deep chain.
    public static let jsonVersion = 2

    /// `{"format":"luahier-tree","nodes":[...],"version":2}` and a newline: the nodes flat,
    /// in preorder, each with `depth`, `name`, `parent` (the index of its parent in `nodes`,
    /// absent for the first), `path` (the first node only), `reports`, `responders`,
    /// `subscriptions`, `triggers`. Keys sorted, compact, so the bytes are stable. Its size
    /// is in proportion to the tree's, however deep.
    public func json() -> String {
        Self.gathered { output in writeJSON(to: output) }
    }

    /// `json()`, handed to `output` in chunks of about 64 KiB as it is written. An error
    /// `output` throws stops the writing and is rethrown.
    public func writeJSON<Failure: Error>(to output: (String) throws(Failure) -> Void) throws(Failure) {
        var writer = JSONWriter()
        writer.append(#"{"format":"luahier-tree","nodes":["#)
        for (position, entry) in entries.enumerated() {
            if position > 0 { writer.append(",") }
            write(entry, to: &writer)
            if writer.bytes.count >= Self.chunkBytes { try output(Self.takeChunk(&writer.bytes)) }
        }
        writer.append(#"],"version":\#(Self.jsonVersion)}"#)
        writer.append("\n")
        try output(Self.takeChunk(&writer.bytes))
    }

    /// One node, its keys in sorted order as `JSON.encode` would write them.
    private func write(_ entry: Entry, to writer: inout JSONWriter) {
        writer.writeKey("depth", opening: true)
        writer.append(String(entry.depth))
        writer.writeKey("name")
        writer.writeString(entry.name)
        if let parent = entry.parent {
            writer.writeKey("parent")
            writer.append(String(parent))
        } else {
            // Only the top's path: every other one is built from it and the names.
            writer.writeKey("path")
            writer.writeString(topPath)
        }
        writer.writeKey("reports")
        Self.writeDeclarations(entry.reports, to: &writer)
        writer.writeKey("responders")
        Self.writeList(entry.responders, to: &writer) { responder, writer in
            // An absent filter is "any": a list is never empty.
            if !responder.filter.isEmpty {
                writer.writeKey("filter", opening: true)
                Self.writeStrings(responder.filter, to: &writer)
                writer.writeKey("index")
            } else {
                writer.writeKey("index", opening: true)
            }
            writer.append(String(responder.index))
            writer.writeKey("kind")
            writer.writeString(responder.kind.rawValue)
            writer.writeKey("where")
            writer.writeString(responder.location)
            writer.append("}")
        }
        writer.writeKey("subscriptions")
        Self.writeList(entry.subscriptions, to: &writer) { subscription, writer in
            writer.writeKey("types", opening: true)
            Self.writeStrings(subscription.types, to: &writer)
            writer.writeKey("where")
            writer.writeString(subscription.location)
            writer.append("}")
        }
        writer.writeKey("triggers")
        Self.writeDeclarations(entry.triggers, to: &writer)
        writer.append("}")
    }

    /// `[{"type":...,"where":...}, ...]`.
    private static func writeDeclarations(_ declarations: [(type: String, location: String)], to writer: inout JSONWriter) {
        writeList(declarations, to: &writer) { declaration, writer in
            writer.writeKey("type", opening: true)
            writer.writeString(declaration.type)
            writer.writeKey("where")
            writer.writeString(declaration.location)
            writer.append("}")
        }
    }

    private static func writeStrings(_ strings: [String], to writer: inout JSONWriter) {
        writeList(strings, to: &writer) { string, writer in writer.writeString(string) }
    }

    /// `[item,item,...]`, each item written by `writeItem`.
    private static func writeList<Item>(
        _ items: [Item], to writer: inout JSONWriter, _ writeItem: (Item, inout JSONWriter) -> Void
    ) {
        writer.append("[")
        for (position, item) in items.enumerated() {
            if position > 0 { writer.append(",") }
            writeItem(item, &writer)
        }
        writer.append("]")
    }
}
