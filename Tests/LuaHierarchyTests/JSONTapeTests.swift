import Foundation
import Testing
@testable import LuaHierarchy

/// The tape a request line is read into ahead (Sources/CLuaHost/tape.c) against the direct
/// reading it replaced (`luahier_pushjson`): on the JSON reader fuzzer's texts and every edit
/// of them, the same values in Lua and the same refusals (message and column); and a tape
/// never past its stated bound (docs/limits.md).
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
            // As a request line's payload, and as the line itself: within the bound.
            let line = Array(#"{"id":7,"at":"/a","event":"#.utf8) + bytes + Array("}".utf8)
            for text in [line, bytes] {
                #expect(LineTapes.size(ofLine: text) <= LineTapes.bound(ofLength: text.count), "case \(index)")
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

    /// The shapes that cost a tape the most for their length: each stays within the bound.
    @Test func aTapeStaysWithinItsBound() {
        let long = 200_000
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
            let size = LineTapes.size(ofLine: bytes)
            #expect(size <= LineTapes.bound(ofLength: bytes.count), "\(line.prefix(40)): \(size) bytes for \(bytes.count)")
        }
    }
}
