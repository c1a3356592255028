import Foundation
import Testing

@Suite("luahier check and luahier tree (contract §8)", .ownThreads)
struct ToolCommandTests {
    @Test func checkExitsZeroWhenCleanOneWithFindingsTwoOnUsage() throws {
        let clean = try Luahier.run(["check", try Luahier.script("hier.root:receiveEvent(function() return 'handled' end)")])
        #expect(clean.status == 0)
        #expect(clean.stdout.isEmpty)
        #expect(clean.stderr.hasSuffix(": no findings (1 nodes, 1 responders)\n"))

        let script = try Luahier.script("""
            local n = hier.root:child("n")
            n:handleEvent(function() end)
            n:receiveEvent(function() return "handled" end)
            print("rules say hello")
            """, name: "dead.lua")
        let findings = try Luahier.run(["check", script])
        #expect(findings.status == 1)
        #expect(findings.stdout == "\(script):3: (unreachableResponder) #2 receiveEvent on /n never runs: #1 handleEvent (\(script):2) takes every event before it\n")
        #expect(findings.stderr == "rules say hello\ncheck: \(script): 1 finding\n")

        #expect(try Luahier.run(["check"]).status == 2)
        #expect(try Luahier.run(["check", "no/such.lua"]).stderr.contains("no such file: no/such.lua"))
        #expect(try Luahier.run(["check", "--help"]).stdout.contains("requireExplicitResponders"))
    }

    @Test func rulesThatFailToLoadExitOneWithFileAndLine() throws {
        let script = try Luahier.script("local x = 1\nerror('bad rules')\n", name: "broken.lua")
        for command in ["check", "tree"] {
            let result = try Luahier.run([command, script])
            #expect(result.status == 1)
            #expect(result.stdout.isEmpty)
            #expect(result.stderr.hasPrefix("luahier: \(script):2: bad rules"))
        }
        let loop = try Luahier.run(["tree", "--max-instructions", "100000", try Luahier.script("while true do end")])
        #expect(loop.status == 1)
        #expect(loop.stderr.contains("InstructionLimitExceeded"))
    }

    /// Node names may hold anything but "/": quotes, backslashes, newlines, braces.
    private let oddNames = #"""
        local odd = hier.root:child('say "hi"\\now')
        odd:child("line\nbreak"):receiveEvent({"B", "A"}, function() return "handled" end)
        odd:child("{ü|<x>}")
        """#

    @Test func treeTextEscapesControlCharacters() throws {
        let script = try Luahier.script(oddNames)
        let result = try Luahier.run(["tree", script])
        #expect(result.status == 0)
        #expect(result.stdout == """
            /
            └── say "hi"\\now
                ├── line\\u{a}break
                │      #1 receiveEvent [A, B]  \(script):2
                └── {ü|<x>}

