#if Server
import Foundation
import Hummingbird
import Logging
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

    @Test func aMadeRequestIdIs32LowercaseHexDigitsOf128RandomBits() {
        let ids = (0..<200).map { _ in RequestIdentity.makeID() }
        for id in ids {
            #expect(id.utf8.count == 32 && id.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }, "\(id)")
        }
        #expect(Set(ids).count == ids.count)
        // Every digit position takes every value: no position is fixed (a padding zero, a
        // half written twice).
        for position in 0..<32 {
            let digits = Set(ids.map { Array($0.utf8)[position] })
            #expect(digits.count > 8, "position \(position): \(digits.count) values")
        }
    }

    /// The byte reading of a `Content-Type` agrees with Unicode's rules (which the server
    /// used for every request before, and still uses for text that is not ASCII).
    @Test func aBatchIsNamedByItsMediaTypeInAnyCaseAndSpacing() {
        func byUnicode(_ type: String) -> Bool {
            let name = type.lowercased().split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
            return RulesServer.batchTypes.contains(name)
        }
        let batches = [
            "application/x-ndjson", "application/jsonl", "application/x-jsonlines", "Application/X-NDJSON",
            "application/jsonl; charset=utf-8", "  application/x-ndjson\t;charset=utf-8", "\tAPPLICATION/JSONL ",
            "application/x-jsonlines;", "application/x-ndjson\u{00A0}", "\u{2003}application/jsonl",
        ]
        let others = [
            "", ";", "application/json", "application/json; x=application/jsonl", "application/jsonlines",
            "application/x-ndjsonx", "text/plain", "application/ jsonl", "application/jsonl2", "applicatıon/jsonl",
            "application/x-ndjson,application/json", "x application/jsonl",
        ]
        for type in batches {
            #expect(RulesServer.isBatchType(type), "\(type.debugDescription)")
            #expect(byUnicode(type), "\(type.debugDescription)")
        }
        for type in others {
            #expect(!RulesServer.isBatchType(type), "\(type.debugDescription)")
            #expect(!byUnicode(type), "\(type.debugDescription)")
        }
    }

    /// Hummingbird's own records keep the metadata it sets (a request's id) as it was set.
    @Test func theFrameworksLoggerKeepsItsMetadataForItsRecords() {
        var logger = FrameworkLogHandler.logger(label: "luahier", level: .warning)
        #expect(logger.logLevel == .warning)
        logger[metadataKey: "hb.request.id"] = "7"
        #expect(logger[metadataKey: "hb.request.id"] == "7")
        logger[metadataKey: "hb.request.id"] = nil
        #expect(logger[metadataKey: "hb.request.id"] == nil)
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
