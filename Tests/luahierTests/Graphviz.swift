import Foundation

/// Graphviz's `dot`, when installed (`.ci/run` installs it), to prove DOT output valid.
enum Graphviz {
    static let dot = ["/usr/bin/dot", "/usr/local/bin/dot"].first { FileManager.default.isExecutableFile(atPath: $0) }

    /// `dot -T<format>` over `source` (through a temporary file).
    static func render(_ source: String, format: String) throws -> (status: Int32, output: String, errors: String) {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("luahier-\(getpid())-\(UUID().uuidString).dot")
        try source.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let result = try Luahier.run(["-T\(format)", file.path], input: nil, executable: URL(fileURLWithPath: dot!))
        return (result.status, result.stdout, result.stderr)
    }
}
