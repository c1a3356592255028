import CJSONReader
import CLua
import CLuaHost

/// Lua values as plain `Value`s and back. Raw access only, so no metamethod runs and
/// nothing raises; cycles, functions and odd keys are a `PayloadError`, never a hang.
extension LuaHost {
    /// Nesting beyond this is refused both ways, so neither C nor Swift recursion runs deep.
    static let maxPayloadDepth = 200

    /// [-0, +0, -] The value at `index` as plain data. `strict` throws on what plain data
    /// cannot hold; otherwise such parts are described in strings (for messages).
    ///
    /// Every copy is the host's, held on the script's behalf (contract §7), so it is bounded: a
    /// `bounded` description builds at most half of what the memory cap leaves (1 MiB at least,
    /// 16 MiB at most, cap or none: a description is for messages); any other copy (an
    /// outcome's value, a trace's, a Swift responder's input) at most what the cap leaves. The
    /// value is measured first, by the same count, without building anything (a table that
    /// holds another many times reads as exponentially many entries): one that fits is copied
    /// whole, one that does not is never cut at whatever point Lua's table order reached (which
    /// would differ from run to run) but stands as a whole for `<too large>`, keeping an error's
    /// `type`, `message`, `where` and `title`; a `strict` copy throws. The measuring is host
    /// work, charged as it goes: a budget that trips stops it, and the value is too large.
    ///
    /// Cap or none, a copy also takes at most four times what the state holds, and 1 MiB more
    /// (`copyBoundByState`): a value's copy is about its size in Lua, unless it holds a table
    /// many times over. Without that bound, with no cap, such a value was copied whole, its
    /// size doubling with each level of sharing, after the limits that end a dispatch had ended.
    func value(at index: Int32, strict: Bool, bounded: Bool = false) throws(PayloadError) -> Value {
        let top = lua_gettop(thread)
        let index = lua_absindex(thread, index)
        let capped = bounded
            ? min(memoryAvailable.map { max($0 / 2, Self.smallestDescriptionBudget) } ?? Int.max, Self.largestDescriptionBudget)
            : memoryAvailable ?? Int.max
        let budget = min(capped, copyBoundByState)
        // The tables being copied, outermost first (a cycle is a table inside itself). Reused:
        // a copy allocates only what it builds. Copying runs no Lua code, so never re-enters.
        var ancestors = payloadAncestors
        payloadAncestors = []
        defer {
            ancestors.removeAll(keepingCapacity: true)
            payloadAncestors = ancestors
        }
        var left = budget
        var work = 0
        if !fits(at: index, ancestors: &ancestors, left: &left, work: &work) {
            lua_settop(thread, top)
            if strict {
                throw PayloadError(path: "", reason: budget < capped
                    ? "a value whose copy would be larger than \(budget) bytes, four times what its Lua state holds (a table held in it many times over)"
                    : "a value larger than the \(budget) bytes the memory cap leaves for a copy")
            }
            return tooLargeStandIn(at: index)
        }
        do {
            return try value(at: index, ancestors: &ancestors, strict: strict)
        } catch {
            lua_settop(thread, top)
            throw error
        }
    }

    /// The most any copy of a value of this state takes: four times what the state holds (a
    /// string whose bytes are not UTF-8 grows up to three times as Swift text), and 1 MiB more.
    private var copyBoundByState: Int {
        isClosed ? Self.smallestDescriptionBudget : 4 * Int(guardState.pointee.used) + (1 << 20)
    }

    /// [-0, +0, -] The bytes a copy of the Lua string at `index` takes at most as Swift text:
    /// its bytes that are not UTF-8 become U+FFFD, three bytes each. The scan is host work.
    private func copiedLength(ofStringAt index: Int32, work: inout Int) -> Int {
        var length = 0
        guard let bytes = lua_tolstring(thread, index, &length) else { return 0 }
        work += length
        return luahier_utf8repairedlength(UnsafeRawPointer(bytes).assumingMemoryBound(to: UInt8.self), length)
    }

