/// Text a host prints on a script's behalf (contract §7): messages, types, paths, tracebacks and
/// warnings come from scripts, so before they reach a terminal their control characters are
/// escaped (no escape sequence, carriage return or NUL a script chose reaches the terminal)
/// and their size is bounded (a 100 MB message prints as its first few KiB).
package enum PrintableText {
    /// One field on one line: every control character escaped, `\n` included, and at most
    /// `limit` characters (the rest is counted, not printed).
    public static func field(_ text: String, limit: Int = 2000) -> String {
        escape(text, keepingLayout: false, limit: limit)
    }

    /// A block of lines the host laid out: `\n` and `\t` are kept, every other control
    /// character is escaped; each line is bounded by `lineLimit` characters and the block by
    /// `lineCount` lines.
    public static func block(_ text: String, lineLimit: Int = 4000, lineCount: Int = 400) -> String {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        var tail: String?
        if lines.count > lineCount {
            tail = "… (\(lines.count - lineCount) more lines)"
            lines = Array(lines.prefix(lineCount))
        }
        var result = lines.map { escape(String($0), keepingLayout: true, limit: lineLimit) }
        if let tail { result.append(tail) }
        return result.joined(separator: "\n")
    }

    /// `limit` counts what is written (an escape is several characters), so the result is at
    /// most `limit` characters plus the count of the rest, which counts the input's
    /// characters not shown; an escape is never cut.
    private static func escape(_ text: String, keepingLayout: Bool, limit: Int) -> String {
        // Most text is printable ASCII within the limit: it stays as it is.
        if text.utf8.count <= limit && isPrintableASCII(text) { return text }
        var result = ""
        var count = 0
        var scalars = text.unicodeScalars.makeIterator()
        while let scalar = scalars.next() {
            if count >= limit {
                var rest = 1
                while scalars.next() != nil { rest += 1 }
                result += "… (\(rest) more characters)"
                break
            }
            let written: String
            switch scalar.value {
            case 0x09 where keepingLayout:
                result.unicodeScalars.append(scalar)
                count += 1
                continue
            case 0x09: written = "\\t"
            case 0x0A: written = "\\n"
            case 0x0D: written = "\\r"
            case 0x00..<0x20, 0x7F, 0x80..<0xA0, 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069:
                // C0 and C1 controls, DEL, line separators and bidirectional overrides.
                let hex = String(scalar.value, radix: 16, uppercase: true)
                written = scalar.value < 0x100 ? "\\x" + (hex.count < 2 ? "0" : "") + hex : "\\u{" + hex + "}"
            default:
                result.unicodeScalars.append(scalar)
                count += 1
                continue
            }
            result += written
            count += written.unicodeScalars.count
        }
        return result
    }

    /// Whether every byte of `text` is printable ASCII (space to `~`).
    static func isPrintableASCII(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in
            for byte in bytes where byte < 0x20 || byte > 0x7E { return false }
            return true
        }
    }
}
