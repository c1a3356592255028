import CLuaHost

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

/// Where a `LineProcessor` asked for keys notes the key of the line it last answered (nil:
/// no responder handled it, or it was invalid), read by whoever the outcome is delivered to,
/// on the state's own thread, while it is delivered.
final class ResponderKeyNote {
    private(set) var key: String?

    /// The key of a line C answered, from what it left in `run` for the delivery.
    func note(_ run: luahier_LineRun) {
        guard let whereBytes = run.responder_where, let nodeBytes = run.responder_node else {
            key = nil
            return
        }
        let location = String(decoding: UnsafeRawBufferPointer(start: whereBytes, count: run.responder_where_length), as: UTF8.self)
        let node = String(decoding: UnsafeRawBufferPointer(start: nodeBytes, count: run.responder_node_length), as: UTF8.self)
        key = ResponderKey.make(location: location, node: node, index: run.responder_index)
    }

    /// The key of a line the processor's own path answered.
    func note(by node: String?, responder: ResponderInfo?) {
        guard let node, let responder else {
            key = nil
            return
        }
        key = ResponderKey.make(location: responder.location, node: node, index: responder.index)
    }

    /// A line no responder handled (refused, too long, expired).
    func clear() { key = nil }
}
