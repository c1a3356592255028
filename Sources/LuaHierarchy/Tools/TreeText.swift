/// `luahier tree`'s drawing, for people.
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
        Self.gathered { output in writeText(to: output) }
    }

    /// `text()`, handed to `output` in chunks of about 64 KiB as it is drawn. An error
    /// `output` throws stops the drawing and is rethrown.
    public func writeText<Failure: Error>(to output: (String) throws(Failure) -> Void) throws(Failure) {
        var bytes: [UInt8] = []
        // continues[d] says whether the lines below the node at depth d + 1 go on with "│   "
        // (it has later siblings) or blanks. Only the current path's levels are kept.
        var continues: [Bool] = []
        for entry in entries {
            if entry.parent != nil {
                continues.removeSubrange(min(entry.depth - 1, continues.count)...)
                Self.appendIndent(continues, to: &bytes)
                bytes += (entry.isLastChild ? "└── " : "├── ").utf8
                continues.append(!entry.isLastChild)
            } else {
                continues.removeAll()
            }
            bytes += Self.display(head(entry)).utf8
            bytes.append(UInt8(ascii: "\n"))
            let details = entry.responders.map(Self.line) + entry.subscriptions.map(Self.line)
            for detail in details {
                Self.appendIndent(continues, to: &bytes)
                bytes += (entry.hasChildren ? "│  " : "   ").utf8
                bytes += Self.display(detail).utf8
                bytes.append(UInt8(ascii: "\n"))
            }
            if bytes.count >= Self.chunkBytes { try output(Self.takeChunk(&bytes)) }
        }
        try output(Self.takeChunk(&bytes))
    }

    /// Levels of indentation drawn in full; deeper lines show the last ones after "⋯ ", so a
    /// line stays short however deep the tree is.
    static let drawnLevels = 32

    private static let continuing = Array("│   ".utf8), blank = Array("    ".utf8), elided = Array("⋯ ".utf8)

    private static func appendIndent(_ continues: [Bool], to bytes: inout [UInt8]) {
        if continues.count > drawnLevels { bytes += elided }
        for level in continues.suffix(drawnLevels) { bytes += level ? continuing : blank }
    }
}
