/// The folder dependency graph of one Swift module (ArchitectureTests prints it with
/// `LUAHIER_FOLDER_GRAPH=1`): folder A -> folder B when a file in A names something B declares,
/// a top-level type, a free function or global, or a member of an extension of a type from
/// elsewhere (another folder's, or the standard library's). A name declared in more than one
/// folder is left out, as are private and fileprivate declarations. Top-level files are the
/// folder "(root)".
struct FolderGraph {
    struct Edge: Hashable, Comparable {
        var from: String
        var to: String

        static func < (a: Edge, b: Edge) -> Bool { (a.from, a.to) < (b.from, b.to) }
    }

    /// A name of `to` used at `file:line`.
    struct Use: Hashable {
        var file: String
        var line: Int
        var name: String
    }

    private(set) var edges: [Edge: [Use]] = [:]

    /// The pairs of folders that use each other, each once (`from` < `to`).
    var twoWayPairs: [Edge] {
        edges.keys.filter { $0.from < $0.to && edges[Edge(from: $0.to, to: $0.from)] != nil }.sorted()
    }

    /// `files`: paths relative to the module's folder, and their text.
    init(files: [(path: String, text: String)]) {
        let sources = files.map { (path: $0.path, folder: Self.folder(of: $0.path), tokens: Self.tokens($0.text)) }
        let found = sources.flatMap { source in
            Self.declarations(source.tokens).map { (name: $0.name, extended: $0.extended, folder: source.folder) }
        }
        var types: [String: Set<String>] = [:]
        for declaration in found where declaration.extended == nil {
            types[declaration.name, default: []].insert(declaration.folder)
        }
        var declaredIn: [String: Set<String>] = [:]
        for declaration in found {
            // An extension's members count where the extended type is not the folder's own.
            if let extended = declaration.extended, types[extended]?.contains(declaration.folder) == true { continue }
            declaredIn[declaration.name, default: []].insert(declaration.folder)
        }
        for source in sources {
            for token in source.tokens {
                guard let folders = declaredIn[token.text], folders.count == 1, let there = folders.first,
                    there != source.folder
                else { continue }
                edges[Edge(from: source.folder, to: there), default: []].append(Use(file: source.path, line: token.line, name: token.text))
            }
        }
    }

    static func folder(of path: String) -> String {
        let parts = path.split(separator: "/")
        return parts.count > 1 ? String(parts[0]) : "(root)"
    }

    // MARK: Reading Swift

    typealias Token = (text: String, line: Int)

    static let keywords: Set<String> = [
        "associatedtype", "class", "deinit", "enum", "extension", "fileprivate", "func", "import",
        "init", "inout", "internal", "let", "open", "operator", "private", "protocol", "public",
        "rethrows", "static", "struct", "subscript", "typealias", "var", "break", "case", "continue",
        "default", "defer", "do", "else", "fallthrough", "for", "guard", "if", "in", "repeat",
        "return", "switch", "where", "while", "as", "catch", "false", "is", "nil", "super", "self",
        "Self", "throw", "throws", "true", "try", "package", "actor", "await", "async", "some", "any",
        "mutating", "nonmutating", "final", "lazy", "weak", "unowned", "override", "convenience",
        "required", "indirect", "consuming", "borrowing", "sending", "nonisolated", "get", "set",
        "willSet", "didSet",
    ]
    static let typeKeywords: Set<String> = ["struct", "class", "enum", "protocol", "actor", "typealias"]
    static let memberKeywords: Set<String> = ["func", "var", "let"]

    static func isIdentifier(_ token: String) -> Bool {
        guard let first = token.utf8.first else { return false }
        return (isLetter(first) || first == UInt8(ascii: "_")) && !keywords.contains(token)
    }

    private static func isLetter(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
    }

    private static func isWordByte(_ byte: UInt8) -> Bool {
        isLetter(byte) || byte == UInt8(ascii: "_") || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
    }

