import Foundation
import Testing
@testable import LuaHierarchy

@Suite("JSON <-> Value")
struct JSONTests {
    @Test func numbersKeepTheirKind() throws {
        #expect(try JSON.parse("3") == .int(3))
        #expect(try JSON.parse("-0") == .int(0))
        #expect(try JSON.parse("3.0") == .double(3.0))
        #expect(try JSON.parse("1e2") == .double(100))
        #expect(try JSON.parse("-9223372036854775808") == .int(.min))
        #expect(try JSON.parse("9223372036854775807") == .int(.max))
        #expect(try JSON.parse("0.1") == .double(0.1))
        #expect(try JSON.parse("5e-324") == .double(.leastNonzeroMagnitude))
        #expect(JSON.encode(.double(3)) == "3.0")
        #expect(JSON.encode(.int(3)) == "3")
        #expect(JSON.encode(.double(1e300)) == "1e+300")
        #expect(JSON.encode(.double(.nan)) == "null")
    }

    @Test(arguments: [
        ("9223372036854775808", "out of range"),
        ("-9223372036854775809", "out of range"),
        ("1e400", "out of range"),
        ("-1e309", "out of range"),
        ("01", "leading zero"),
        ("1.", "'.' must be followed by digits"),
        ("-", "'-' must be followed by digits"),
        ("1e", "exponent"),
        (".5", "expected a value"),
        ("[1,]", "expected a value"),
        ("{\"a\" 1}", "expected ':'"),
        ("{\"a\":1,}", "expected a string key"),
        ("{\"a\":1 \"b\":2}", "expected ',' or '}'"),
        ("[1 2]", "expected ',' or ']'"),
        ("\"abc", "unterminated string"),
        ("\"a\tb\"", "control character 0x09"),
        ("\"\\x\"", "invalid escape \\'x'"),
        ("\"\\ud800\"", "lone surrogate"),
        ("\"\\udc00x\"", "lone surrogate"),
        ("\"\\u12\"", "four hex digits"),
        ("tru", "expected a value"),
        ("{} x", "after the value"),
        ("", "unexpected end of input"),
    ])
    func refusesBadText(_ text: String, _ expected: String) {
        do {
            _ = try JSON.parse(text)
            Issue.record("\(text): parsed, expected an error")
        } catch {
            #expect(error.message.contains(expected), "\(text): \(error)")
        }
    }

    @Test func errorsNameTheColumn() {
        #expect(throws: JSONError("expected ',' or '}' in an object, found ']'", column: 9)) {
            try JSON.parse(#"{"a": 1 ]"#)
        }
    }

    @Test func invalidUTF8IsRefusedAtItsByte() {
        let bytes: [UInt8] = Array("\"ab".utf8) + [0xC3, 0x28] + Array("\"".utf8)
        #expect(throws: JSONError("invalid UTF-8 in a string", column: 4)) {
            try bytes.withUnsafeBytes { try JSON.parse($0) }
        }
        let escaped: [UInt8] = Array("\"\\n".utf8) + [0xFF] + Array("\"".utf8)
        #expect(throws: JSONError.self) { try escaped.withUnsafeBytes { try JSON.parse($0) } }
    }

    @Test func nestingIsBounded() throws {
        let deep = String(repeating: "[", count: 201) + String(repeating: "]", count: 201)
        #expect(throws: JSONError.self) { try JSON.parse(deep) }
        let fine = String(repeating: "[", count: 200) + String(repeating: "]", count: 200)
        _ = try JSON.parse(fine)
        let objects = String(repeating: "{\"a\":", count: 250) + "1" + String(repeating: "}", count: 250)
        do {
            _ = try JSON.parse(objects)
            Issue.record("no error")
        } catch {
            #expect(error.message == "nesting deeper than 200")
        }
    }

    @Test func stringsKeepEveryValidCharacter() throws {
        #expect(try JSON.parse(#""a\u0000b""#) == .string("a\u{0}b"))
        #expect(try JSON.parse(#""\ud83d\ude00 é ü \u00e9""#) == .string("😀 é ü é"))
        #expect(try JSON.parse(#""\"\\\/\b\f\n\r\t""#) == .string("\"\\/\u{8}\u{c}\n\r\t"))
        let text = "a\u{0}\"\\\n\u{1F}😀 é\u{7F}"
        #expect(JSON.encode(.string(text)) == #""a\u0000\"\\\n\u001f😀 é\#u{7F}""#)
        #expect(try JSON.parse(JSON.encode(.string(text))) == .string(text))
        // Bytes that are not UTF-8 cannot be JSON: each bad sequence becomes U+FFFD.
        #expect(JSON.encode(.bytes([0x61, 0xFF, 0x62])) == "\"a\u{FFFD}b\"")
    }

    @Test func objectsAreOrderFreeAndWrittenSorted() throws {
        let one = try JSON.parse(#"{"b": 1, "a": [true, null, 2.5], "c": {"y": "z"}}"#)
        let two = try JSON.parse(#"{"c": {"y": "z"}, "a": [true, null, 2.5], "b": 1}"#)
        #expect(one == two)
        #expect(JSON.encode(one) == #"{"a":[true,null,2.5],"b":1,"c":{"y":"z"}}"#)
        #expect(try JSON.parse(#"{"a": 1, "a": 2}"#) == ["a": 2])
        #expect(try JSON.parse(" \t\r\n{ } \n") == .map([:]))
        #expect(try JSON.parse("[]") == .array([]))
    }

    /// Random values survive encode -> parse unchanged.
    @Test func roundTripsRandomValues() throws {
        var generator = SystemRandomNumberGenerator()
        func random(_ depth: Int) -> Value {
            switch Int.random(in: 0..<(depth > 3 ? 6 : 8), using: &generator) {
            case 0: return .null
            case 1: return .bool(Bool.random())
            case 2: return .int(Int64.random(in: .min ... .max))
            case 3: return .double(Double.random(in: -1e300...1e300))
            case 4: return .string(String((0..<Int.random(in: 0..<8)).map { _ in
                Character(Unicode.Scalar([0, 0x22, 0x5C, 0x0A, 0x41, 0xE9, 0x1F600, 0x7F].randomElement()!)!)
            }))
            case 5: return .double(Double(Int.random(in: -100...100)))
            case 6: return .array((0..<Int.random(in: 0..<4)).map { _ in random(depth + 1) })
            default:
                return .map(Dictionary(uniqueKeysWithValues: (0..<Int.random(in: 0..<4)).map { ("k\($0)\u{0}é", random(depth + 1)) }))
            }
        }
        for _ in 0..<2000 {
            let value = random(0)
            #expect(try JSON.parse(JSON.encode(value)) == value, "\(value)")
        }
    }
}