    /// [-0, +0, -] Whether a copy of the value at `index` fits in `left` bytes, counted as the
    /// copy counts them (a string its length and 16, an entry 32); `work` adds up the bytes
    /// walked, charged as host work every 64 KiB (a budget that trips: it does not fit).
    private func fits(at index: Int32, ancestors: inout [UnsafeRawPointer], left: inout Int, work: inout Int) -> Bool {
        let L = thread
        switch lua_type(L, index) {
        case LUA_TSTRING:
            left -= copiedLength(ofStringAt: index, work: &work) + 16
            work += 16
        case LUA_TTABLE:
            let identity = lua_topointer(L, index)!
            // A cycle or too deep a nesting is described in a few bytes: it fits.
            guard !ancestors.contains(identity), ancestors.count < Self.maxPayloadDepth, lua_checkstack(L, 4) != 0 else {
                return true
            }
            ancestors.append(identity)
            defer { ancestors.removeLast() }
            lua_pushnil(L)
            while lua_next(L, index) != 0 {
                left -= 32
                work += 32
                if lua_type(L, -2) == LUA_TSTRING {
                    left -= copiedLength(ofStringAt: lua_gettop(L) - 1, work: &work)
                }
                guard left >= 0, fits(at: lua_gettop(L), ancestors: &ancestors, left: &left, work: &work) else {
                    luahier_pop(L, 2)
                    return false
                }
                luahier_pop(L, 1)
            }
        default:
            break
        }
        if work >= 1 << 16 {
            charge(instructions: Int64(work / 64))
            work = 0
            if limitTripped { return false }
        }
        return left >= 0
    }

    /// [-0, +0, -] What stands for a value too large to copy: for a table, the fields that say
    /// what an error is (cut to 4 KiB) and `"…": "<too large>"`; else `<too large>`.
    private func tooLargeStandIn(at index: Int32) -> Value {
        guard lua_type(thread, index) == LUA_TTABLE else { return Self.tooLarge }
        var fields: [String: Value] = ["…": Self.tooLarge]
        keepEssentials(of: index, in: &fields)
        return .map(fields)
    }

    static let smallestDescriptionBudget = 1 << 20

    /// The most a bounded description builds, cap or none: a table that holds another many
    /// times (not a cycle) reads as exponentially many entries, and a description is for
    /// messages, which print far less.
    static let largestDescriptionBudget = 16 << 20

    /// [-0, +0, -] For a description cut short: the fields that say what an error is, read
    /// raw, strings cut to 4 KiB, so `type` and `message` survive whatever else was too large.
    private func keepEssentials(of table: Int32, in fields: inout [String: Value]) {
        for key in ["type", "message", "where", "title"] where fields[key] == nil {
            lua_pushstring(thread, key)
            var length = 0
            if lua_rawget(thread, table) == LUA_TSTRING, let start = lua_tolstring(thread, -1, &length) {
                // At most the first 4 KiB are copied, cut where a UTF-8 sequence starts.
                var end = min(length, 4096)
                while end < length && end > 0 && (UInt8(bitPattern: start[end]) & 0xC0) == 0x80 { end -= 1 }
                let bytes = UnsafeRawBufferPointer(start: start, count: end)
                fields[key] = .string(String(decoding: bytes, as: UTF8.self) + (end < length ? "…" : ""))
            }
            luahier_pop(thread, 1)
        }
    }
    static let tooLarge = Value.string("<too large>")

    /// The path of a failure is built as the error goes back out, level by level, so a copy
    /// that succeeds spends nothing on paths.
    private func value(
        at index: Int32, ancestors: inout [UnsafeRawPointer], strict: Bool
    ) throws(PayloadError) -> Value {
        let L = thread
        switch lua_type(L, index) {
        case LUA_TNIL: return .null
        case LUA_TBOOLEAN: return .bool(lua_toboolean(L, index) != 0)
        case LUA_TNUMBER:
            return lua_isinteger(L, index) != 0 ? .int(luahier_tointeger(L, index)) : .double(luahier_tonumber(L, index))
        case LUA_TSTRING:
            if let text = validString(at: index) { return .string(text) }
            return .bytes(bytes(at: index)!)
        case LUA_TTABLE:
            return try tableValue(at: index, ancestors: &ancestors, strict: strict)
        default:
            let kind = typeName(at: index)
            if strict { throw PayloadError(path: "", reason: "a \(kind) cannot be copied as plain data") }
            return .string("<\(kind)>")
        }
    }

