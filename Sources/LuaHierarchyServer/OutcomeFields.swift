#if Server
/// The top-level `status` and `kind` of an outcome, for its access log line: read by
/// skipping over the other members (an object id or a large value is stepped over, not
/// parsed), in one pass over the text.
enum OutcomeFields {
    struct Fields: Equatable {
        var status: String?
        var kind: String?
    }

    static func read(_ outcome: [UInt8]) -> Fields {
        var status: String?, kind: String?
        var index = 0, depth = 0
        var key: ArraySlice<UInt8>?
        var expectingKey = false
        while index < outcome.count {
            let byte = outcome[index]
            switch byte {
            case UInt8(ascii: "{"):
                depth += 1
                expectingKey = depth == 1
                index += 1
            case UInt8(ascii: "["):
                depth += 1
                index += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                depth -= 1
                index += 1
            case UInt8(ascii: ","):
                expectingKey = depth == 1
                index += 1
            case UInt8(ascii: "\""):
                let start = index + 1
                index = start
                while index < outcome.count && outcome[index] != UInt8(ascii: "\"") {
                    index += outcome[index] == UInt8(ascii: "\\") ? 2 : 1
                }
                let text = outcome[start..<min(index, outcome.count)]
                index += 1
                guard depth == 1 else { continue }
                if expectingKey {
                    key = text
                    expectingKey = false
                } else if let name = key {
                    if name.elementsEqual("status".utf8) { status = String(decoding: text, as: UTF8.self) }
                    if name.elementsEqual("kind".utf8) { kind = String(decoding: text, as: UTF8.self) }
                    key = nil
                    if status != nil && kind != nil { return Fields(status: status, kind: kind) }
                }
            default:
                index += 1
            }
        }
        return Fields(status: status, kind: kind)
    }
}
#endif
