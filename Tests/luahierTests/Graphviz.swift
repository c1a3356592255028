import Foundation

/// Graphviz's `dot`, when installed (`.ci/run` installs it), to prove DOT output valid.
enum Graphviz {
    static let dot = ["/usr/bin/dot", "/usr/local/bin/dot"].first { FileManager.default.isExecutableFile(atPath: $0) }

    /// `dot -T<format>` over `source` (through a temporary file).
    static func render(_ source: String, format: String) throws -> (status: Int32, output: String, errors: String) {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("luahier-\(getpid())-\(UUID().uuidString).dot")
        try source.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: dot!)
        process.arguments = ["-T\(format)", file.path]
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        // dot writes its errors only after its output, and small ones: read output first.
        let rendered = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let complaints = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, rendered, complaints)
    }
}
