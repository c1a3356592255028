import Testing
@testable import LuaHierarchy

/// What a hierarchy printed and presented, kept apart from the hierarchy so its closures
/// do not retain it.
final class Recorder {
    var printed: [String] = []
    var presented: [PresentedError] = []
}

/// A hierarchy with its output recorded. `lua` runs a chunk named `test.lua` and checks that
/// the Lua stack is back to 0 afterwards, as every call into the host must leave it; the
/// fixture checks again when the test lets go of it (after Swift-side triggers too).
final class Fixture {
    let hierarchy: Hierarchy
    let recorder = Recorder()

    init(_ source: String? = nil, options: Hierarchy.Options = .init(), sourceLocation: SourceLocation = #_sourceLocation) throws {
        hierarchy = try Hierarchy(options: options)
        let recorder = self.recorder
        hierarchy.output = { recorder.printed.append($0) }
        hierarchy.presenter = { recorder.presented.append($0) }
        // The sandbox refuses collectgarbage(); tests that need a full collection call this.
        hierarchy.register(function: "fullgc") { [unowned hierarchy] _ in
            hierarchy.collectGarbage()
            return .null
        }
        if let source { try lua(source, sourceLocation: sourceLocation) }
    }

    deinit {
        #expect(hierarchy.luaStackTop == 0, "Lua stack not balanced at the end of the test")
    }

    var printed: [String] { recorder.printed }
    var presented: [PresentedError] { recorder.presented }

    func lua(_ source: String, sourceLocation: SourceLocation = #_sourceLocation) throws(ScriptError) {
        defer { #expect(hierarchy.luaStackTop == 0, "Lua stack not balanced", sourceLocation: sourceLocation) }
        try hierarchy.run(source: source, chunkName: "test.lua")
    }

    /// Runs `source` and returns what it printed (only this run's lines).
    func output(_ source: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> [String] {
        let before = recorder.printed.count
        try lua(source, sourceLocation: sourceLocation)
        return Array(recorder.printed[before...])
    }

    /// The script error `source` fails with.
    func failure(_ source: String, sourceLocation: SourceLocation = #_sourceLocation) -> ScriptError? {
        do {
            try lua(source, sourceLocation: sourceLocation)
            Issue.record("expected the script to fail", sourceLocation: sourceLocation)
            return nil
        } catch {
            return error
        }
    }
}
