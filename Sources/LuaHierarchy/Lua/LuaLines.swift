import CLua
import CLuaHost

/// `luahier dispatch`'s lines answered by C end to end (Sources/CLuaHost/lines.c), a run of
/// them at a time: each request read from JSON into Lua by the one JSON reader, its node's plan
/// kept by path, the engine's dispatch inside the line's own budget, the outcome line written
/// by the C writer and handed over. Nothing is built in Swift on the way. The first line C
/// leaves to the host ends the run: LineProcessor answers it its own way (and words every
/// refusal), then starts the next run. C answers a line only as that path would.
extension LuaEngine {
    /// How a run ended.
    enum RunStop {
        /// Every line was answered.
        case done
        /// The line before `next` changed the tree's chains (the rules did): the host looks at
        /// its settings before the next run.
        case changed
        /// Line `next` is the host's to answer; nothing was done with it.
        case host
        /// Line `next` was dispatched, and its outcome is the host's to write: it has errors
        /// presented meanwhile, a trace, or a value the C writer leaves to the careful one. The
        /// id as it came (nil: none).
        case dispatched(DispatchResult, id: Value?)
        /// An interrupt (SIGINT) cut line `next` short: it is not answered.
        case interrupted
        /// The run's `startBy` passed before line `next` began: it is not answered.
        case expired
    }

    /// The clock `startBy` reads (seconds, monotonic, a few ms of resolution).
    static var clock: Double { luahier_now() }

    /// What a run did.
    struct Run {
        /// Lines answered and handed over, by status (LUAHIER_STATUS_*: handled, unhandled,
        /// detached).
        var counts = [0, 0, 0]
        /// Where it stopped (an index into the lines given).
        var next = 0
        var stop = RunStop.done
    }

    /// A line of a run (of a batch: LineReader.swift): where its bytes are in the chunk, or
    /// only its length when it was too long to keep.
    struct RunLine {
        var number: Int
        var start: Int
        var count: Int
        var oversized: Bool
    }

    /// Answers `lines[from...]` of `chunk` (named `input`, a C string, in messages) until one
    /// needs the host, handing each outcome line to `deliver` as it is written. `presented`
    /// counts the errors the host was handed to present. No line begins at or after `startBy`
    /// (on `clock`; 0: no bound). Top level only (no entry under way).
    func answerRun(
        chunk: UnsafeRawBufferPointer, lines: [RunLine], from: Int, input: ContiguousArray<CChar>,
        presented: UnsafePointer<Int>, startBy: Double, deliver: (UnsafeRawBufferPointer) -> Bool
    ) -> Run {
        let L = host.thread
        let top = lua_gettop(L)
        lineBuffer.removeAll(keepingCapacity: true)
        for line in lines {
            lineBuffer.append(luahier_Line(number: line.number, start: line.start, count: line.count, oversized: line.oversized ? 1 : 0))
        }
        let budget = host.topLevelBudget(.dispatch)
        var run = luahier_LineRun()
        var ended = luahier_Result()
        run.chunk = chunk.baseAddress?.assumingMemoryBound(to: CChar.self)
        run.count = lines.count
        run.next = from
        run.depth_limit = Int32(JSON.defaultDepthLimit)
        run.instructions = budget.instructions
        run.seconds = budget.seconds
        run.scope = budget.scope
        run.start_by = startBy
        run.presented = presented
        typealias Deliver = (UnsafeRawBufferPointer) -> Bool
        let stop = withoutActuallyEscaping(deliver) { deliver in
            var handler: Deliver = deliver
            return withUnsafeMutablePointer(to: &handler) { handler in
                run.context = UnsafeMutableRawPointer(handler)
                run.deliver = { context, bytes, size in
                    let deliver = context!.assumingMemoryBound(to: Deliver.self).pointee
                    return deliver(UnsafeRawBufferPointer(start: bytes, count: size)) ? 1 : 0
                }
                return withUnsafeMutablePointer(to: &ended) { ended in
                    run.result = ended
                    return lineBuffer.withUnsafeBufferPointer { lines in
                        run.lines = lines.baseAddress
                        return input.withUnsafeBufferPointer { name in
                            run.input = name.baseAddress
                            return luahier_answerrun(L, state, &run)
                        }
                    }
                }
            }
        }
        defer { lua_settop(L, top) }
        if host.guardState.pointee.released_count > 0 { host.drainReleases() }
        var result = Run(counts: [run.counts.0, run.counts.1, run.counts.2], next: run.next)
        switch stop {
        case Int32(LUAHIER_RUN_DONE): result.stop = .done
        case Int32(LUAHIER_RUN_CHANGED): result.stop = .changed
        case Int32(LUAHIER_RUN_INTERRUPTED): result.stop = .interrupted
        case Int32(LUAHIER_RUN_EXPIRED): result.stop = .expired
        case Int32(LUAHIER_RUN_DISPATCHED):
            // Not `cond ? value : nil`: Value takes `nil` as a literal, so that reads as
            // `.some(.null)` ("id": null) instead of no id.
            var id: Value?
            if run.request.has_id != 0 { id = (try? host.value(at: top + 1, strict: false)) ?? .null }
            result.stop = .dispatched(dispatchResult(ended, planAt: top + 2), id: id)
        default: result.stop = .host
        }
        return result
    }

    static func status(_ status: Int32) -> Outcome.Status {
        status == LUAHIER_STATUS_HANDLED ? .handled : status == LUAHIER_STATUS_DETACHED ? .detached : .unhandled
    }
}
