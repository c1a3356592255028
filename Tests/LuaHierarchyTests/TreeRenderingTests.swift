import Foundation
import Testing
@testable import LuaHierarchy

/// `luahier tree`'s renderings: bounded however deep or wide the tree and however long its
/// names, and written in chunks.
@Suite("Tree renderings")
struct TreeRenderingTests {
    // MARK: JSON, version 2

    /// Every node but the top names its parent by index; paths are rebuilt from the top's.
    @Test func treeJSONNamesParentsByIndexAndOnlyTheTopHasAPath() throws {
        let f = try Fixture("""
            local a = hier.root:child("a")
            a:child("x"):receiveEvent(function() return "handled" end)
            hier.root:child("b")
            """)
        for (top, expected) in [("/", ["/", "/a", "/a/x", "/b"]), ("/a", ["/a", "/a/x"])] {
            let tree = TreeDescription(of: try #require(try f.hierarchy.node(at: top)))
            let document = try #require(try JSONSerialization.jsonObject(with: Data(tree.json().utf8)) as? [String: Any])
            #expect(document["version"] as? Int == 2)
            let nodes = try #require(document["nodes"] as? [[String: Any]])
            #expect(nodes.map { $0["path"] as? String } == [top] + Array(repeating: nil, count: expected.count - 1))
            // The rule docs/cli.md gives tools: the parent's path, "/", the name (the root's
            // "/" is not doubled).
            var paths: [String] = []
            for node in nodes {
                if let parent = node["parent"] as? Int {
                    let base = paths[parent] == "/" ? "" : paths[parent]
                    paths.append(base + "/" + (node["name"] as! String))
                } else {
                    paths.append(node["path"] as! String)
                }
            }
            #expect(paths == expected)
        }
    }

    /// A 200,000-deep chain: version 1 refused it (its paths would take 20 GB); now it is
    /// written in size proportional to the tree, in chunks.
    @Test func aDeepChainRendersAsJSONInChunks() throws {
        let f = try Fixture()
        var node = f.hierarchy.root
        for _ in 0..<200_000 { node = try node.child("n") }
        let tree = f.hierarchy.describeTree()
        var chunks: [String] = []
        tree.writeJSON { chunks.append($0) }
        #expect(chunks.count > 10)
        #expect(chunks.dropLast().allSatisfy { $0.utf8.count < 2 * TreeDescription.chunkBytes })
        let json = chunks.joined()
        #expect(json.utf8.count < 200_001 * 120)
        #expect(json.hasSuffix(#"{"depth":200000,"name":"n","parent":199999,"reports":[],"responders":[],"subscriptions":[],"triggers":[]}],"version":2}"# + "\n"))
    }

    /// An output that throws stops the rendering at once: a failed write or a signal need
    /// not wait for the rest of a huge tree.
    @Test func aThrowingOutputStopsTheRendering() throws {
        struct Stop: Error {}
        let f = try Fixture()
        var node = f.hierarchy.root
        for _ in 0..<20_000 { node = try node.child("n") }
        let tree = f.hierarchy.describeTree()
        var calls = 0
        let stop: (String) throws(Stop) -> Void = { _ throws(Stop) in
            calls += 1
            throw Stop()
        }
        #expect(throws: Stop.self) { try tree.writeText(to: stop) }
        #expect(throws: Stop.self) { try tree.writeDOT(to: stop) }
        #expect(throws: Stop.self) { try tree.writeJSON(to: stop) }
        #expect(calls == 3)
    }

    // MARK: DOT labels

    /// A cut lands between whole escapes and whole characters, and says how much was cut.
    @Test(arguments: [
        // (the line, what each shown character takes in the label, its bytes)
        (String(repeating: "x", count: 20_000), "x", 1),
        (String(repeating: "\"", count: 300), "\\\"", 2),
        (String(repeating: "\\", count: 300), "\\\\", 2),
        (String(repeating: "\u{1}", count: 300), "\\\\u{1}", 6),
        (String(repeating: "é", count: 300), "é", 2),
        // One character of three scalars (e + two combining accents), five UTF-8 bytes.
        (String(repeating: "e\u{301}\u{302}", count: 300), "e\u{301}\u{302}", 5),
    ])
    func aLongDOTLineIsCutBetweenEscapes(_ line: String, _ shownAs: String, _ bytes: Int) {
        let shownCount = DOTLabel.lineBytes / bytes
        let expected = String(repeating: shownAs, count: shownCount) + "… (\(line.count - shownCount) more characters)"
        #expect(DOTLabel.shown(line) == expected)
    }

    @Test func shortDOTLinesAreEscapedWhole() {
        #expect(DOTLabel.shown("#1 receiveEvent Tap  rules.lua:3") == "#1 receiveEvent Tap  rules.lua:3")
        #expect(DOTLabel.shown("say \"hi\"\\now\n") == #"say \"hi\"\\now\\u{a}"#)
        #expect(DOTLabel.shown(String(repeating: "y", count: DOTLabel.lineBytes)) == String(repeating: "y", count: DOTLabel.lineBytes))
        #expect(DOTLabel.shown(String(repeating: "y", count: DOTLabel.lineBytes + 1)).hasSuffix("y… (1 more character)"))
    }

    /// Many responders, each with a long filter, under a long name: the label stays far
    /// below Graphviz's 16 KiB for a quoted string.
    @Test func aBusyNodeShowsTwentyLinesAndHowManyMore() throws {
        let f = try Fixture("""
            local types = {}
            for i = 1, 100 do types[i] = string.rep("T", 60) .. i end
            local busy = hier.root:child(string.rep("\\1", 5000))
            busy:triggers(types)
            for i = 1, 300 do busy:receiveEvent(types, function() end) end
            for i = 1, 200 do busy:subscribe(types, function() end) end
            """)
        let dot = f.hierarchy.describeTree().dot()
        let label = try #require(dot.split(separator: "\n").first { $0.hasPrefix("  n1 [label=") })
        #expect(label.utf8.count < 7 << 10)
        let lines = label.components(separatedBy: "\\l")
        #expect(lines.count == 1 + DOTLabel.detailLines + 1 + 1)  // head, details, "… N more", the rest
        #expect(lines[DOTLabel.detailLines + 1] == "… 480 more")
        #expect(lines[1].hasPrefix("#1 receiveEvent [TTTT"))
        #expect(lines[1].hasSuffix(" more characters)"))
    }

    // MARK: Text

    /// The chunks join to the same text, and a deep line keeps only the last levels.
    @Test func textInChunksIsTheWholeText() throws {
        let f = try Fixture()
        var node = f.hierarchy.root
        for level in 0..<5_000 { node = try node.child("n\(level)") }
        node.receiveEvent { _ in .handled }
        let tree = f.hierarchy.describeTree()
        var chunks: [String] = []
        tree.writeText { chunks.append($0) }
        #expect(chunks.count > 1)
        let text = chunks.joined()
        #expect(text == tree.text())
        let lines = text.split(separator: "\n")
        #expect(lines.count == 5_002)
        let deepest = "⋯ " + String(repeating: "    ", count: TreeDescription.drawnLevels)
        #expect(lines[5_000] == deepest + "└── n4999")
        #expect(lines[5_001].hasPrefix(deepest + "   #1 receiveEvent any  "))
    }
}