    private func tableValue(
        at table: Int32, ancestors: inout [UnsafeRawPointer], strict: Bool
    ) throws(PayloadError) -> Value {
        let L = thread
        let identity = lua_topointer(L, table)!
        if ancestors.contains(identity) {
            if strict { throw PayloadError(path: "", reason: "a table that contains itself (a cycle)") }
            return .string(ErrorText.cycle)
        }
        guard ancestors.count < Self.maxPayloadDepth, lua_checkstack(L, 4) != 0 else {
            if strict { throw PayloadError(path: "", reason: "tables nested deeper than \(Self.maxPayloadDepth)") }
            return .string("<too deep>")
        }
        ancestors.append(identity)
        defer { ancestors.removeLast() }

        var fields: [String: Value] = [:]
        var items: [(key: Int64, value: Value)] = []
        // Keys plain data cannot hold, described (non-strict only): placed after the others,
        // in an order of their own, so the description does not depend on Lua's table order
        // (which its hash seed changes from run to run) and no key silently replaces another.
        var described: [(order: [UInt8], key: String, value: Value)] = []
        lua_pushnil(L)
        while lua_next(L, table) != 0 {
            // key at -2, value at -1
            switch lua_type(L, -2) {
            case LUA_TSTRING:
                guard let key = validString(at: -2) else {
                    if strict { throw PayloadError(path: "", reason: "a key that is not valid UTF-8") }
                    let raw = bytes(at: -2)!
                    let field = try value(at: lua_gettop(L), ancestors: &ancestors, strict: strict)
                    described.append(([1] + raw, String(decoding: raw, as: UTF8.self), field))
                    break
                }
                do {
                    fields[key] = try value(at: lua_gettop(L), ancestors: &ancestors, strict: strict)
                } catch {
                    throw error.inside("." + key)
                }
            case LUA_TNUMBER where lua_isinteger(L, -2) != 0:
                let key = luahier_tointeger(L, -2)
                do {
                    items.append((key, try value(at: lua_gettop(L), ancestors: &ancestors, strict: strict)))
                } catch {
                    throw error.inside("[\(key)]")
                }
            default:
                if strict {
                    throw PayloadError(path: "", reason: "a key of type \(typeName(at: -2)) (keys are strings, or 1...n for arrays)")
                }
                let name = describeKey(at: -2)
                let field = try value(at: lua_gettop(L), ancestors: &ancestors, strict: strict)
                described.append(([2] + Array(name.utf8), name, field))
            }
            luahier_pop(L, 1)
        }

        if items.isEmpty && described.isEmpty { return .map(fields) }
        items.sort { $0.key < $1.key }
        let isSequence = items.enumerated().allSatisfy { Int64($0.offset + 1) == $0.element.key }
        if fields.isEmpty && described.isEmpty && isSequence { return .array(items.map(\.value)) }
        if strict {
            let reason = fields.isEmpty
                ? "an array with holes or keys not starting at 1"
                : "a table that mixes string keys and integer keys"
            throw PayloadError(path: "", reason: reason)
        }
        // Integer keys as their digits, then the described keys in their order; a name taken
        // already gets " (2)", " (3)", ...
        let all = items.map { (order: [UInt8](), key: String($0.key), value: $0.value) }
            + described.sorted { $0.order.lexicographicallyPrecedes($1.order) }
        // The next number to try per name: many keys that read alike (bytes that are not
        // UTF-8 all repair to U+FFFD) would otherwise try 2, 3, ... afresh each, n² in all.
        var nextCopy: [String: Int] = [:]
        for entry in all {
            var key = entry.key
            var copy = nextCopy[entry.key] ?? 2
            while fields[key] != nil {
                key = "\(entry.key) (\(copy))"
                copy += 1
            }
            if key != entry.key { nextCopy[entry.key] = copy }
            fields[key] = entry.value
        }
        return .map(fields)
    }

    /// [-0, +0, -] A key plain data cannot hold, as a description reads it: `<number 1.5>`,
    /// `<boolean true>`, `<table>`, `<function>`.
    private func describeKey(at index: Int32) -> String {
        let L = thread
        switch lua_type(L, index) {
        case LUA_TNUMBER: return "<number \(String(describing: luahier_tonumber(L, index)))>"
        case LUA_TBOOLEAN: return "<boolean \(lua_toboolean(L, index) != 0)>"
        default: return "<\(typeName(at: index))>"
        }
    }

    /// [-0, +1, m] Pushes `value` as a new Lua value (tables are fresh tables).
    func push(_ value: Value, depth: Int = 0) throws(PayloadError) {
        let L = thread
        switch value {
        case .null: lua_pushnil(L)
        case .bool(let flag): lua_pushboolean(L, flag ? 1 : 0)
        case .int(let number): lua_pushinteger(L, number)
        case .double(let number): lua_pushnumber(L, number)
        case .string(let text): push(text)
        case .bytes(let bytes): pushBytes(bytes)
        case .array(let items):
            guard depth < Self.maxPayloadDepth, lua_checkstack(L, 3) != 0 else {
                throw PayloadError(path: "", reason: "values nested deeper than \(Self.maxPayloadDepth)")
            }
            lua_createtable(L, Int32(clamping: items.count), 0)
            for (offset, item) in items.enumerated() {
                try push(item, depth: depth + 1)
                lua_rawseti(L, -2, lua_Integer(offset + 1))
            }
        case .map(let fields):
            guard depth < Self.maxPayloadDepth, lua_checkstack(L, 3) != 0 else {
                throw PayloadError(path: "", reason: "values nested deeper than \(Self.maxPayloadDepth)")
            }
            lua_createtable(L, 0, Int32(clamping: fields.count))
            for (key, field) in fields {
                push(key)
                try push(field, depth: depth + 1)
                lua_rawset(L, -3)
            }
        }
    }

