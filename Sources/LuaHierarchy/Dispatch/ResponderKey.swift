/// A responder's identity that survives lines moving in its file: `FILE#NODEPATH#N`, its
/// file (its `file:line` without the line), the path of the node it is registered on, and its
/// registration order among that node's responders (1-based, as trace steps' `index`). An
/// outcome's `responder` (`scripts/alerts.lua:63`) changes when a comment is added above it;
/// its key (`scripts/alerts.lua#/org#2`) changes only when the responders of its node are
/// registered in another order, or it moves to another node or file. See docs/replay.md.
///
/// Outcome lines do not carry it (their format is the contract's); a pool asked for keys
/// (`RulesPool.Options.responderKeys`) hands each answer's key beside it.
public enum ResponderKey {
    /// The key of the responder at `location` (`file:line`), `index` on the node at `node`.
    public static func make(location: String, node: String, index: Int) -> String {
        "\(file(of: location))#\(node)#\(index)"
    }

    /// `file:line` without `:line` (as it is when it has no line).
    static func file(of location: String) -> Substring {
        guard let colon = location.lastIndex(of: ":"),
            location[location.index(after: colon)...].allSatisfy({ $0.isASCII && $0.isNumber }),
            location.index(after: colon) != location.endIndex
        else { return location[...] }
        return location[..<colon]
    }
}
