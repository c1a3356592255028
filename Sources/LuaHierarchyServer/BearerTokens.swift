#if Server
/// The bearer tokens a route takes (`Authorization: Bearer TOKEN`): any one of them, so that
/// a new token can be added beside the old one, the clients moved over, and the old one
/// removed, without a moment where either is refused.
///
/// The text they come from holds one token a line; blank lines and the spaces around a token
/// are left out, and a text with no token is refused (an empty file must not mean "open"). A
/// token is RFC 6750's `b64token`: letters, digits and `- . _ ~ + /`, then any `=` padding, as
/// `openssl rand -hex 32` or `-base64 32` make them.
///
/// The tokens are never shown: `description` and `dump` only count them.
public struct BearerTokens: Sendable, CustomStringConvertible, CustomReflectable {
    let tokens: [[UInt8]]

    /// The tokens of `path`'s text.
    public init(file path: String, role: String = "token file") throws(SetupFileError) {
        let bytes = try SetupFile.read(path, as: role)
        try self.init(text: String(decoding: bytes, as: UTF8.self), source: path, role: role)
    }

    /// The tokens of `text`; `source` and `role` name it in an error (a file, an environment
    /// variable).
    public init(text: String, source: String, role: String = "token") throws(SetupFileError) {
        var tokens: [[UInt8]] = []
        // Split as bytes: as Characters, "\r\n" is one, and a CRLF file would be one line.
        for (index, line) in text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated() {
            let token = Self.trimmed(line)
            if token.isEmpty { continue }
            // The error names the line, never its text.
            guard Self.isToken(token) else {
                throw SetupFileError(
                    source: source, role: role,
                    why: "line \(index + 1) is not a bearer token (letters, digits and - . _ ~ + /, then = padding)")
            }
            tokens.append(Array(token))
        }
        guard !tokens.isEmpty else { throw SetupFileError(source: source, role: role, why: "it holds no token") }
        self.tokens = tokens
    }

    /// How many tokens are taken.
    public var count: Int { tokens.count }

    /// `2 bearer tokens`: never the tokens.
    public var description: String { count == 1 ? "1 bearer token" : "\(count) bearer tokens" }

    /// The count only, so that `dump` and debuggers show no token either.
    public var customMirror: Mirror { Mirror(self, children: ["count": count]) }

    /// Whether `presented` is one of the tokens. Every token is compared, and each comparison
    /// reads every byte presented: the time taken grows with the length presented and the
    /// number of tokens, never with how much of a token a guess got right. Whether a guess has
    /// a token's length is all its timing could tell, by an instruction or two.
    func accepts(_ presented: [UInt8]) -> Bool {
        var accepted = false
        for token in tokens {
            let matched = Self.matches(presented, token)
            accepted = accepted || matched
        }
        return accepted
    }

    /// `presented == token`, without an early exit: each byte presented is compared with a
    /// byte of the token (cycling through it, so that a longer guess reads no further), and
    /// the differences are gathered before one look at them.
    static func matches(_ presented: [UInt8], _ token: [UInt8]) -> Bool {
        guard !presented.isEmpty, !token.isEmpty else { return false }
        var difference: UInt8 = presented.count == token.count ? 0 : 1
        for index in presented.indices {
            difference |= presented[index] ^ token[index % token.count]
        }
        return difference == 0
    }

    /// `text` without the spaces, tabs and carriage return around it.
    static func trimmed(_ text: Substring.UTF8View) -> Substring.UTF8View {
        let blank: Set<UInt8> = [UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\r")]
        var text = text
        while let first = text.first, blank.contains(first) { text.removeFirst() }
        while let last = text.last, blank.contains(last) { text.removeLast() }
        return text
    }

    /// RFC 6750's `b64token`: `1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="`.
    static func isToken(_ text: some Collection<UInt8>) -> Bool {
        let body = text.reversed().drop { $0 == UInt8(ascii: "=") }
        return !body.isEmpty && body.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
            case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "+"), UInt8(ascii: "/"): true
            default: false
            }
        }
    }
}
#endif
