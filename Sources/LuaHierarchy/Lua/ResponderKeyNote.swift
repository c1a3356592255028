import CLuaHost

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
