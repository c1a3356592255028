import CLua
import CLuaHost

/// Lua values written straight to JSON, without building a `Value` first: the outcome line
/// of `luahier dispatch` is written from the Lua table the responders left.
extension LuaHost {
    /// [-0, +0, m] Appends the value at `index` as JSON, with the same reading as
    /// `value(at:strict:)`: keys 1...n make an array, string keys an object (sorted), the
    /// empty table is `{}`. False, with `writer` partly written, when the value needs the
    /// careful path (functions, cycles, mixed keys, keys that are not UTF-8, deep nesting):
    /// the caller then truncates and writes the described value instead.
    func writeJSON(at index: Int32, into writer: inout JSONWriter, depth: Int = 0) -> Bool {
        let L = thread
        switch lua_type(L, index) {
        case LUA_TNIL: writer.append("null")
        case LUA_TBOOLEAN: writer.append(lua_toboolean(L, index) != 0 ? "true" : "false")
        case LUA_TNUMBER:
            if lua_isinteger(L, index) != 0 {
                writer.write(.int(luahier_tointeger(L, index)))
            } else {
                writer.write(.double(luahier_tonumber(L, index)))
            }
        case LUA_TSTRING:
            var length = 0
            let pointer = lua_tolstring(L, index, &length)!
            guard writer.bytes.count + length <= writer.limit else {
                writer.limitReached = true
                return false
            }
            writer.writeString(bytes: UnsafeRawBufferPointer(start: pointer, count: length).bindMemory(to: UInt8.self))
            guard writer.bytes.count <= writer.limit else {
                writer.limitReached = true
                return false
            }
        case LUA_TTABLE:
            return writeTable(at: lua_absindex(L, index), into: &writer, depth: depth)
        default:
            return false
        }
        return true
    }

    private func writeTable(at table: Int32, into writer: inout JSONWriter, depth: Int) -> Bool {
        let L = thread
        guard depth < Self.maxPayloadDepth, lua_checkstack(L, 4) != 0 else { return false }
        // One pass to classify the keys: string keys are kept (their bytes live as long as
        // the table holds them); integer keys are only counted and bounded.
        var keys: [UnsafeBufferPointer<UInt8>] = []
        var integerKeys = 0
        var largestInteger: Int64 = 0
        lua_pushnil(L)
        while lua_next(L, table) != 0 {
            switch lua_type(L, -2) {
            case LUA_TSTRING:
                var length = 0
                let pointer = lua_tolstring(L, -2, &length)!
                keys.append(UnsafeRawBufferPointer(start: pointer, count: length).bindMemory(to: UInt8.self))
            case LUA_TNUMBER where lua_isinteger(L, -2) != 0:
                integerKeys += 1
                largestInteger = max(largestInteger, luahier_tointeger(L, -2))
            default:
                luahier_pop(L, 2)
                return false
            }
            luahier_pop(L, 1)
        }
        if integerKeys > 0 {
            // Distinct integer keys, as many as the largest, none below 1: exactly 1...n.
            guard keys.isEmpty, largestInteger == Int64(integerKeys) else { return false }
            writer.bytes.append(UInt8(ascii: "["))
            for position in 1...integerKeys {
                if position > 1 { writer.bytes.append(UInt8(ascii: ",")) }
                lua_rawgeti(L, table, lua_Integer(position))
                defer { luahier_pop(L, 1) }
                guard writeJSON(at: -1, into: &writer, depth: depth + 1) else { return false }
            }
            writer.bytes.append(UInt8(ascii: "]"))
            return true
        }
        keys.sort { $0.lexicographicallyPrecedes($1) }
        writer.bytes.append(UInt8(ascii: "{"))
        for (position, key) in keys.enumerated() {
            if position > 0 { writer.bytes.append(UInt8(ascii: ",")) }
            guard writer.writeString(bytes: key, refusingInvalid: true) else { return false }
            writer.bytes.append(UInt8(ascii: ":"))
            key.withMemoryRebound(to: CChar.self) { _ = lua_pushlstring(L, $0.baseAddress, $0.count) }
            lua_rawget(L, table)
            defer { luahier_pop(L, 1) }
            guard writeJSON(at: -1, into: &writer, depth: depth + 1) else { return false }
        }
        writer.bytes.append(UInt8(ascii: "}"))
        return true
    }
}

