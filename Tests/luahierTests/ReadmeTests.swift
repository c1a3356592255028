import Foundation
import Testing

/// The README, run (so it cannot drift from what the binary does):
/// - every `$ luahier ...` line in a code block is run, and the lines shown after it must
///   appear in its output, in order (a line marked `(stderr)` on stderr); lines with `...`
///   stand for cut output and are not compared. A script the command names that is not in the
///   package (`rules.lua`) is the README's nearest `lua` block above it, written to a folder
///   of its own, where the command then runs;
/// - the tour's `lua` block is run, and each `print(...)  --> expected` must print that.
@Suite("README examples, run")
struct ReadmeTests {
    static let readme = (try? String(contentsOf: Luahier.packageRoot.appendingPathComponent("README.md"), encoding: .utf8)) ?? ""

    /// The README's code blocks, each with the language named after its fence.
    static let blocks: [(language: String, lines: [Substring])] = {
        var blocks: [(String, [Substring])] = []
        var open: (String, [Substring])?
        for line in readme.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") {
                if let block = open {
                    blocks.append(block)
                    open = nil
                } else {
                    open = (String(line.dropFirst(3)), [])
                }
            } else if open != nil {
                open!.1.append(line)
            }
        }
        return blocks
    }()

    struct Example: CustomStringConvertible {
        var command: [String]
        var expected: [String]
        /// The nearest `lua` block above, for a script the package does not have.
        var script: String?
        var description: String { "$ luahier " + command.joined(separator: " ") }
    }

    static let examples: [Example] = {
        var examples: [Example] = []
        var lastLua: String?
        for block in blocks {
            if block.language == "lua" { lastLua = block.lines.joined(separator: "\n") + "\n" }
            var current: Example?
            for line in block.lines {
                if line.hasPrefix("$ luahier ") {
                    if let example = current { examples.append(example) }
                    var words = line.dropFirst("$ luahier ".count)
                    if let comment = words.range(of: " #") { words = words[..<comment.lowerBound] }
                    current = Example(command: words.split(separator: " ").map(String.init), expected: [], script: lastLua)
                } else if current != nil {
                    current!.expected.append(String(line))
                }
            }
            if let example = current { examples.append(example) }
        }
        return examples
    }()

    @Test func thereAreExamplesToRun() {
        #expect(Self.examples.count >= 4, "\(Self.examples)")
    }

    @Test(arguments: examples)
    func shellExampleShowsWhatTheBinaryPrints(_ example: Example) throws {
        var folder = Luahier.packageRoot
        let missing = example.command.filter {
            $0.hasSuffix(".lua") && !FileManager.default.fileExists(atPath: Luahier.packageRoot.appendingPathComponent($0).path)
        }
        if let name = missing.first {
            let script = try #require(example.script, "\(example): no lua block above for \(name)")
            folder = URL(fileURLWithPath: try Luahier.script(script, name: name)).deletingLastPathComponent()
        }
        let result = try Luahier.run(example.command, in: folder)
        var stdout = result.stdout.split(separator: "\n", omittingEmptySubsequences: false)[...]
        for line in example.expected where !line.contains("...") && !line.trimmingCharacters(in: .whitespaces).isEmpty {
            if let marker = line.range(of: "(stderr)") {
                let text = line[..<marker.lowerBound].trimmingCharacters(in: .whitespaces)
                #expect(result.stderr.contains(text), "\(example): stderr lacks \(text)\n\(result.stderr)")
                continue
            }
            guard let found = stdout.firstIndex(where: { $0 == line }) else {
                Issue.record("\(example): stdout lacks, in order: \(line)\n\(result.stdout)")
                return
            }
            stdout = stdout[(found + 1)...]
        }
    }

    @Test func theTourPrintsWhatItSays() throws {
        let tour = try #require(Self.blocks.first { $0.language == "lua" })
        let expected = tour.lines.compactMap { line -> String? in
            guard line.contains("print("), let arrow = line.range(of: "--> ") else { return nil }
            return line[arrow.upperBound...].split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
        }
        #expect(!expected.isEmpty)
        let result = try Luahier.run(["run", try Luahier.script(tour.lines.joined(separator: "\n"), name: "tour.lua")])
        #expect(result.status == 0, "\(result.stderr)")
        let printed = result.stdout.split(separator: "\n").map { $0.split(whereSeparator: { $0 == " " || $0 == "\t" }).joined(separator: " ") }
        for line in expected { #expect(printed.contains(line), "tour: \(line) not printed in \(printed)") }
    }
}