    // MARK: Messages

    /// [-0, +0, m] The value at `index` as a message of `domain` (contract §3): a string is
    /// shorthand; a table keeps its identity, and an error table without `type` gets
    /// `type = "Error"` (not the sandbox's read-only tables: they stay as they are). A table
    /// that already travelled as the other domain is refused, so an event cannot come back
    /// from an error responder as an error, nor the reverse.
    func message(at index: Int32, as domain: Domain) throws(ShapeError) -> Message {
        let L = thread
        switch lua_type(L, index) {
        case LUA_TSTRING:
            return Message(.string(string(at: index)!), as: domain)!
        case LUA_TTABLE:
            // The rule is C's (walk.c, luahier_astable), as the engine's walk reads it.
            let table = lua_absindex(L, index)
            guard luahier_astable(L, &guardState.pointee.tags, table, domain == .error ? 1 : 0) != 0 else {
                defer { luahier_pop(L, 1) }
                throw ShapeError(string(at: -1) ?? "a table")
            }
            let type = string(at: -1) ?? "Error"
            luahier_pop(L, 1)
            lua_pushvalue(L, table)
            return Message(domain: domain, type: type, payload: .foreign(LuaPayload(host: self, ref: ref())))
        default:
            throw ShapeError(lua_type(L, index) == LUA_TNIL ? "nil" : "a \(typeName(at: index))")
        }
    }

    /// [-0, +0, m] Remembers, for as long as the table lives, that it travels as `domain`.
    private func tag(tableAt index: Int32, as domain: Domain) {
        luahier_tag(thread, &guardState.pointee.tags, index, domain == .error ? 1 : 0)
    }

    /// [-0, +1, m] Pushes a message's value. A plain value becomes a Lua table once, and the
    /// message keeps that table, so later Lua responders see the same object.
    func pushPayload(of message: inout Message) {
        let L = thread
        // An exact type check and an unchecked cast: `as?` on an existential is slow, and
        // this runs once per responder call.
        if case .foreign(let foreign) = message.payload, type(of: foreign) == LuaPayload.self {
            let payload = unsafeDowncast(foreign, to: LuaPayload.self)
            if payload.host === self {
                lua_rawgeti(L, luahier_REGISTRYINDEX, lua_Integer(payload.ref))
                return
            }
        }
        do {
            try push(message.describedValue())
        } catch {
            push(optional: "<\(error)>")
            return
        }
        if lua_type(L, -1) == LUA_TTABLE {
            tag(tableAt: -1, as: message.domain)
            lua_pushvalue(L, -1)
            message.payload = .foreign(LuaPayload(host: self, ref: ref()))
        }
    }
}

/// Why a Lua value is not an event or an error: a description of what it is instead.
struct ShapeError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A Lua table on its way up the chain, held by one registry reference.
final class LuaPayload: ForeignPayload {
    let host: LuaHost
    let ref: Int32

    init(host: LuaHost, ref: Int32) {
        self.host = host
        self.ref = ref
    }

    deinit { host.unref(ref) }

    func toValue() throws -> Value {
        guard !host.isClosed else { throw PayloadError(path: "", reason: "the Lua state is closed") }
        return try withPushed { () throws(PayloadError) in try host.value(at: -1, strict: true) }
    }

    func describedValue(bounded: Bool) -> Value {
        guard !host.isClosed else { return .string("<closed Lua state>") }
        return withPushed { (try? host.value(at: -1, strict: false, bounded: bounded)) ?? .string("<unconvertible>") }
    }

    func setIfAbsent(_ key: String, to value: Message) {
        setIfAbsent(key) { var value = value; host.pushPayload(of: &value) }
    }

    func setIfAbsent(_ key: String, to text: String) {
        setIfAbsent(key) { host.push(text) }
    }

    private func setIfAbsent(_ key: String, pushValue: () -> Void) {
        guard !host.isClosed else { return }
        withPushed {
            // The sandbox's read-only views (`error(math)`) stay as they are.
            if luahier_isfrozen(host.thread, -1) != 0 { return }
            if host.pushRawField(of: -1, key) == LUA_TNIL {
                luahier_pop(host.thread, 1)
                pushValue()
                host.setRawField(of: -2, key)
            } else {
                luahier_pop(host.thread, 1)
            }
        }
    }

    /// Runs `body` with the table pushed, and pops it after.
    private func withPushed<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        lua_rawgeti(host.thread, luahier_REGISTRYINDEX, lua_Integer(ref))
        defer { luahier_pop(host.thread, 1) }
        return try body()
    }
}
