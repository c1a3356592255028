import Foundation
import Testing
@testable import LuaHierarchy

/// The tape a request line is read into ahead (Sources/CLuaHost/tape.c) against the direct
/// reading (`luahier_pushjson`): on the JSON reader fuzzer's texts and every edit of them, the
/// same values in Lua and the same refusals (message and column); a line's tape never past
/// the line budget, a tape's memory fixed (docs/limits.md); and a line answered alike whether
/// it was taped or read straight.
@Suite("JSON read through a tape")
struct JSONTapeTests {
    enum Reading: Equatable {
        case value(Value)
        case refused(JSONError)
        case failed(String)
    }

    static func reading(_ body: () throws -> Value) -> Reading {
        do { return .value(try body()) } catch let error as JSONError { return .refused(error) } catch {
            return .failed("\(error)")
        }
    }

    static func bothReadings(_ bytes: [UInt8], in hierarchy: Hierarchy) -> (tape: Reading, direct: Reading) {
        bytes.withUnsafeBytes { text in
            (reading { try hierarchy.readJSONThroughTape(text) }, reading { try hierarchy.readJSONThroughLua(text) })
        }
    }

    @Test func readsEveryTextAsTheDirectReaderDoes() throws {
        var random = SplitMix64(state: JSONReaderFuzzTests.seed ^ 0x7A9E)
        let hierarchy = try Hierarchy()
        var accepted = 0, refused = 0
        for index in 0..<JSONReaderFuzzTests.cases {
            var bytes = Array(JSONReaderFuzzTests.generate(&random).utf8)
            for _ in 0..<Int.random(in: 0...3, using: &random) { JSONReaderFuzzTests.mutate(&bytes, &random) }
            let (tape, direct) = Self.bothReadings(bytes, in: hierarchy)
            #expect(tape == direct, "case \(index): \(String(decoding: bytes, as: UTF8.self).debugDescription): \(tape) vs \(direct)")
            if case .value = direct { accepted += 1 } else { refused += 1 }
            // As a request line's payload, and as the line itself: within the budget, or not taped.
            let line = Array(#"{"id":7,"at":"/a","event":"#.utf8) + bytes + Array("}".utf8)
            for text in [line, bytes] {
                let taping = LineTapes.taping(text)
                #expect((taping.bytes ?? 0) <= LineTapes.lineBudget && taping.largestLine <= LineTapes.lineBudget, "case \(index)")
            }
        }
        // The generator reaches both sides (nulls in arrays, which Lua refuses, make refusals the more).
        #expect(accepted > JSONReaderFuzzTests.cases / 10 && refused > JSONReaderFuzzTests.cases / 4, "accepted \(accepted), refused \(refused)")
    }

    @Test func deepTextsAreReadAndRefusedAlike() throws {
        let hierarchy = try Hierarchy()
        for depth in [1, 2, 199, 200, 201, 1023, 1024, 1025, 1500] {
            for open in ["[", "{\"a\":"] {
                let text = String(repeating: open, count: depth) + "1" + String(repeating: open == "[" ? "]" : "}", count: depth)
                let (tape, direct) = Self.bothReadings(Array(text.utf8), in: hierarchy)
                #expect(tape == direct, "\(open) x \(depth): \(tape) vs \(direct)")
            }
        }
    }

    @Test func numbersStringsAndRepeatedKeysReadAlike() throws {
        let hierarchy = try Hierarchy()
        let texts = [
            "-0", "0", "-0.0", "9223372036854775807", "-9223372036854775808", "9223372036854775808", "1e400",
            "5e-324", "0.1", "123456789012345678901234567890.5", "[1.5, 2, -3e2, 4E-1]",
            #"{"a": 1, "a": 2}"#, #"{"a": 1, "a": null}"#, #"{"a": [1, {"b": "x", "b": "y"}], "c": {}}"#,
            #""\u00e9\ud83d\ude00\n\t\"\\\/\u0000""#, #"{"k\u00e9y": "v\u0000"}"#, #""\ud800""#, #"[1, null]"#,
            #"{"a": "#, "[", "", "   ", "{}", "[]", #"{"a":1} x"#, "\u{FEFF}1", "tru", "nul",
        ]
        for text in texts {
            let (tape, direct) = Self.bothReadings(Array(text.utf8), in: hierarchy)
            #expect(tape == direct, "\(text.debugDescription): \(tape) vs \(direct)")
        }
    }

    /// The shapes that cost a tape the most for their length, around the budget and far past
    /// it: each line is taped within the budget or not at all, and the tape's memory is what it
    /// was made with (it never grows).
    @Test func aLineIsTapedOnlyWithinTheBudget() {
        for long in [1_000, 8_000, 30_000, 64_000, 70_000, 200_000] {
            let lines: [String] = [
                #"{"at":"/a","event":["# + Array(repeating: "1", count: long / 2).joined(separator: ",") + "]}",
                #"{"at":"/a","event":"# + String(repeating: "[", count: 1000) + String(repeating: "]", count: 1000) + "}",
                #"{"at":"/a","event":["# + Array(repeating: "[]", count: long / 3).joined(separator: ",") + "]}",
                #"{"at":"/a","event":{"# + Array(repeating: #""":1"#, count: long / 5).joined(separator: ",") + "}}",
                "{" + Array(repeating: #""":1"#, count: long / 5).joined(separator: ",") + "}",
                "{" + Array(repeating: #""x":{}"#, count: long / 7).joined(separator: ",") + "}",
                #"{"at":"/a","event":["# + Array(repeating: #""\n""#, count: long / 5).joined(separator: ",") + "]}",
                #"{"at":"/a","event":{"# + String(repeating: "k", count: long) + #"" 1}}"#,
                #"{"at":"/a","event":"# + String(repeating: "9", count: long) + "}",
                "1", "", "{}", "{\"a\"",
            ]
            for line in lines {
                let bytes = Array(line.utf8)
                let taping = LineTapes.taping(bytes)
                #expect(taping.capacity == TapeSlots.defaultBytesEach, "\(line.prefix(40))")
                #expect(taping.largestLine <= LineTapes.lineBudget, "\(line.prefix(40))")
                if let size = taping.bytes { #expect(size <= LineTapes.lineBudget && bytes.count <= LineTapes.lineBudget) }
                if bytes.count > LineTapes.lineBudget { #expect(taping.bytes == nil, "\(line.prefix(40))") }
            }
        }
    }

    /// A slot's room bounds a batch's tapes too: the lines past it are left untaped.
    @Test func aFullSlotLeavesTheRestUntaped() {
        let line = Array(#"{"at":"/a","event":{"type":"Alert","n":[1,2,3,4,5,6,7,8]}}"#.utf8)
        let chunk = Array((0..<200).map { _ in line + [10] }.joined())
        var lines = (0..<200).map { LuaEngine.RunLine(number: $0 + 1, start: $0 * (line.count + 1), count: line.count, oversized: false) }
        let slots = TapeSlots(count: 1, bytesEach: 4096)
        let tapes = LineTapes(chunk: chunk, lines: &lines, slots: slots)
        let taped = lines.filter { $0.tape >= 0 }.count
        #expect(taped > 0 && taped < 200)
        #expect(lines.prefix(taped).allSatisfy { $0.tape >= 0 } && lines.dropFirst(taped).allSatisfy { $0.tape == -1 })
        withExtendedLifetime(tapes) {}
    }

    /// The slots are made at most `count` times, of `bytesEach` bytes; a batch that finds none
    /// free is not taped; a slot given back is used again, not made anew.
    @Test func theSlotsAreAFixedSet() {
        let slots = TapeSlots(count: 2, bytesEach: 1 << 16)
        let line = Array(#"{"at":"/a","event":{"type":"Alert"}}"#.utf8)
        func batch() -> (LineTapes, [LuaEngine.RunLine]) {
            var lines = [LuaEngine.RunLine(number: 1, start: 0, count: line.count, oversized: false)]
            return (LineTapes(chunk: line, lines: &lines, slots: slots), lines)
        }
        var first: (LineTapes, [LuaEngine.RunLine])? = batch()
        let second = batch()
        let third = batch()
        #expect(first!.1[0].tape >= 0 && second.1[0].tape >= 0)
        #expect(third.1[0].tape == -1 && third.0.words == nil)
        #expect(slots.untaped == 1 && slots.bytesMade == 2 << 16)
        first = nil
        let fourth = batch()
        #expect(fourth.1[0].tape >= 0 && slots.bytesMade == 2 << 16)
        withExtendedLifetime((first, second, third, fourth)) {}
    }

    /// Lines whose tape takes one word less than the budget, the budget, and one word more
    /// (tapes are counted in 8-byte words): the last is left to the direct reading. Each,
    /// answered as a request, valid and refused, gives the same bytes either way.
    @Test func linesAtTheBudgetAnswerAlikeTapedOrNot() throws {
        let budget = LineTapes.lineBudget
        // An array of small integers costs 2 words an item, `true` 1: the tape is stepped to
        // the budget one word at a time.
        func line(_ integers: Int, _ trues: Int, tail: String = "}") -> [UInt8] {
            let items = Array(repeating: "1", count: integers) + Array(repeating: "true", count: trues)
            return Array((#"{"id":3,"at":"/a","event":{"type":"Alert","n":["# + items.joined(separator: ",") + "]}" + tail).utf8)
        }
        var integers = budget / 16 - 40
        while (LineTapes.taping(line(integers + 1, 0)).bytes ?? .max) <= budget { integers += 1 }
        integers -= 1
        var trues = 0
        while let size = LineTapes.taping(line(integers, trues + 1)).bytes, size <= budget { trues += 1 }
        #expect(LineTapes.taping(line(integers, trues)).bytes == budget)
        #expect(LineTapes.taping(line(integers, trues - 1)).bytes == budget - 8)
        #expect(LineTapes.taping(line(integers, trues + 1)).bytes == nil)
        #expect(line(integers, trues + 1).count <= budget, "the line itself is within the budget: its tape is what passes it")

        let fixture = try Fixture("""
            hier.root:child("a"):receiveEvent("Alert", function(e) e.count = #e.n; return "handled" end)
            """)
        var texts: [[UInt8]] = []
        for extra in [trues - 1, trues, trues + 1] {
            texts.append(line(integers, extra))
            texts.append(line(integers, extra, tail: #","x":1}"#))     // an unknown member
            texts.append(line(integers, extra, tail: "} x"))           // not JSON after the value
            texts.append(line(integers, extra, tail: ""))               // cut short
        }
        for text in texts {
            let taped = try Self.answer(text, in: fixture.hierarchy, taped: true)
            let direct = try Self.answer(text, in: fixture.hierarchy, taped: false)
            #expect(taped.bytes == direct.bytes, "\(String(decoding: taped.bytes.prefix(200), as: UTF8.self))")
            #expect(taped.wasTaped == ((LineTapes.taping(text).bytes ?? .max) <= budget))
            #expect(!direct.wasTaped)
        }
    }

    /// `text` answered as line 1 of `luahier dispatch` (through a tape when `taped`, else read
    /// straight), and whether it was taped.
    static func answer(_ text: [UInt8], in hierarchy: Hierarchy, taped: Bool) throws -> (bytes: [UInt8], wasTaped: Bool) {
        let processor = LineProcessor(hierarchy: hierarchy, inputName: "tape.jsonl", maxLineBytes: 1 << 20)
        var lines = [LuaEngine.RunLine(number: 1, start: 0, count: text.count, oversized: false)]
        let tapes = taped ? LineTapes(chunk: text, lines: &lines, slots: TapeSlots()) : nil
        var output = JSONWriter()
        var delivered: [UInt8] = []
        text.withUnsafeBytes { chunk in
            var next = 0
            while next < lines.count {
                let run = processor.answerRun(
                    chunk, lines: lines, from: next, into: &output, held: processor.outputCharge(), tape: tapes?.words
                ) { answer in
                    delivered.append(contentsOf: answer)
                    return true
                }
                next = run.next
                delivered += output.bytes
                output.bytes.removeAll()
            }
        }
        return (delivered, lines[0].tape >= 0)
    }
}