extension LuaPayload {
    /// Writes the value. With a memory cap, its JSON may take at most what is left under the
    /// cap: a larger one is written as a `MemoryLimitExceeded` error naming its size instead
    /// (SPEC §7: the host's copies are held on the script's behalf).
    func writeJSON(into writer: inout JSONWriter) {
        writeJSON(into: &writer, collecting: true)
    }

    private func writeJSON(into writer: inout JSONWriter, collecting: Bool) {
        let mark = writer.bytes.count
        let outerLimit = writer.limit
        if let available = host.memoryAvailable { writer.limit = min(outerLimit, mark + available) }
        defer { writer.limit = outerLimit }
        if !host.isClosed {
            lua_rawgeti(host.thread, luahier_REGISTRYINDEX, lua_Integer(ref))
            defer { luahier_pop(host.thread, 1) }
            if host.writeJSON(at: -1, into: &writer) { return }
        }
        writer.bytes.removeSubrange(mark...)
        if writer.limitReached && collecting && !host.isClosed {
            // What the cap leaves may be held by garbage (a dispatch's tables, unreachable
            // once it ended): collect it, as Lua does before it fails an allocation, and try
            // once more.
            writer.limitReached = false
            writer.limit = outerLimit
            host.collectGarbage()
            writeJSON(into: &writer, collecting: false)
            return
        }
        if writer.limitReached {
            writer.limitReached = false
            writer.write(.map([
                "type": "MemoryLimitExceeded",
                "message": .string("the value's JSON is larger than the memory left under the cap (\(writer.limit - mark) bytes; set with --max-memory or Limits.memory)"),
            ]))
            return
        }
        writer.write(describedValue(bounded: true))
    }
}

/// Builds Lua values on the stack as the JSON parser reads them: JSON goes to Lua with no
/// `Value` in between. Every container leaves one table on the stack; a member's key sits
/// above its table until `endMember` stores the pair. A `null` member stores nil, which
/// leaves the field absent.
struct LuaSink: JSONSink {
    let L: OpaquePointer

    mutating func null() { lua_pushnil(L) }
    mutating func bool(_ flag: Bool) { lua_pushboolean(L, flag ? 1 : 0) }
    mutating func int(_ number: Int64) { lua_pushinteger(L, number) }
    mutating func double(_ number: Double) { lua_pushnumber(L, number) }
    mutating func string(_ utf8: UnsafeBufferPointer<UInt8>) { push(utf8) }
    mutating func beginObject() {
        lua_checkstack(L, 3)
        lua_createtable(L, 0, 4)
    }
    mutating func key(_ utf8: UnsafeBufferPointer<UInt8>) { push(utf8) }
    mutating func endMember() { lua_rawset(L, -3) }
    mutating func endObject() {}
    mutating func beginArray() {
        lua_checkstack(L, 3)
        lua_createtable(L, 4, 0)
    }
    mutating func endItem(_ position: Int) { lua_rawseti(L, -2, lua_Integer(position)) }
    mutating func endArray() {}

    private func push(_ utf8: UnsafeBufferPointer<UInt8>) {
        utf8.withMemoryRebound(to: CChar.self) { _ = lua_pushlstring(L, $0.baseAddress, $0.count) }
    }
}

extension LuaHost {
    /// [-0, +0, m] Parses the JSON value at the parser's place straight into a Lua table and
    /// makes it a message of `domain`. On a wrong shape, the reason and the value described.
    func parseMessage(from parser: inout JSONParser, as domain: Domain) throws(JSONError) -> Result<Message, ShapeFailure> {
        let top = lua_gettop(thread)
        defer { lua_settop(thread, top) }
        var sink = LuaSink(L: thread)
        try parser.parseValue(into: &sink)
        do {
            return .success(try message(at: -1, as: domain))
        } catch {
            return .failure(ShapeFailure(described: (try? value(at: -1, strict: false)) ?? .null))
        }
    }
}
