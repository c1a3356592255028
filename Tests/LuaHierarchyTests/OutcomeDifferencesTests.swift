import LuaHierarchy
import Testing

/// The one comparison of two outcomes of a request (replay's, and a shadow revision's).
@Suite("Outcome differences")
struct OutcomeDifferencesTests {
    static func outcome(_ json: String) throws -> Value { try JSON.parse(json) }

    @Test func eachComparedFieldIsNamedInOrder() throws {
        let old = try Self.outcome(#"{"id":1,"line":3,"status":"handled","kind":"event","value":{"type":"Page","to":"lee"},"by":"/org","responder":"r.lua:5"}"#)
        #expect(OutcomeDifferences.fields(old, old, oldKey: nil, newKey: nil).isEmpty)
        let new = try Self.outcome(#"{"id":2,"line":9,"status":"unhandled","kind":"event","value":{"type":"Ticket","to":"kim"},"by":"/","responder":"r.lua:9"}"#)
        #expect(OutcomeDifferences.fields(old, new, oldKey: nil, newKey: nil) == ["status", "type", "by", "responder", "value"])
    }

    /// Lines nested past the reader's depth cannot be compared: they differ in every field,
    /// never count as the same (both were read as nothing, and a shadow's change was hidden).
    @Test func linesThatCannotBeReadDifferInEveryField() {
        func deep(_ verdict: String) -> [UInt8] {
            Array((#"{"status":"handled","value":{"verdict":"\#(verdict)","audit":"# + String(repeating: "[", count: 201)
                + String(repeating: "]", count: 201) + "}}").utf8)
        }
        let shallow = Array(#"{"status":"handled","value":{"verdict":"allow"}}"#.utf8)
        for (old, new) in [(deep("allow"), deep("deny")), (deep("allow"), deep("allow")), (shallow, deep("allow"))] {
            let fields = old.withUnsafeBytes { old in new.withUnsafeBytes { OutcomeDifferences.fields(lines: old, $0, oldKey: nil, newKey: nil) } }
            #expect(fields == OutcomeDifferences.compared)
        }
        let same = shallow.withUnsafeBytes { OutcomeDifferences.fields(lines: $0, $0, oldKey: nil, newKey: nil) }
        #expect(same.isEmpty)
    }

    @Test func respondersAreComparedByKeyWhenBothHaveOne() throws {
        let old = try Self.outcome(#"{"status":"handled","by":"/org","responder":"r.lua:5"}"#)
        let moved = try Self.outcome(#"{"status":"handled","by":"/org","responder":"r.lua:8"}"#)
        #expect(OutcomeDifferences.fields(old, moved, oldKey: "r.lua#/org#2", newKey: "r.lua#/org#2").isEmpty)
        #expect(OutcomeDifferences.fields(old, moved, oldKey: nil, newKey: "r.lua#/org#2") == ["responder"])
        #expect(OutcomeDifferences.fields(old, old, oldKey: "r.lua#/org#2", newKey: "r.lua#/org#3") == ["responder"])
    }

    @Test func aRuleLineInAnErrorIsNotADifferenceButAnInputLineIs() throws {
        let old = try Self.outcome(#"{"status":"unhandled","value":{"type":"LuaError","where":"r.lua:12","traceback":"a"}}"#)
        let moved = try Self.outcome(#"{"status":"unhandled","value":{"type":"LuaError","where":"r.lua:15","traceback":"b"}}"#)
        #expect(OutcomeDifferences.fields(old, moved, oldKey: nil, newKey: nil).isEmpty)
        let input = try Self.outcome(#"{"status":"invalid","error":{"type":"InvalidJSON","where":"request:3"}}"#)
        let other = try Self.outcome(#"{"status":"invalid","error":{"type":"InvalidJSON","where":"request:4"}}"#)
        #expect(OutcomeDifferences.fields(input, other, oldKey: nil, newKey: nil).isEmpty)   // `error` is not a compared field
        let typed = try Self.outcome(#"{"status":"invalid","error":{"type":"NoSuchNode"}}"#)
        #expect(OutcomeDifferences.fields(input, typed, oldKey: nil, newKey: nil) == ["type"])
    }
}
