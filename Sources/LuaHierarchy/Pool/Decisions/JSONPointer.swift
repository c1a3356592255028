/// JSON pointers (RFC 6901) masked in a record's bytes: the value a pointer names is replaced
/// by `"<masked>"`, everything else copied as it is (no parse into values, no re-encoding).
enum JSONPointer {
    /// `/request/event/user~1id` → `["request", "event", "user/id"]`; `""` → `[]` (the whole).
    static func tokens(_ pointer: String) -> [String] {
        guard !pointer.isEmpty else { return [] }
        return pointer.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map {
            String($0).replacing("~1", with: "/").replacing("~0", with: "~")
        }
    }

    static let masked = Array(#""<masked>""#.utf8)

    /// `record` with the values at `pointers` (as `tokens` gave them) masked; a record that
    /// is not JSON is returned as it is (records are made valid).
    static func mask(_ record: [UInt8], at pointers: [[String]]) -> [UInt8] {
        var scanner = Scanner(input: record)
        var output: [UInt8] = []
        output.reserveCapacity(record.count)
        guard scanner.copyValue(into: &output, candidates: pointers, depth: 0) else { return record }
        output.append(contentsOf: record[scanner.position...])
        return output
    }

    private struct Scanner {
        let input: [UInt8]
        var position = 0

        init(input: [UInt8]) { self.input = input }

        private var current: UInt8? { position < input.count ? input[position] : nil }

        private mutating func copyWhitespace(into output: inout [UInt8]) {
            while let byte = current, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 {
                output.append(byte)
                position += 1
            }
        }

        /// Copies (or masks) the value at `position`; false when the input is not JSON.
        mutating func copyValue(into output: inout [UInt8], candidates: [[String]], depth: Int) -> Bool {
            copyWhitespace(into: &output)
            if candidates.contains(where: { $0.count == depth }) {
                guard skipValue() else { return false }
                output.append(contentsOf: JSONPointer.masked)
                return true
            }
            if candidates.isEmpty {
                let start = position
                guard skipValue() else { return false }
                output.append(contentsOf: input[start..<position])
                return true
            }
            switch current {
            case UInt8(ascii: "{"):
                output.append(UInt8(ascii: "{"))
                position += 1
                copyWhitespace(into: &output)
                if current == UInt8(ascii: "}") {
                    output.append(UInt8(ascii: "}"))
                    position += 1
                    return true
                }
                while true {
                    copyWhitespace(into: &output)
                    let keyStart = position
                    guard current == UInt8(ascii: "\""), skipString() else { return false }
                    let key = Self.decodeKey(input[keyStart..<position])
                    output.append(contentsOf: input[keyStart..<position])
                    copyWhitespace(into: &output)
                    guard current == UInt8(ascii: ":") else { return false }
                    output.append(UInt8(ascii: ":"))
                    position += 1
                    let next = candidates.filter { $0[depth] == key }
                    guard copyValue(into: &output, candidates: next, depth: depth + 1) else { return false }
                    copyWhitespace(into: &output)
                    guard let byte = current else { return false }
                    output.append(byte)
                    position += 1
                    if byte == UInt8(ascii: "}") { return true }
                    guard byte == UInt8(ascii: ",") else { return false }
                }
            case UInt8(ascii: "["):
                output.append(UInt8(ascii: "["))
                position += 1
                copyWhitespace(into: &output)
                if current == UInt8(ascii: "]") {
                    output.append(UInt8(ascii: "]"))
                    position += 1
                    return true
                }
                var index = 0
                while true {
                    let next = candidates.filter { $0[depth] == String(index) }
                    guard copyValue(into: &output, candidates: next, depth: depth + 1) else { return false }
                    copyWhitespace(into: &output)
                    guard let byte = current else { return false }
                    output.append(byte)
                    position += 1
                    if byte == UInt8(ascii: "]") { return true }
                    guard byte == UInt8(ascii: ",") else { return false }
                    index += 1
                }
            default:
                let start = position
                guard skipValue() else { return false }
                output.append(contentsOf: input[start..<position])
                return true
            }
        }

        /// A key's text: its escapes read as JSON reads them.
        private static func decodeKey(_ quoted: ArraySlice<UInt8>) -> String {
            if !quoted.contains(UInt8(ascii: "\\")) { return String(decoding: quoted.dropFirst().dropLast(), as: UTF8.self) }
            return Array(quoted).withUnsafeBytes { (try? JSON.parse($0))?.stringValue } ?? ""
        }

        private mutating func skipWhitespace() {
            while let byte = current, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { position += 1 }
        }

        private mutating func skipString() -> Bool {
            position += 1
            while let byte = current {
                position += 1
                if byte == UInt8(ascii: "\\") {
                    position += 1
                } else if byte == UInt8(ascii: "\"") {
                    return true
                }
            }
            return false
        }

        /// Past one value (nested ones counted by their brackets, strings skipped whole).
        private mutating func skipValue() -> Bool {
            skipWhitespace()
            guard let first = current else { return false }
            if first == UInt8(ascii: "\"") { return skipString() }
            if first == UInt8(ascii: "{") || first == UInt8(ascii: "[") {
                var depth = 0
                while let byte = current {
                    if byte == UInt8(ascii: "\"") {
                        guard skipString() else { return false }
                        continue
                    }
                    position += 1
                    if byte == UInt8(ascii: "{") || byte == UInt8(ascii: "[") { depth += 1 }
                    if byte == UInt8(ascii: "}") || byte == UInt8(ascii: "]") {
                        depth -= 1
                        if depth == 0 { return true }
                    }
                }
                return false
            }
            let start = position
            while let byte = current, byte != UInt8(ascii: ","), byte != UInt8(ascii: "}"), byte != UInt8(ascii: "]"),
                byte != 0x20, byte != 0x0A, byte != 0x0D, byte != 0x09
            {
                position += 1
            }
            return position > start
        }
    }
}
