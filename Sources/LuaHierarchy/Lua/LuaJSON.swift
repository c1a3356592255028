import CLua
import CLuaHost

/// Lua values written straight to JSON, without building a `Value` first: the outcome line
/// of `luahier dispatch` is written from the Lua table the responders left, by C in one pass
/// (Sources/CLuaHost/jsonwrite.c).
extension LuaHost {
    /// How large the C writer's buffer may stay between values: one that grew past it for a
    /// large value is let go of afterwards.
    static let jsonOutKept = 1 << 20

    /// The C writer's output buffer, made on first use and kept for the host's life.
    var jsonOut: UnsafeMutablePointer<luahier_JSONOut> {
        if let out = jsonOutput { return out }
        let out = UnsafeMutablePointer<luahier_JSONOut>.allocate(capacity: 1)
        out.initialize(to: luahier_JSONOut())
        out.pointee.depth_limit = Int32(Self.maxPayloadDepth)
        // Writing is charged to the running budget, and stops once it tripped.
        out.pointee.guard = UnsafeMutableRawPointer(guardState)
        out.pointee.writedouble = { out, number in
            var text = JSONWriter.text(of: number)
            return text.withUTF8 { luahier_jsonappend(out, $0.baseAddress, $0.count) }
        }
        jsonOutput = out
        return out
    }

    /// [-0, +0, m] Appends the value at `index` as JSON if it is plain data, within `limit`
    /// bytes (LUAHIER_JSON_*): the same text `JSONWriter` writes for `value(at:strict:)`'s
    /// reading of it (keys 1...n make an array, string keys an object in byte order, the empty
    /// table `{}`). Anything else (functions, mixed keys, bytes that are not UTF-8, deep
    /// nesting) is `LUAHIER_JSON_CAREFUL`, with nothing appended.
    func writeJSON(at index: Int32, into writer: inout JSONWriter, limit: Int) -> Int32 {
        let out = jsonOut
        out.pointee.limit = max(0, limit)
        let result = luahier_writejson(thread, index, out)
        if result == Int32(LUAHIER_JSON_WRITTEN) {
            // Room for exactly the copy: growing by doubling would hold the old buffer and a
            // new one twice its size beside this one while it copies.
            writer.bytes.reserveCapacity(writer.bytes.count + out.pointee.size)
            writer.bytes.append(contentsOf: UnsafeRawBufferPointer(start: out.pointee.bytes, count: out.pointee.size))
        }
        luahier_jsonshrink(out, Self.jsonOutKept)
        return result
    }
}

extension LuaHost {
    func jsonTexts(of value: Value, limit: Int) throws -> (fast: String?, result: Int32, reading: String) {
        let top = lua_gettop(thread)
        defer { lua_settop(thread, top) }
        try push(value)
        var fast = JSONWriter()
        let result = writeJSON(at: -1, into: &fast, limit: limit)
        var reading = JSONWriter()
        reading.write(try self.value(at: -1, strict: false))
        return (result == Int32(LUAHIER_JSON_WRITTEN) ? String(decoding: fast.bytes, as: UTF8.self) : nil, result,
                String(decoding: reading.bytes, as: UTF8.self))
    }
}

extension LuaPayload {
    /// Writes the value. With a memory cap, its JSON may take at most what is left under the
    /// cap: a larger one is written as a `MemoryLimitExceeded` error naming its size instead
    /// (contract §7: the host's copies are held on the script's behalf).
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
            let limit = writer.limit == Int.max ? Int.max : writer.limit - mark
            switch host.writeJSON(at: -1, into: &writer, limit: limit) {
            case Int32(LUAHIER_JSON_WRITTEN): return
            case Int32(LUAHIER_JSON_LIMIT):
                if host.limitTripped {
                    // The budget ran out while it was written: the limit's error stands for it.
                    host.limitError().writeJSON(into: &writer)
                    return
                }
                writer.limitReached = true
            default: break
            }
        }
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
        // Not plain data (a function, mixed keys), or too many pairs for the C writer's stack:
        // the whole value as plain data describes it, within what the cap leaves (a value
        // that does not fit stands as a whole for `<too large>`, the same every run).
        writer.write(describedValue(bounded: false))
    }
}

extension LuaHost {
    /// What the JSON text `bytes` reads as in Lua (a payload's reading: nulls as nil), read
    /// back as a `Value`: the C reader's Lua side, for tests that hold it to the Swift side.
    func readJSONThroughLua(_ bytes: UnsafeRawBufferPointer, depthLimit: Int = JSON.defaultDepthLimit) throws -> Value {
        let top = lua_gettop(thread)
        defer { lua_settop(thread, top) }
        let parser = JSONParser(bytes.bindMemory(to: UInt8.self), depthLimit: depthLimit, nulls: .asLuaNil)
        luahier_jsonskipspace(parser.reader)
        guard luahier_pushjson(thread, parser.reader, 1, nil) != 0 else { throw parser.error }
        try parser.expectEnd()
        return try value(at: -1, strict: false)
    }

    /// What the JSON text `bytes` reads as in Lua through a tape (luahier_tape.h), as request
    /// lines are read: for tests that hold it to `readJSONThroughLua`. The tape is given room
    /// for any text (17 bytes a byte and 256), with no line budget.
    func readJSONThroughTape(_ bytes: UnsafeRawBufferPointer, depthLimit: Int = JSON.defaultDepthLimit) throws -> Value {
        let top = lua_gettop(thread)
        defer { lua_settop(thread, top) }
        var tape = luahier_Tape()
        guard luahier_tapemake(&tape, 17 * bytes.count + 256) != 0 else { throw JSONError("out of memory", column: 0) }
        defer { luahier_tapefree(&tape) }
        let text = bytes.baseAddress?.assumingMemoryBound(to: CChar.self)
        let start = luahier_tapevalue(&tape, text, bytes.count, Int32(depthLimit))
        guard start >= 0 else { throw JSONError("out of memory", column: 0) }
        var message: UnsafePointer<CChar>?
        var length = 0
        var column = 0
        guard luahier_pushtapevalue(thread, tape.words + start, text, &message, &length, &column) != 0 else {
            let words = UnsafeRawBufferPointer(start: message, count: length)
            throw JSONError(String(decoding: words, as: UTF8.self), column: column)
        }
        return try value(at: -1, strict: false)
    }
}