            """)
    }

    @Test func treeJSONIsFlatStableAndParses() throws {
        let script = try Luahier.script(oddNames)
        let result = try Luahier.run(["tree", script, "--format", "json"])
        #expect(result.status == 0)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        #expect(object["format"] as? String == "luahier-tree")
        #expect(object["version"] as? Int == 2)
        let nodes = try #require(object["nodes"] as? [[String: Any]])
        #expect(nodes.map { $0["name"] as? String } == ["root", #"say "hi"\now"#, "line\nbreak", "{ü|<x>}"])
        #expect(nodes.map { $0["parent"] as? Int } == [nil, 0, 1, 1])
        #expect(nodes.map { $0["depth"] as? Int } == [0, 1, 2, 2])
        // Only the top has its path; the others' are built from it (docs/cli.md).
        #expect(nodes.map { $0["path"] as? String } == ["/", nil, nil, nil])
        let responder = try #require((nodes[2]["responders"] as? [[String: Any]])?.first)
        #expect(responder["filter"] as? [String] == ["A", "B"])
        #expect(responder["kind"] as? String == "receiveEvent")
        #expect(responder["where"] as? String == "\(script):2")
        // Byte-stable: a second run gives the same bytes.
        #expect(try Luahier.run(["tree", script, "--format", "json"]).stdout == result.stdout)
    }

    @Test(.enabled(if: Graphviz.dot != nil, "Graphviz (dot) is not installed"))
    func treeDOTWithOddNamesRendersWithGraphviz() throws {
        let result = try Luahier.run(["tree", try Luahier.script(oddNames), "--format", "dot"])
        #expect(result.status == 0)
        let (status, plain, complaints) = try Graphviz.render(result.stdout, format: "plain")
        #expect(status == 0)
        #expect(complaints.isEmpty, "dot said: \(complaints)")
        // `plain` lists 4 nodes and 3 edges.
        #expect(plain.split(separator: "\n").filter { $0.hasPrefix("node ") }.count == 4)
        #expect(plain.split(separator: "\n").filter { $0.hasPrefix("edge ") }.count == 3)
    }

    /// A hostile tree: 3,000 levels of 100-byte names. Its paths would take ~450 MB, which
    /// version 1 of the JSON refused; now every format is a line (or two) per node, each of
    /// bounded size.
    @Test func aVeryDeepTreeIsBoundedInEveryFormat() throws {
        let script = try Luahier.script("""
            local node = hier.root
            for i = 1, 3000 do node = node:child(string.rep("x", 96) .. string.format("%04d", i)) end
            """)
        let json = try Luahier.run(["tree", script, "--format", "json"])
        #expect(json.status == 0)
        #expect(json.stderr.isEmpty)
        #expect(json.stdout.utf8.count < 3_001 * 250)
        #expect(json.stdout.hasSuffix(#"{"depth":3000,"name":"\#(String(repeating: "x", count: 96))3000","parent":2999,"reports":[],"responders":[],"subscriptions":[],"triggers":[]}],"version":2}"# + "\n"))
        let text = try Luahier.run(["tree", script])
        #expect(text.status == 0)
        let lines = text.stdout.split(separator: "\n")
        #expect(lines.count == 3_001)
        #expect(lines.map(\.count).max()! < 300)
        let dot = try Luahier.run(["tree", script, "--format", "dot"])
        #expect(dot.status == 0)
        #expect(dot.stdout.utf8.count < 3_001 * 150)
    }

    /// A 200,000-deep chain (docs/cli.md's case for a flat format: a million renders in about
    /// 2 s in a release build): JSON that parses, each node naming its parent, and the text
    /// and DOT drawings, each with default limits.
    @Test func aDeepChainRendersInEveryFormat() throws {
        let depth = 200_000
        let script = try Luahier.script("local n = hier.root for i = 1, \(depth) do n = n:child('n') end")
        let json = try Luahier.run(["tree", script, "--format", "json"])
        #expect(json.status == 0)
        #expect(json.stderr.isEmpty)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let nodes = try #require(object["nodes"] as? [[String: Any]])
        #expect(nodes.count == depth + 1)
        #expect(nodes.indices.dropFirst().allSatisfy { nodes[$0]["parent"] as? Int == $0 - 1 && nodes[$0]["depth"] as? Int == $0 })
        let text = try Luahier.run(["tree", script])
        #expect(text.status == 0)
        #expect(text.stdout.utf8.count < (depth + 1) * 150)
        let dot = try Luahier.run(["tree", script, "--format", "dot"])
        #expect(dot.status == 0)
        #expect(dot.stdout.hasSuffix("  n\(depth - 1) -> n\(depth);\n}\n"))
    }

    /// Graphviz refuses a quoted string of 16 KiB or more: a 20,000-character name, names
    /// that are all escapes, and a node with 500 responders and subscriptions under a long
    /// list of declared types all get labels it renders.
    @Test(.enabled(if: Graphviz.dot != nil, "Graphviz (dot) is not installed"))
    func treeDOTBoundsEveryLabelForGraphviz() throws {
        let script = try Luahier.script(#"""
            hier.root:child(string.rep("x", 20000))
            hier.root:child(string.rep('"', 9000))
            hier.root:child(string.rep("\\", 9000))
            hier.root:child(string.rep("\1", 9000))
            hier.root:child(string.rep("é", 9000))
            local types = {}
            for i = 1, 100 do types[i] = string.rep("T", 200) .. i end
            local busy = hier.root:child("busy")
            busy:triggers(types)
            for i = 1, 300 do busy:receiveEvent(types, function() end) end
            for i = 1, 200 do busy:subscribe(types, function() end) end
            """#)
        let result = try Luahier.run(["tree", script, "--format", "dot"])
        #expect(result.status == 0)
        let labels = result.stdout.split(separator: "\n").filter { $0.contains("[label=") }
        #expect(labels.count == 7)
        #expect(labels.allSatisfy { $0.utf8.count < 8 << 10 })
        #expect(labels[1].contains("… (19744 more characters)"))
        #expect(labels[6].contains("\\l… 480 more\\l"))
        let (status, plain, complaints) = try Graphviz.render(result.stdout, format: "plain")
        #expect(status == 0)
        #expect(complaints.isEmpty, "dot said: \(complaints)")
        #expect(plain.split(separator: "\n").filter { $0.hasPrefix("node ") }.count == 7)
    }

    @Test func treeRefusesAnUnknownFormat() throws {
        let result = try Luahier.run(["tree", try Luahier.script(""), "--format", "svg"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("svg"))
    }
}

#if !Server
/// Built without the Server trait (the default), `serve` says how to get it, exit 2.
@Suite(.ownThreads) struct ServeWithoutTheServerTraitTests {
    @Test func serveSaysHowToBuildIt() throws {
        let rules = try Luahier.script("hier.root:child('a')", name: "rules.lua")
        let run = try Luahier.run(["serve", rules])
        #expect(run.status == 2)
        #expect(run.stderr.contains("built without the Server trait; build it with `swift build --traits Server`"), "\(run.stderr)")
    }
}
#endif
