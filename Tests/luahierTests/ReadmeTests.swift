import Foundation
import Testing

/// The README, CONTRIBUTING.md and every `docs/*.md` page, run (so they cannot drift from what
/// the binary does):
/// - every `$ luahier ...` line in a code block is run, and the lines shown after it must
///   appear in its output, in order (a line marked `(stderr)` on stderr); lines with `...`
///   stand for cut output and are not compared. A script the command names that is not in the
///   package (`rules.lua`) is the page's nearest `lua` block above it, written to a folder
///   of its own, where the command then runs;
/// - every `lua run` block (a fence that says ```` ```lua run ````, such as the README's tour)
///   is run, and each `print(...)  --> expected` must print that;
/// - every relative link points to a file that exists, and no page cites a ticket number or
///   a contract file a clone does not have.
@Suite("README and docs examples, run", .ownThreads)
struct ReadmeTests {
    /// A page of the documentation: its path from the package root, and its text.
    struct Page: CustomStringConvertible {
        var path: String
        var text: String
        var description: String { path }

        /// The page's code blocks, each with the language named after its fence and the words
        /// after that (`run`).
        var blocks: [Block] {
            var blocks: [Block] = []
            var open: Block?
            for (offset, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                if line.hasPrefix("```") {
                    if let block = open {
                        blocks.append(block)
                        open = nil
                    } else {
                        let words = line.dropFirst(3).split(separator: " ").map(String.init)
                        open = Block(page: path, line: offset + 1, language: words.first ?? "", marks: Array(words.dropFirst()), lines: [])
                    }
                } else if open != nil {
                    open!.lines.append(line)
                }
            }
            return blocks
        }
    }

    struct Block: CustomStringConvertible {
        var page: String
        /// The line of its opening fence.
        var line: Int
        var language: String
        var marks: [String]
        var lines: [Substring]
        var source: String { lines.joined(separator: "\n") + "\n" }
        var description: String { "\(page):\(line)" }
    }

