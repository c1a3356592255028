#if Server
import Hummingbird
@testable import LuaHierarchyServer
import Testing

/// The parts of a request's log line read without a server: its identity and its outcome's
/// status and kind.
@Suite("Request ids, traces and outcome fields")
struct RequestPartsTests {
    @Test func aTraceparentIsReadOnlyWhenValid() {
        let valid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        #expect(RequestIdentity.traceparent(valid)! == ("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"))
        for invalid in [
            "", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
        ] {
            #expect(RequestIdentity.traceparent(invalid) == nil, "\(invalid)")
        }
        // A later version may add fields after the four.
        #expect(RequestIdentity.traceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-more") != nil)
    }

    @Test func aRequestIdIsEchoedOnlyWhenSafe() {
        func identity(_ id: String) -> RequestIdentity {
            var fields = HTTPFields()
            fields[RequestIdentity.requestIDField] = id
            return RequestIdentity(fields)
        }
        #expect(identity("order-42").id == "order-42")
        for unsafe in ["", "two words", "quote\"d", String(repeating: "a", count: 129), "tab\tbed", "é"] {
            let made = identity(unsafe).id
            #expect(made != unsafe && made.count == 32 && made.allSatisfy { $0.isHexDigit }, "\(unsafe) → \(made)")
        }
        #expect(RequestIdentity(HTTPFields()).id != RequestIdentity(HTTPFields()).id)
    }

    @Test func anOutcomesStatusAndKindAreItsOwnNotAnIdsLookalike() {
        func read(_ text: String) -> OutcomeFields.Fields { OutcomeFields.read(Array(text.utf8)) }
        #expect(read(#"{"revision":{"number":1,"hash":"ab"},"id":3,"status":"handled","kind":"event","value":1}"#) == .init(status: "handled", kind: "event"))
        // An id (kept as the client wrote it) that looks like an outcome's members.
        let lookalike = #"{"id":{"status":"handled","kind":"event"},"status":"unhandled","kind":"error","value":{"status":"x"}}"#
        #expect(read(lookalike) == .init(status: "unhandled", kind: "error"))
        #expect(read(#"{"id":"a\"status\":\"handled","status":"invalid","error":{"type":"X"}}"#) == .init(status: "invalid", kind: nil))
        #expect(read(#"{"id":[1,{"kind":"event"}],"status":"detached","kind":"event"}"#) == .init(status: "detached", kind: "event"))
    }
}
#endif
