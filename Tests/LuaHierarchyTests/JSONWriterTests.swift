import Foundation
import Testing
@testable import LuaHierarchy

/// The C writer of Lua values (Sources/CLuaHost/jsonwrite.c) against `JSONWriter` writing Lua's
/// reading of the same value: byte for byte equal whenever the C writer writes, and it writes
/// every value that is plain data.
@Suite("JSON of Lua values, written in C")
struct JSONWriterTests {
    static var caseCount: Int { Int(ProcessInfo.processInfo.environment["FUZZ_CASES"] ?? "") ?? 3000 }

    /// Values of every kind a Lua table can hold as data; `plain` is false when a string is
    /// not UTF-8 (the careful path then writes it, each bad sequence as U+FFFD) or an array
    /// has a hole.
    static func randomValue(_ random: inout SplitMix64, depth: Int = 0, plain: inout Bool) -> Value {
        switch Int.random(in: 0..<(depth > 3 ? 9 : 11), using: &random) {
        case 0: return .bool(Bool.random(using: &random))
        case 1: return .int(Int64.random(in: Int64.min...Int64.max, using: &random))
        case 2: return .int(Int64.random(in: -1000...1000, using: &random))
        case 3:
            // Doubles of every magnitude, integral ones, tiny and huge exponents, -0.0.
            let pick = [Double.random(in: -1e12...1e12, using: &random), 0.1, -0.0, 3.0, 1e16, 1e-5, Double.leastNonzeroMagnitude,
                        1.7976931348623157e308, 123456789.125, Double(Int64.random(in: -99...99, using: &random)) / 8,
                        pow(10, Double(Int.random(in: -30...30, using: &random)))]
            return .double(pick[Int.random(in: 0..<pick.count, using: &random)])
        case 4:
            let bytes = (0..<Int.random(in: 0...12, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            if let text = String(validating: bytes, as: UTF8.self) { return .string(text) }
            plain = false
            return .bytes(bytes)
        case 5: return .string("quote \" back\\slash \n\r\t\u{8}\u{C}\u{1}\u{1F}\u{7F} nul\u{0} é 😀")
        case 6:
            // Every control character, and multi-byte UTF-8 of each length.
            return .string(String((0..<32).map { Character(UnicodeScalar(UInt8($0))) }) + "\u{80}\u{7FF}\u{800}\u{FFFF}\u{10000}\u{10FFFF}")
        case 7: return .string(String(repeating: "x", count: Int.random(in: 0...300, using: &random)))
        case 8: return .null
        case 9:
            let items = (0..<Int.random(in: 1...5, using: &random)).map { _ in randomValue(&random, depth: depth + 1, plain: &plain) }
            // A null item leaves a hole: Lua reads that table as a map of integer keys,
            // which the careful path writes.
            if items.contains(.null) { plain = false }
            return .array(items)
        default:
            var map: [String: Value] = [:]
            // Keys that sort by bytes: prefixes, upper before lower, multi-byte.
            let keys = ["a", "ab", "b", "B", "a\u{0}", "é", "type", "value", "z", "", "😀", "aa", "a b"]
            for _ in 0..<Int.random(in: 0...6, using: &random) {
                map[keys[Int.random(in: 0..<keys.count, using: &random)]] = randomValue(&random, depth: depth + 1, plain: &plain)
            }
            return .map(map)
        }
    }

    @Test func theCWriterWritesWhatJSONWriterWritesForLuasReading() throws {
        let f = try Fixture()
        var written = 0
        for seed in 0..<UInt64(Self.caseCount) {
            var random = SplitMix64(state: seed)
            var plain = true
            let value = Self.randomValue(&random, plain: &plain)
            let texts = try f.hierarchy.jsonTexts(of: value)
            if plain {
                #expect(texts.fast == texts.reading, "seed \(seed): \(value)")
            } else if let fast = texts.fast {
                #expect(fast == texts.reading, "seed \(seed): \(value)")
            }
            if texts.fast != nil { written += 1 }
            if plain && texts.fast != texts.reading { break }
        }
        #expect(written > Self.caseCount / 2)
        #expect(f.hierarchy.luaStackTop == 0)
    }

    /// Doubles the C writer formats itself (decimals of up to six places between 0.001 and
    /// 2^32) and those it leaves to Swift, around every bound: the same text as JSONWriter.
    @Test func doublesAreWrittenAsJSONWriterWritesThem() throws {
        let f = try Fixture()
        var random = SplitMix64(state: 41)
        var numbers: [Double] = [0.001, 0.000999, 0.0015, 0.1 + 0.2, 2.675, 1.0 / 3.0, 9.999999, 0.5, 3.0, 12.34, 1e-4,
                                 4294967295.0, 4294967295.5, 4294967295.999999, 4294967296.0, 4294967296.5, 65536.25,
                                 123456.789012, 0.0000001, 1e15, 1e16, Double.ulpOfOne, 1 + Double.ulpOfOne]
        let powers: [Double] = [1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8]
        for _ in 0..<4000 {
            let places = Int.random(in: 0..<powers.count, using: &random)
            let digits = Double(Int64.random(in: 0...(Bool.random(using: &random) ? 999 : 99_999_999_999), using: &random))
            numbers.append(digits / powers[places])
            numbers.append(Double.random(in: 0.001..<4294967296.0, using: &random))
            numbers.append(Double(bitPattern: UInt64.random(in: 0...UInt64.max, using: &random)))
        }
        for number in numbers + numbers.map({ -$0 }) {
            let texts = try f.hierarchy.jsonTexts(of: .array([.double(number)]))
            #expect(texts.fast == texts.reading, "\(number)")
            if texts.fast != texts.reading { break }
        }
        #expect(f.hierarchy.luaStackTop == 0)
    }

    /// Strings of every length to 40 with one byte to escape, or a multi-byte character, at each
    /// place (the word at a time, the last bytes at once, the byte at a time): the same text as
    /// JSONWriter.
    @Test func stringsOfEveryLengthWithAByteToEscapeAnywhere() throws {
        let f = try Fixture()
        for length in 0...40 {
            for place in -1..<length {
                for special in ["\"", "\\", "\n", "\u{1}", "é", "😀"] {
                    var text = String(repeating: "k", count: length)
                    if place >= 0 {
                        let index = text.index(text.startIndex, offsetBy: place)
                        text.replaceSubrange(index...index, with: special)
                    }
                    let texts = try f.hierarchy.jsonTexts(of: .map([text: .string(text)]))
                    #expect(texts.fast == texts.reading, "\(length) \(place) \(special)")
                    if texts.fast != texts.reading { return }
                }
            }
        }
    }

    /// Maps past the insertion sort's 16 keys take qsort: the same bytes as JSONWriter, keys
    /// that share long prefixes and differ in length included. (How long a huge map takes:
    /// DispatchCommandTests.anOutcomeWithAHugeMapIsWrittenPromptly.)
    @Test func largeMapsSortTheirKeysAsJSONWriterDoes() throws {
        let f = try Fixture()
        var random = SplitMix64(state: 18)
        for count in [17, 18, 31, 64, 300] {
            var map: [String: Value] = [:]
            while map.count < count {
                let key = String(repeating: "k", count: Int.random(in: 0...3, using: &random))
                    + String(Int.random(in: 0...9999, using: &random)) + (Bool.random(using: &random) ? "é" : "")
                map[key] = .int(Int64(map.count))
            }
            let texts = try f.hierarchy.jsonTexts(of: .map(map))
            #expect(texts.fast == texts.reading, "\(count) keys")
        }
        #expect(f.hierarchy.luaStackTop == 0)
    }

    /// Past the limit nothing is written and the result says so; at it, the value is whole.
    @Test func theLimitIsExact() throws {
        let f = try Fixture()
        let value = Value.map(["message": .string(String(repeating: "x", count: 100)), "n": .int(7)])
        let whole = try f.hierarchy.jsonTexts(of: value)
        let size = whole.reading.utf8.count
        #expect(try f.hierarchy.jsonTexts(of: value, limit: size).fast == whole.reading)
        let over = try f.hierarchy.jsonTexts(of: value, limit: size - 1)
        #expect(over.fast == nil)
        #expect(over.result == -1)
    }

    /// Not plain data: the C writer declines, and the outcome's careful path describes it.
    @Test func functionsMixedKeysAndCyclesAreForTheCarefulPath() throws {
        let f = try Fixture()
        let lines = try f.output("""
            local n = hier.root:child("n")
            n:receiveEvent(function(e)
              local t = {type = "E"}
              t.self = t
              return {type = "R", f = print, mixed = {1, 2, x = 3}, cycle = t}
            end)
            print(n:triggerEvent("E").value.type)
            """)
        #expect(lines == ["R"])
    }
}
