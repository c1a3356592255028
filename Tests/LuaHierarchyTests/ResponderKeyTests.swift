import Foundation
import Synchronization
import Testing
@testable import LuaHierarchy

/// Responder keys (`FILE#NODEPATH#N`, docs/replay.md): what a pool asked for them hands beside
/// each answer, the same whichever path wrote the outcome, and nothing in the outcome itself.
@Suite("Responder keys")
struct ResponderKeyTests {
    static let rules = """
        local org = hier.root:child("org")
        local team = org:child("team")
        org:receiveEvent("Note", function(e) return "notHandled" end)
        org:handleEvent("Alert", function(e) end)
        team:handleEvent("Ticket", function(e) end)
        """

    static func pool(keys: Bool, trace: TraceLevel = .off) throws -> RulesPool {
        var options = RulesPool.Options(rulesSource: rules, name: "rules.lua")
        options.responderKeys = keys
        options.stampsRevision = false
        options.hierarchy.traceLevel = trace
        return try RulesPool(options: options)
    }

    @Test func aKeyNamesFileNodeAndRegistrationOrder() {
        #expect(ResponderKey.make(location: "scripts/alerts.lua:63", node: "/org", index: 2) == "scripts/alerts.lua#/org#2")
        #expect(ResponderKey.make(location: "a:b.lua:7", node: "/", index: 1) == "a:b.lua#/#1")
        #expect(ResponderKey.make(location: "[swift]", node: "/x", index: 3) == "[swift]#/x#3")
    }

    @Test func anAnswerCarriesItsKeyOnlyWhenAskedAndTheOutcomeIsTheSame() async throws {
        let request = #"{"at": "/org/team", "event": "Alert"}"#
        let keyed = try Self.pool(keys: true)
        let plain = try Self.pool(keys: false)
        let withKey = try await keyed.dispatch(request)
        let without = try await plain.dispatch(request)
        #expect(withKey.responderKey == "rules.lua#/org#2")
        #expect(without.responderKey == nil)
        #expect(withKey.text == without.text)
        #expect(!withKey.text.contains("rules.lua#"))
        let unhandled = try await keyed.dispatch(#"{"at": "/org", "event": "Nobody"}"#)
        #expect(unhandled.responderKey == nil)
        let invalid = try await keyed.dispatch(#"{"at": "/nowhere", "event": "Alert"}"#)
        #expect(invalid.responderKey == nil)
        await keyed.shutDown()
        await plain.shutDown()
    }

    /// With a trace, the host writes the outcome rather than C: the key is the same.
    @Test func theHostsOwnPathGivesTheSameKey() async throws {
        let traced = try Self.pool(keys: true, trace: .path)
        let answer = try await traced.dispatch(#"{"at": "/org/team", "event": "Ticket"}"#)
        #expect(answer.text.contains(#""trace""#))
        #expect(answer.responderKey == "rules.lua#/org/team#1")
        await traced.shutDown()
    }

    @Test func aBatchHandsEachLinesKey() async throws {
        let pool = try Self.pool(keys: true)
        let keys = Mutex<[String?]>([])
        let body = #"""
            {"at": "/org/team", "event": "Ticket"}
            {"at": "/org", "event": "Nobody"}
            not json
            {"at": "/org/team", "event": "Alert"}
            """#
        _ = try await pool.dispatchBatch(Array(body.utf8)) { _, key in
            keys.withLock { $0.append(key) }
            return true
        }
        #expect(keys.withLock { $0 } == ["rules.lua#/org/team#1", nil, nil, "rules.lua#/org#2"])
        await pool.shutDown()
    }
}
