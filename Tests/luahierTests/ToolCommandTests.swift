import Foundation
import Testing

@Suite("luahier check and luahier tree (SPEC §8)")
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
        #expect(object["version"] as? Int == 1)
        let nodes = try #require(object["nodes"] as? [[String: Any]])
        #expect(nodes.map { $0["path"] as? String } == ["/", #"/say "hi"\now"#, "/say \"hi\"\\now/line\nbreak", #"/say "hi"\now/{ü|<x>}"#])
        #expect(nodes.map { $0["parent"] as? String } == [nil, "/", #"/say "hi"\now"#, #"/say "hi"\now"#])
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

    /// A hostile tree: 3,000 levels of 100-byte names. Its paths would take ~450 MB, so JSON
    /// is refused with a clear message; text stays a line per node, each of bounded width.
    @Test func aVeryDeepTreeIsBoundedInEveryFormat() throws {
        let script = try Luahier.script("""
            local node = hier.root
            for i = 1, 3000 do node = node:child(string.rep("x", 96) .. string.format("%04d", i)) end
            """)
        let json = try Luahier.run(["tree", script, "--format", "json"])
        #expect(json.status == 1)
        #expect(json.stdout.isEmpty)
        #expect(json.stderr.hasPrefix("luahier: the tree is too deep for --format json: its paths alone take "))
        let text = try Luahier.run(["tree", script])
        #expect(text.status == 0)
        let lines = text.stdout.split(separator: "\n")
        #expect(lines.count == 3_001)
        #expect(lines.map(\.count).max()! < 300)
        let dot = try Luahier.run(["tree", script, "--format", "dot"])
        #expect(dot.status == 0)
        #expect(dot.stdout.utf8.count < 3_001 * 150)
    }

    @Test func treeRefusesAnUnknownFormat() throws {
        let result = try Luahier.run(["tree", try Luahier.script(""), "--format", "svg"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("svg"))
    }
}