    /// Identifiers and punctuation with their lines; comments and the literal parts of
    /// strings left out (an interpolation's code is kept).
    static func tokens(_ text: String) -> [Token] {
        let bytes = Array(text.utf8)
        let count = bytes.count
        var out: [Token] = []
        var index = 0
        var line = 1
        var depth = 0
        // Interpolations under way: the paren depth each ends at, and its string's delimiter.
        var resume: [(depth: Int, close: [UInt8])] = []

        func starts(_ prefix: String, at position: Int) -> Bool {
            var offset = position
            for byte in prefix.utf8 {
                guard offset < count, bytes[offset] == byte else { return false }
                offset += 1
            }
            return true
        }
        func starts(_ prefix: [UInt8], at position: Int) -> Bool {
            position + prefix.count <= count && bytes[position..<position + prefix.count].elementsEqual(prefix)
        }
        /// Skips a string's content up to `close` or an interpolation; true when one opened.
        func skipString(close: [UInt8]) -> Bool {
            let hashes = close.filter { $0 == UInt8(ascii: "#") }.count
            while index < count {
                if starts(close, at: index) {
                    index += close.count
                    return false
                }
                if bytes[index] == UInt8(ascii: "\n") { line += 1 }
                if bytes[index] == UInt8(ascii: "\\") {
                    if starts(String(repeating: "#", count: hashes) + "(", at: index + 1) {
                        index += 2 + hashes
                        return true
                    }
                    // In a raw string a lone backslash is a character; else it escapes the next.
                    index += hashes > 0 ? 1 : 2
                    continue
                }
                index += 1
            }
            return false
        }

        while index < count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\n") {
                line += 1
                index += 1
            } else if byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\r") {
                index += 1
            } else if starts("//", at: index) {
                while index < count && bytes[index] != UInt8(ascii: "\n") { index += 1 }
            } else if starts("/*", at: index) {
                var nesting = 0
                while index < count {
                    if starts("/*", at: index) {
                        nesting += 1
                        index += 2
                    } else if starts("*/", at: index) {
                        nesting -= 1
                        index += 2
                        if nesting == 0 { break }
                    } else {
                        if bytes[index] == UInt8(ascii: "\n") { line += 1 }
                        index += 1
                    }
                }
            } else if byte == UInt8(ascii: "\"") || (byte == UInt8(ascii: "#") && rawStringStarts(bytes, at: index)) {
                var hashes = 0
                while bytes[index] == UInt8(ascii: "#") {
                    hashes += 1
                    index += 1
                }
                let quote = starts("\"\"\"", at: index) ? "\"\"\"" : "\""
                index += quote.utf8.count
                let close = Array(quote.utf8) + Array(repeating: UInt8(ascii: "#"), count: hashes)
                if skipString(close: close) {
                    resume.append((depth, close))
                    depth += 1
                    out.append(("(", line))
                }
            } else if isLetter(byte) || byte == UInt8(ascii: "_") {
                let start = index
                while index < count && isWordByte(bytes[index]) { index += 1 }
                out.append((String(decoding: bytes[start..<index], as: UTF8.self), line))
            } else if byte == UInt8(ascii: "`") {
                let start = index + 1
                index = start
                while index < count && bytes[index] != UInt8(ascii: "`") { index += 1 }
                out.append((String(decoding: bytes[start..<index], as: UTF8.self), line))
                index += 1
            } else {
                if byte == UInt8(ascii: "(") {
                    depth += 1
                } else if byte == UInt8(ascii: ")") {
                    depth -= 1
                    if let open = resume.last, open.depth == depth {
                        resume.removeLast()
                        out.append((")", line))
                        index += 1
                        if skipString(close: open.close) {
                            resume.append((depth, open.close))
                            depth += 1
                            out.append(("(", line))
                        }
                        continue
                    }
                }
                out.append((String(decoding: [byte], as: UTF8.self), line))
                index += 1
            }
        }
        return out
    }

    /// `#"`, `##"`, ...: a raw string begins.
    private static func rawStringStarts(_ bytes: [UInt8], at start: Int) -> Bool {
        var index = start
        while index < bytes.count && index < start + 8 && bytes[index] == UInt8(ascii: "#") { index += 1 }
        return index > start && index < bytes.count && bytes[index] == UInt8(ascii: "\"")
    }

    /// What a file declares for other files: each non-private top-level type, free function
    /// or global (`extended` nil), and member of an extension (`extended`: the extended
    /// type's name). Nested types and members of a type's own body are left out: their
    /// names (`Result`, `line`) are too often another's too, and other folders reach them
    /// through their type's name.
    static func declarations(_ tokens: [Token]) -> [(name: String, line: Int, extended: String?)] {
        var names: [(name: String, line: Int, extended: String?)] = []
        // Each open brace: the extension's type name ("" for a type's own body), or nil for
        // any other brace (a function's, a closure's).
        var scopes: [String?] = []
        var pending: String? = nil
        var statementStart = 0
        for (index, token) in tokens.enumerated() {
            switch token.text {
            case "{":
                scopes.append(pending)
                pending = nil
                statementStart = index + 1
                continue
            case "}":
                if !scopes.isEmpty { scopes.removeLast() }
                statementStart = index + 1
                continue
            case ";":
                statementStart = index + 1
            default:
                break
            }
            if scopes.contains(where: { $0 == nil }) { continue }
            let named = index + 1 < tokens.count && isIdentifier(tokens[index + 1].text)
            if ["func", "init", "subscript", "var", "let"].contains(token.text) {
                pending = nil
            } else if named && token.text == "extension" {
                pending = tokens[index + 1].text
            } else if named && typeKeywords.contains(token.text) && token.text != "typealias" {
                pending = ""
            }
            let isMember = memberKeywords.contains(token.text)
            guard named, isMember || typeKeywords.contains(token.text) else { continue }
            let extended = scopes.last ?? nil
            // Top level, or a member right inside an extension.
            if scopes.count > 1 || (!scopes.isEmpty && (!isMember || extended == "")) { continue }
            // The modifiers since the last declaration on this line, or the line above.
            let before = tokens[max(statementStart, index - 8)..<index].filter { $0.line >= token.line - 1 }.map(\.text)
            let isPrivate = before.indices.contains { position in
                ["private", "fileprivate"].contains(before[position]) && (position + 1 == before.count || before[position + 1] != "(")
            }
            if !isPrivate { names.append((tokens[index + 1].text, token.line, isMember ? extended : nil)) }
        }
        return names
    }
}
