import CLua
import CLuaHost

/// The memory cap over everything held on the scripts' behalf (contract §7): the host's own
/// copies are counted in the counter the allocator keeps for the Lua heap (`guardState.used`),
/// against the same limit, and refused past it as the allocator refuses: the running budget
/// trips on memory (sticky), and the error is `MemoryLimitExceeded` naming the script's line.
extension LuaHost: MemoryMeter {
    /// The guard's running totals, never reset: work charged, bytes allocated
    /// (`Hierarchy.workDone`).
    var workDone: (units: Int, bytes: Int) {
        let state = guardState.pointee
        return (Int(state.work_total), Int(state.allocated_total))
    }

    var reference: MeterReference {
        if let reference = meterReference { return reference }
        let reference = MeterReference(self)
        meterReference = reference
        return reference
    }

    func charge(_ bytes: Int) -> Bool {
        guard bytes > 0, !isClosed else { return true }
        let state = guardState
        let limit = state.pointee.limit
        func fits() -> Bool {
            let used = state.pointee.used
            return limit == 0 || (used < limit && size_t(bytes) <= limit - used)
        }
        // As Lua does before it refuses: a full collection first, so garbage is not the cap.
        // (Finalizers are C and only queue releases, so no Swift runs inside it.)
        if !fits() { luahier_fullgc(mainThread) }
        guard fits() else {
            refuseMemory()
            return false
        }
        state.pointee.used += size_t(bytes)
        state.pointee.allocated_total += Int64(bytes)
        if state.pointee.used > state.pointee.peak { state.pointee.peak = state.pointee.used }
        return true
    }

    func chargeWork(_ units: Int) -> Bool {
        guard !isClosed else { return true }
        luahier_charge(thread, Int64(units))
        return !limitTripped
    }

    func release(_ bytes: Int) {
        guard bytes > 0, !isClosed else { return }
        let state = guardState
        assert(state.pointee.used >= size_t(bytes), "memory released that was not charged")
        state.pointee.used -= min(state.pointee.used, size_t(bytes))
    }

    /// Whether what the state holds fits under the cap, after a full collection if it seemed
    /// not to (true without a cap).
    func memoryUsedFitsTheCap() -> Bool {
        let state = guardState
        guard !isClosed, state.pointee.limit > 0, state.pointee.used > state.pointee.limit else { return true }
        luahier_fullgc(mainThread)
        return state.pointee.used <= state.pointee.limit
    }

    /// Bytes left under the cap (nil: no cap).
    var memoryAvailable: Int? {
        guard !isClosed, guardState.pointee.limit > 0 else { return nil }
        let state = guardState.pointee
        return state.used >= state.limit ? 0 : Int(state.limit - state.used)
    }

    var memoryLimit: Int? {
        guard !isClosed, guardState.pointee.limit > 0 else { return nil }
        return Int(guardState.pointee.limit)
    }

    /// A refused charge, as the allocator notes one: the place (the innermost Lua line, the
    /// first time in this protected call), and a trip of the running budget.
    private func refuseMemory() {
        let state = guardState
        if state.pointee.memory_refused == 0 && (state.pointee.active == 0 || state.pointee.budget.exceeded == 0) {
            var frame = lua_Debug()
            if luahier_findluaframe(thread, 0, &frame) != 0 { luahier_noteplace(state, &frame) }
        }
        state.pointee.memory_refused = 1
        if state.pointee.active != 0 { luahier_trip(state, Int32(LUAHIER_TRIPPED_MEMORY)) }
    }

    /// Charges `bytes` of copies that live while the innermost host function runs: given back
    /// when it returns (`runFunction`). Past the cap, the host function fails with the limit
    /// error. Only for host functions.
    func holdWhileCalled(_ bytes: Int) throws(RaisedMessage) {
        guard bytes > 0 else { return }
        guard charge(bytes) else { throw RaisedMessage(message: limitError()) }
        transientBytes += bytes
    }

    /// Charges a copy of the Lua string at `index` (a string) for as long as the host function
    /// runs, and its size as host work. Invalid UTF-8 may triple in decoding (U+FFFD).
    func holdCopy(ofStringAt index: Int32) throws(RaisedMessage) {
        let length = withBytes(at: index) { bytes in
            bytes.count * (bytes.contains { $0 >= 0x80 } ? 3 : 1)
        }
        charge(instructions: Int64(length / 64))
        try holdWhileCalled(MemoryCost.bytes(length))
    }
}