    /// README.md, CONTRIBUTING.md, then docs/*.md by name.
    static let pages: [Page] = {
        let root = Luahier.packageRoot
        let docs = (try? FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("docs").path)) ?? []
        let paths = ["README.md", "CONTRIBUTING.md"] + docs.filter { $0.hasSuffix(".md") }.sorted().map { "docs/" + $0 }
        return paths.map { path in
            Page(path: path, text: (try? String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)) ?? "")
        }
    }()

    struct Example: CustomStringConvertible {
        var page: String
        var command: [String]
        var expected: [String]
        /// The nearest `lua` block above, for a script the package does not have.
        var script: String?
        var description: String { "\(page): $ luahier " + command.joined(separator: " ") }
    }

    static let examples: [Example] = pages.flatMap { page in
        var examples: [Example] = []
        var lastLua: String?
        for block in page.blocks {
            if block.language == "lua" { lastLua = block.source }
            var current: Example?
            for line in block.lines {
                if line.hasPrefix("$ luahier ") {
                    if let example = current { examples.append(example) }
                    var words = line.dropFirst("$ luahier ".count)
                    if let comment = words.range(of: " #") { words = words[..<comment.lowerBound] }
                    current = Example(page: page.path, command: words.split(separator: " ").map(String.init), expected: [], script: lastLua)
                } else if current != nil {
                    current!.expected.append(String(line))
                }
            }
            if let example = current { examples.append(example) }
        }
        return examples
    }

    /// Every `lua run` block.
    static let tours: [Block] = pages.flatMap { $0.blocks.filter { $0.language == "lua" && $0.marks.contains("run") } }

    @Test func thereAreExamplesToRun() {
        #expect(Self.pages.count >= 3 && Self.pages.allSatisfy { !$0.text.isEmpty }, "\(Self.pages)")
        #expect(Self.examples.count >= 8, "\(Self.examples)")
        #expect(Self.tours.count >= 2, "\(Self.tours)")
        #expect(Self.tours.first?.page == "README.md", "the README's tour is run")
    }

    /// The examples the README ran before its manual moved into docs/ still run, wherever they
    /// are now.
    @Test func theExamplesOnceInTheReadmeStillRun() {
        let commands = Set(Self.examples.map { $0.command.joined(separator: " ") })
        for command in [
            "run --timeout -5 job.lua",
            "check rules.lua",
            "tree scripts/workspace.lua",
            "test scripts/alerts_test.lua --coverage",
            "explain scripts/workspace.lua --at /app/sidebar/outline --event Format",
            "explain scripts/alerts.lua --at /org/payments/checkout --error Timeout --run",
            "dispatch scripts/alerts.lua scripts/alerts.jsonl",
        ] {
            #expect(commands.contains(command), "no page runs `luahier \(command)` any more")
        }
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

    @Test(arguments: tours)
    func luaRunBlockPrintsWhatItSays(_ tour: Block) throws {
        let expected = tour.lines.compactMap { line -> String? in
            guard line.contains("print("), let arrow = line.range(of: "--> ") else { return nil }
            return line[arrow.upperBound...].split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
        }
        #expect(!expected.isEmpty, "\(tour): a `lua run` block with no `print(...)  --> expected`")
        let result = try Luahier.run(["run", try Luahier.script(tour.source, name: "tour.lua")])
        #expect(result.status == 0, "\(tour): \(result.stderr)")
        let printed = result.stdout.split(separator: "\n").map { $0.split(whereSeparator: { $0 == " " || $0 == "\t" }).joined(separator: " ") }
        for line in expected { #expect(printed.contains(line), "\(tour): \(line) not printed in \(printed)") }
    }

    /// The targets of a page's relative links, outside its code blocks: `[text](target)`.
    static func relativeLinks(in page: Page) -> [String] {
        var prose: [Substring] = []
        var inCode = false
        for line in page.text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") { inCode.toggle() } else if !inCode { prose.append(line) }
        }
        let text = prose.joined(separator: "\n")
        let pattern = try! NSRegularExpression(pattern: #"\]\(([^)\s]+)\)"#)
        return pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)).compactMap { match in
            guard let range = Range(match.range(at: 1), in: text) else { return nil }
            let target = String(text[range])
            if target.hasPrefix("#") || target.contains("://") || target.hasPrefix("mailto:") { return nil }
            return String(target.split(separator: "#", maxSplits: 1)[0])
        }
    }

    @Test(arguments: pages)
    func everyRelativeLinkPointsToAFileThatExists(_ page: Page) {
        let folder = Luahier.packageRoot.appendingPathComponent(page.path).deletingLastPathComponent()
        for target in Self.relativeLinks(in: page) {
            let path = folder.appendingPathComponent(target).standardizedFileURL.path
            #expect(FileManager.default.fileExists(atPath: path), "\(page): the link to \(target) points to nothing")
        }
    }

    @Test(arguments: pages)
    func noPageCitesATicketNumberOrAContractFileAwayFromTheClone(_ page: Page) throws {
        let pattern = try NSRegularExpression(pattern: #"\bissues? \d+|SPEC\.md"#, options: [.caseInsensitive])
        let text = page.text
        for match in pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
            let line = text[..<(Range(match.range, in: text)?.lowerBound ?? text.startIndex)].split(separator: "\n", omittingEmptySubsequences: false).count
            Issue.record("\(page.path):\(line): \((text as NSString).substring(with: match.range))")
        }
    }

    @Test func theReadmeLinksEveryDocsPage() throws {
        let readme = try #require(Self.pages.first { $0.path == "README.md" })
        let linked = Set(Self.relativeLinks(in: readme))
        for page in Self.pages where page.path.hasPrefix("docs/") {
            #expect(linked.contains(page.path), "README.md does not link \(page.path)")
        }
    }
}
