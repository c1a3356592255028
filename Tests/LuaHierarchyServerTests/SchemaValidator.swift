#if Server
import Foundation
import LuaHierarchy

/// JSON Schema (2020-12, as OpenAPI 3.1 uses it) for the keywords docs/openapi.json uses, over
/// the library's own `Value`s (read by `JSON.parse`, so no YAML or schema package is needed):
/// enough to check the server's real answers against the document. A keyword it does not know
/// is a failure, never skipped: a document that starts using one fails its tests until the
/// validator learns it, instead of passing answers it did not check.
struct SchemaValidator {
    /// The whole document, for `$ref`s.
    let document: Value

    /// Keywords that only describe: read by people and tools, never checked.
    static let annotations: Set<String> = ["description", "title", "examples", "$comment", "deprecated"]
    /// Keywords checked here.
    static let assertions: Set<String> = [
        "$ref", "type", "properties", "required", "additionalProperties", "enum", "const", "items",
        "oneOf", "anyOf", "allOf", "not", "minimum", "minLength", "maxLength", "pattern",
    ]

    /// Why `value` does not match `schema`, one line per failure, each naming where in the value
    /// (`$.error.type`); empty when it matches.
    func failures(of value: Value, against schema: Value, at place: String = "$") -> [String] {
        if case .bool(let accepts) = schema { return accepts ? [] : ["\(place): no value is allowed here"] }
        guard case .map(let keywords) = schema else { return ["\(place): the schema is not an object: \(schema)"] }
        var found: [String] = []
        for (keyword, argument) in keywords.sorted(by: { $0.key < $1.key }) {
            if Self.annotations.contains(keyword) { continue }
            guard Self.assertions.contains(keyword) else {
                found.append("\(place): the validator does not know the keyword \(keyword)")
                continue
            }
            found += check(keyword, argument, value, in: keywords, at: place)
        }
        return found
    }

    private func check(_ keyword: String, _ argument: Value, _ value: Value, in schema: [String: Value], at place: String) -> [String] {
        switch keyword {
        case "$ref":
            guard let target = argument.stringValue.flatMap(resolve) else { return ["\(place): $ref \(argument) leads nowhere"] }
            return failures(of: value, against: target, at: place)
        case "type":
            let names = argument.arrayValue?.compactMap(\.stringValue) ?? argument.stringValue.map { [$0] } ?? []
            return names.contains { Self.value(value, isOfType: $0) } ? [] : ["\(place): \(Self.brief(value)) is not of type \(names.joined(separator: " or "))"]
        case "properties":
            guard case .map(let members) = value, let properties = argument.mapValue else { return [] }
            return properties.sorted(by: { $0.key < $1.key }).flatMap { name, propertySchema in
                members[name].map { failures(of: $0, against: propertySchema, at: "\(place).\(name)") } ?? []
            }
        case "required":
            guard case .map(let members) = value else { return [] }
            return (argument.arrayValue ?? []).compactMap(\.stringValue).filter { members[$0] == nil }.map { "\(place): \($0) is required" }
        case "additionalProperties":
            guard case .map(let members) = value else { return [] }
            let named = Set(schema["properties"]?.mapValue?.keys.map { $0 } ?? [])
            return members.keys.sorted().filter { !named.contains($0) }.flatMap { name in
                if case .bool(false) = argument { return ["\(place): \(name) is not a member this object may have"] }
                return failures(of: members[name]!, against: argument, at: "\(place).\(name)")
            }
        case "enum":
            let allowed = argument.arrayValue ?? []
            return allowed.contains { Self.equal($0, value) } ? [] : ["\(place): \(Self.brief(value)) is not one of \(allowed.map(Self.brief).joined(separator: ", "))"]
        case "const":
            return Self.equal(argument, value) ? [] : ["\(place): \(Self.brief(value)) is not \(Self.brief(argument))"]
        case "items":
            guard case .array(let items) = value else { return [] }
            return items.enumerated().flatMap { failures(of: $0.element, against: argument, at: "\(place)[\($0.offset)]") }
        case "allOf":
            return (argument.arrayValue ?? []).flatMap { failures(of: value, against: $0, at: place) }
        case "anyOf", "oneOf":
            let each = (argument.arrayValue ?? []).map { failures(of: value, against: $0, at: place) }
            let matched = each.filter(\.isEmpty).count
            if keyword == "anyOf" ? matched >= 1 : matched == 1 { return [] }
            let why = matched > 1 ? "matches \(matched) of them" : "matches none: " + each.map { $0.joined(separator: "; ") }.joined(separator: " | ")
            return ["\(place): \(keyword) of \(each.count) schemas \(why)"]
        case "not":
            return failures(of: value, against: argument).isEmpty ? ["\(place): \(Self.brief(value)) matches a schema it must not"] : []
        case "minimum":
            guard let number = value.doubleValue, Self.isNumber(value), let bound = argument.doubleValue else { return [] }
            return number >= bound ? [] : ["\(place): \(number) is below \(bound)"]
        case "minLength", "maxLength":
            guard case .string(let text) = value, let bound = argument.intValue.map(Int.init) else { return [] }
            let length = text.unicodeScalars.count
            let fits = keyword == "minLength" ? length >= bound : length <= bound
            return fits ? [] : ["\(place): \(length) characters, \(keyword) \(bound)"]
        case "pattern":
            guard case .string(let text) = value, let pattern = argument.stringValue else { return [] }
            guard let expression = try? NSRegularExpression(pattern: pattern) else { return ["\(place): the pattern \(pattern) does not compile"] }
            let matches = expression.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
            return matches ? [] : ["\(place): \(Self.brief(value)) does not match \(pattern)"]
        default:
            return ["\(place): \(keyword) is listed but not checked"]
        }
    }

