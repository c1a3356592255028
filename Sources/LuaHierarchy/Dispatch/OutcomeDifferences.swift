/// Where two outcomes of the same request differ, field by field: the one comparison
/// `luahier replay` (a logged outcome against the rules now) and a shadow revision (the live
/// outcome against a candidate's) both make (docs/replay.md, "What is compared").
///
/// Compared: `status`, `kind`, the `type` of the value or error, `by`, `responder` (by its
/// stable key when both sides have one, else by `file:line`), and `value` without what names a
/// line of the rules. Not compared: `id`, `line`, `revision`, timings.
package enum OutcomeDifferences {
    /// The fields compared, in the order `fields` lists those that differ.
    package static let compared = ["status", "kind", "type", "by", "responder", "value"]

    /// The compared fields in which `old` and `new` differ, in that order.
    package static func fields(_ old: Value, _ new: Value, oldKey: String?, newKey: String?) -> [String] {
        var changed: [String] = []
        func differ(_ a: Value?, _ b: Value?) -> Bool {
            switch (a, b) {
            case (nil, nil): false
            case (let a?, let b?): !a.equalsAsLua(b)
            default: true
            }
        }
        if differ(old["status"], new["status"]) { changed.append("status") }
        if differ(old["kind"], new["kind"]) { changed.append("kind") }
        if differ(type(of: old), type(of: new)) { changed.append("type") }
        if differ(old["by"], new["by"]) { changed.append("by") }
        if let oldKey, let newKey {
            if oldKey != newKey { changed.append("responder") }
        } else if differ(old["responder"], new["responder"]) {
            changed.append("responder")
        }
        if differ(old["value"].map(withoutRuleLines), new["value"].map(withoutRuleLines)) { changed.append("value") }
        return changed
    }

    /// The same for two outcome lines as written. One that cannot be read (nested past the
    /// reader's depth of 200, which the writer is not held to) differs in every field: two
    /// such lines were both read as nothing, and a change between them went uncounted (an
    /// attacker's find). `luahier replay` reports such a record unreadable.
    package static func fields(lines old: UnsafeRawBufferPointer, _ new: UnsafeRawBufferPointer, oldKey: String?, newKey: String?) -> [String] {
        guard let oldValue = try? JSON.parse(old), let newValue = try? JSON.parse(new) else { return compared }
        return fields(oldValue, newValue, oldKey: oldKey, newKey: newKey)
    }

    /// `value` with what names a line of the rules taken out, so that lines moving in the
    /// rules do not change it: an error's `traceback` is dropped, and a `where` naming a Lua
    /// file (`rules.lua:55`) keeps the file only. A `where` naming an input line
    /// (`request:3`) is kept whole.
    package static func withoutRuleLines(_ value: Value) -> Value {
        switch value {
        case .map(var fields):
            fields["traceback"] = nil
            for (key, member) in fields {
                if key == "where", case .string(let place) = member {
                    fields[key] = .string(withoutLine(place))
                } else {
                    fields[key] = withoutRuleLines(member)
                }
            }
            return .map(fields)
        case .array(let items):
            return .array(items.map(withoutRuleLines))
        default:
            return value
        }
    }

    private static func withoutLine(_ place: String) -> String {
        guard let colon = place.lastIndex(of: ":"), place[..<colon].hasSuffix(".lua"),
            !place[place.index(after: colon)...].isEmpty, place[place.index(after: colon)...].allSatisfy(\.isNumber)
        else { return place }
        return String(place[..<colon])
    }

    /// The value's `type`, or for an invalid outcome its error's.
    package static func type(of outcome: Value) -> Value? {
        outcome["value"]?["type"] ?? outcome["error"]?["type"]
    }

}
