import ArgumentParser
import Glibc
import LuaHierarchy

/// `luahier test [PATH...] [--run TEXT] [--coverage] [--format text|junit|json] [host options]`
struct Test: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "test",
        abstract: "Run rule tests (*_test.lua): each test on a fresh hierarchy with its rules loaded.",
        discussion: """
            PATH is a test file or a folder searched for *_test.lua (default: the current \
            folder). A test file names its rules with rules "file.lua" (loaded as require \
            loads a module, from the test file's folder) and declares tests with \
            test(name, function() ... end); see docs/testing-rules.md for expect(...) and its \
            assertions. A failing, raising or limit-tripping test never stops the others. \
            text is written as tests end (colour only on a terminal); junit and json once \
            all have run. The rules' and tests' print goes to stderr. Exit 0 when every test \
            that ran passed; 1 when one failed or raised, a file did not load, or no test \
            file was found; 2 on usage errors.
            """
    )

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case text, junit, json
    }

    /// The flags' defaults: what `test` does with none given.
    static let defaults = (coverage: false, format: Format.text)

    @Argument(help: "Test files, or folders to search for *_test.lua.")
    var paths: [String] = []

    @Option(name: .customLong("run"), help: ArgumentHelp("Run only tests whose name contains this text.", valueName: "text"))
    var filter: String?

    @Flag(help: "Count the tests that reached each registered responder and subscription.")
    var coverage = Test.defaults.coverage

    @Option(help: "text, junit or json.")
    var format: Format = Test.defaults.format

    @OptionGroup(title: "Sandbox and limits")
    var host: HostOptions

    func run() throws {
        try Self.runTests(in: paths, filter: filter, coverage: coverage, format: format, host: host.settings)
    }

    /// `luahier test [host options] [PATH...]` read without the argument parser
    /// (`PlainCommandLine`): the paths, and the settings; nil for any other command line, or
    /// settings that do not validate.
    static func plain(_ words: [String]) -> (paths: [String], host: HostSettings)? {
        guard let words = PlainCommandLine(words, options: PlainCommandLine.hostOptions),
            !words.rest.contains(where: { $0.hasPrefix("-") }), let host = words.hostSettings(),
            (try? host.validate()) != nil
        else { return nil }
        return (words.rest, host)
    }

    /// Runs the tests of `paths` (files, or folders searched; the current folder if none).
    static func runTests(in paths: [String], filter: String?, coverage: Bool, format: Format, host: HostSettings) throws {
        let files: [String]
        do {
            files = try RuleTestRunner.testFiles(in: paths.isEmpty ? ["."] : paths)
        } catch {
            throw ValidationError("\(error)")
        }
        guard !files.isEmpty else {
            Console.error("luahier: no *_test.lua files in \(paths.isEmpty ? "." : paths.joined(separator: " "))")
            throw ExitCode(ExitStatus.scriptFailed)
        }
        let runner = RuleTestRunner(
            options: try host.hierarchyOptions(), filter: filter, coverage: coverage, output: { Console.error($0) })
        let colour = format == .text && isatty(1) == 1 && getenv("NO_COLOR") == nil
        var shownFile: String?
        let run = runner.run(files: files) { result in
            guard format == .text, Interruption.signal == nil else { return }
            if shownFile != result.file {
                shownFile = result.file
                Console.out(PrintableText.field(result.file))
            }
            for line in TestRun.textLines(for: result, colour: colour) { Console.out("  " + line) }
        }
        switch format {
        case .text:
            if let report = run.coverage {
                for line in TestRun.coverageLines(report, colour: colour) { Console.out(line) }
            }
            Console.out(run.summary)
        case .junit:
            Console.out(run.junitXML, terminator: "")
        case .json:
            Console.out(run.json)
        }
        try ExitStatus.finishCommand()
        if !run.succeeded { throw ExitCode(ExitStatus.scriptFailed) }
    }
}