    /// A local reference (`#/components/schemas/Outcome`), or nil.
    func resolve(_ reference: String) -> Value? {
        guard reference.hasPrefix("#/") else { return nil }
        var node = document
        for part in reference.dropFirst(2).split(separator: "/", omittingEmptySubsequences: false) {
            let key = part.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
            guard let next = node[key] else { return nil }
            node = next
        }
        return node
    }

    /// Follows `value`'s `$ref` when it is a Reference Object (a response, a header).
    func followed(_ value: Value) -> Value? {
        guard let reference = value["$ref"]?.stringValue else { return value }
        return resolve(reference).flatMap(followed)
    }

    /// Where `schema` (and every schema inside it) uses a keyword this validator does not know,
    /// or a `$ref` that leads nowhere: what would make `failures` unreliable. Each named once.
    func problems(in schema: Value, at place: String) -> [String] {
        guard case .map(let keywords) = schema else {
            if case .bool = schema { return [] }
            return ["\(place): not a schema"]
        }
        var found: [String] = []
        for (keyword, argument) in keywords.sorted(by: { $0.key < $1.key }) {
            let inner = "\(place)/\(keyword)"
            switch keyword {
            case _ where Self.annotations.contains(keyword): continue
            case "$ref":
                if argument.stringValue.flatMap(resolve) == nil { found.append("\(inner): leads nowhere") }
            case "properties":
                for (name, property) in (argument.mapValue ?? [:]).sorted(by: { $0.key < $1.key }) {
                    found += problems(in: property, at: "\(inner)/\(name)")
                }
            case "items", "not", "additionalProperties":
                found += problems(in: argument, at: inner)
            case "allOf", "anyOf", "oneOf":
                for (index, part) in (argument.arrayValue ?? []).enumerated() { found += problems(in: part, at: "\(inner)/\(index)") }
            case _ where Self.assertions.contains(keyword): continue
            default: found.append("\(inner): unknown keyword")
            }
        }
        return found
    }

    static func value(_ value: Value, isOfType name: String) -> Bool {
        switch (name, value) {
        case ("null", .null), ("boolean", .bool), ("string", .string), ("array", .array), ("object", .map): true
        case ("number", .int), ("number", .double), ("integer", .int): true
        case ("integer", .double(let number)): number.rounded() == number && number.isFinite
        default: false
        }
    }

    static func isNumber(_ value: Value) -> Bool {
        if case .int = value { return true }
        if case .double = value { return true }
        return false
    }

    /// JSON equality: 1 and 1.0 are the same number.
    static func equal(_ a: Value, _ b: Value) -> Bool {
        switch (a, b) {
        case (.int, .double), (.double, .int): a.doubleValue == b.doubleValue
        case (.array(let x), .array(let y)): x.count == y.count && zip(x, y).allSatisfy { equal($0, $1) }
        case (.map(let x), .map(let y)): x.count == y.count && x.allSatisfy { key, value in y[key].map { equal(value, $0) } ?? false }
        default: a == b
        }
    }

    /// A value, shortened for a message.
    static func brief(_ value: Value) -> String {
        let text = JSON.encode(value)
        return text.count > 80 ? String(text.prefix(77)) + "..." : text
    }
}
#endif
