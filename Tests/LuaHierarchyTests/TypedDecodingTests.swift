import Testing
@testable import LuaHierarchy

/// How typed responders and `ValueDecoder` read values: a small map searched key by key, a
/// large one by hash; a decoding's memory reused for the next value of the same type at the
/// same depth.
@Suite struct TypedDecodingTests {
    struct Reading: Decodable, Equatable {
        let K: Int
        let name: String
        let note: String?
    }

    /// `fields` with fields added up to `count`.
    private func map(_ fields: [String: Value], padTo count: Int) -> Value {
        var all = fields
        for index in 0..<(count - fields.count) { all["pad\(index)"] = .int(Int64(index)) }
        return .map(all)
    }

    @Test func smallAndLargeMapsReadTheSameFields() throws {
        for count in [3, 6, 7, 12] {
            let full = map(["K": 1, "name": "n", "note": "x"], padTo: count)
            #expect(try full.decoded(as: Reading.self) == Reading(K: 1, name: "n", note: "x"))
            // An optional field missing, or nil, reads as nil.
            let noNote = map(["K": 2, "name": "m"], padTo: count)
            #expect(try noNote.decoded(as: Reading.self) == Reading(K: 2, name: "m", note: nil))
            // A key equal to another as Swift compares strings is that key: the kelvin sign is `K`.
            let kelvin = map(["\u{212A}": 3, "name": "k"], padTo: count)
            #expect(try kelvin.decoded(as: Reading.self) == Reading(K: 3, name: "k", note: nil))
            // A required field missing is the same error, with its key.
            let missing = map(["K": 4], padTo: count)
            #expect {
                try missing.decoded(as: Reading.self)
            } throws: { error in
                guard case DecodingError.keyNotFound(let key, let context) = error else { return false }
                return key.stringValue == "name" && context.debugDescription == "no field name" && context.codingPath.isEmpty
            }
        }
    }

    @Test func aDecoderFitsInAnExistentialsInlineRoom() throws {
        #expect(MemoryLayout<ValueDecoding>.size <= 3 * MemoryLayout<Int>.size)
        // Each kind of value, held as a map's fields or in a box, is read back as it was.
        struct Raw: Decodable {
            let value: Value
            init(from decoder: any Decoder) throws { value = try Value(from: decoder) }
        }
        let values: [Value] = [nil, true, 7, 2.5, "s", .bytes([0, 1]), [1, "x"], ["a": ["b": 1]], [:]]
        for value in values {
            #expect(try value.decoded(as: Raw.self).value == value)
            #expect(try Value.map(["raw": value]).decoded(as: [String: Raw].self)["raw"]?.value == value)
        }
    }

    /// Counts its live instances (one test reads it, on one thread).
    final class Tracked: Decodable {
        nonisolated(unsafe) static var live = 0
        let id: Int
        init(from decoder: any Decoder) throws {
            id = try Int(from: decoder)
            Self.live += 1
        }
        deinit { Self.live -= 1 }
    }

    struct Order: Decodable, Equatable {
        struct Line: Decodable, Equatable {
            let sku: String
            let quantity: Int
        }
        let id: Int
        let lines: [Line]
        let coupon: String?
    }

    struct Holder: Decodable {
        let id: Int
        let tracked: Tracked
    }

    @Test func eachDispatchDecodesItsOwnValueIntoTheMemoryKept() throws {
        let fixture = try Fixture()
        let node = try fixture.hierarchy.root.child("orders")
        var seen: [Order] = []
        var held: [Int] = []
        node.receiveEvent(Order.self) { order in
            seen.append(order)
            return .notHandled
        }.receiveEvent(Holder.self) { holder in
            held.append(holder.tracked.id)
            return .notHandled
        }
        let orders = [
            Order(id: 1, lines: [.init(sku: "a", quantity: 2)], coupon: nil),
            Order(id: 2, lines: [], coupon: "SAVE"),
            Order(id: 3, lines: [.init(sku: "b", quantity: 1), .init(sku: "c", quantity: 5)], coupon: nil),
        ]
        Tracked.live = 0
        for order in orders {
            let lines: [Value] = order.lines.map { ["sku": .string($0.sku), "quantity": .int(Int64($0.quantity))] }
            var event: [String: Value] = ["type": "Order", "id": .int(Int64(order.id)), "lines": .array(lines), "tracked": .int(Int64(order.id))]
            if let coupon = order.coupon { event["coupon"] = .string(coupon) }
            _ = try fixture.hierarchy.trigger(.map(event), at: node)
            // Only the last value's decoding is kept.
            #expect(Tracked.live == 1)
            // One that does not decode passes the responders; the one kept is given up.
            _ = try fixture.hierarchy.trigger(["type": "Order", "id": "none", "lines": [], "tracked": "none"], at: node)
            #expect(Tracked.live == 0)
        }
        #expect(seen == orders)
        #expect(held == [1, 2, 3])
    }

    struct Count: Decodable { let n: Int }
    struct Label: Decodable { let n: String }

    @Test func typesWithTheSameFieldNamesKeepTheirOwnDecodings() throws {
        let fixture = try Fixture()
        let parent = try fixture.hierarchy.root.child("parent")
        let child = try parent.child("child")
        var seen: [String] = []
        child.receiveEvent(Count.self) { count in
            seen.append("count \(count.n)")
            return .notHandled
        }.receiveEvent(Label.self) { label in
            seen.append("label \(label.n)")
            return .notHandled
        }
        parent.receiveEvent(Label.self) { label in
            seen.append("parent label \(label.n)")
            return .notHandled
        }.receiveEvent(Count.self) { count in
            seen.append("parent count \(count.n)")
            return .notHandled
        }
        for value: Value in [1, "one", 2, "two"] {
            _ = try fixture.hierarchy.trigger(["type": "T", "n": value], at: child)
        }
        #expect(seen == [
            "count 1", "parent count 1", "label one", "parent label one",
            "count 2", "parent count 2", "label two", "parent label two",
        ])
    }

    @Test func aTypedResponderThatDispatchesAgainGetsItsOwnValue() throws {
        let fixture = try Fixture()
        let node = try fixture.hierarchy.root.child("echo")
        var seen: [Int] = []
        node.receiveEvent(Count.self) { [unowned hierarchy = fixture.hierarchy, unowned node] count in
            if count.n < 3 { _ = try hierarchy.trigger(["type": "T", "n": .int(Int64(count.n + 1))], at: node) }
            seen.append(count.n)
            return .notHandled
        }
        _ = try fixture.hierarchy.trigger(["type": "T", "n": 1], at: node)
        _ = try fixture.hierarchy.trigger(["type": "T", "n": 7], at: node)
        #expect(seen == [3, 2, 1, 7])
    }
}

/// The keyed containers an engine keeps for the maps its typed responders decode.
@Suite struct KeptContainerTests {
    struct Tap: Decodable, Equatable {
        let type: String
        let x: Int
    }

    @Test func aKeptContainerIsLentAgainForEachMap() throws {
        let kept = KeptContainers()
        for x in 1...3 {
            #expect(try kept.decode(Tap.self, from: ["type": "Tap", "x": .int(Int64(x))]) == Tap(type: "Tap", x: x))
        }
        // One container kept for the key type, lent again for the second and third map: the
        // standard library's layout is the one `KeptContainers` checks for.
        #expect(kept.keptCount == 1 && kept.reuses == 2)
        // What does not decode throws as `ValueDecoder` does.
        #expect(throws: DecodingError.self) { try kept.decode(Tap.self, from: ["type": "Tap"]) }
        #expect(throws: DecodingError.self) { try kept.decode(Tap.self, from: ["type": "Tap", "x": "1"]) }
        #expect(throws: DecodingError.self) { try kept.decode(Tap.self, from: [1, 2]) }
    }

    /// Asks for its keyed container twice, and keeps the first.
    final class Twice: Decodable {
        let first: KeyedDecodingContainer<CodingKeys>
        let x: Int
        init(from decoder: any Decoder) throws {
            first = try decoder.container(keyedBy: CodingKeys.self)
            x = try decoder.container(keyedBy: CodingKeys.self).decode(Int.self, forKey: .x)
        }
        enum CodingKeys: String, CodingKey { case x }
        var kept: Int { (try? first.decode(Int.self, forKey: .x)) ?? -1 }
    }

    @Test func aContainerStillHeldIsNeverLentAgain() throws {
        let kept = KeptContainers()
        let one = try kept.decode(Twice.self, from: ["x": 1])
        let two = try kept.decode(Twice.self, from: ["x": 2])
        let three = try kept.decode(Twice.self, from: ["x": 3])
        // Each decoding's containers read its own map, then and later.
        #expect([one.x, two.x, three.x] == [1, 2, 3])
        #expect([one.kept, two.kept, three.kept] == [1, 2, 3])
    }

    struct Raw: Decodable {
        let value: Value
        init(from decoder: any Decoder) throws { value = try Value(from: decoder) }
    }

    @Test func everyReadingOfTheOfferedMapIsAsValueDecodersOwn() throws {
        let kept = KeptContainers()
        let map: Value = ["type": "T", "n": 1, "list": [1, 2], "inner": ["a": true]]
        #expect(try kept.decode(Value.self, from: map) == map)
        #expect(try kept.decode(Raw.self, from: map).value == map)
        #expect(try kept.decode([String: Value].self, from: map) == map.mapValue)
        #expect(try kept.decode([Int].self, from: [:]) == [])
        #expect(try kept.decode(Raw.self, from: "text").value == "text")
        struct Outer: Decodable, Equatable {
            struct Inner: Decodable, Equatable { let a: Bool }
            let n: Int
            let list: [Int]
            let inner: Inner
        }
        #expect(try kept.decode(Outer.self, from: map) == Outer(n: 1, list: [1, 2], inner: .init(a: true)))
    }

    @Test func typedRespondersOfEveryKindReadTheirValueThroughTheEngine() throws {
        let fixture = try Fixture()
        let node = try fixture.hierarchy.root.child("n")
        var seen: [String] = []
        node.receiveEvent(Value.self) { value in
            seen.append("value \(value["n"] ?? nil)")
            return .notHandled
        }.receiveEvent([String: Value].self) { fields in
            seen.append("fields \(fields.count)")
            return .notHandled
        }.receiveEvent(Raw.self) { raw in
            seen.append("raw \(raw.value["n"] ?? nil)")
            return .notHandled
        }.receiveEvent(Twice.self) { twice in
            seen.append("twice \(twice.x) \(twice.kept)")
            return .notHandled
        }
        for n: Int64 in [1, 2] { _ = try fixture.hierarchy.trigger(["type": "T", "n": .int(n), "x": .int(n * 10)], at: node) }
        #expect(seen == [
            "value 1", "fields 3", "raw 1", "twice 10 10",
            "value 2", "fields 3", "raw 2", "twice 20 20",
        ])
    }
}

/// What `ValueDecoder` answers at the edges: keys that read as one, numbers too large for the
/// type, reading past the end, nesting without end.
@Suite struct DecoderEdgeTests {
    /// The keys its keyed container lists, in the order listed.
    struct ListedKeys: Decodable {
        let keys: [String]
        init(from decoder: any Decoder) throws {
            keys = try decoder.container(keyedBy: ValueCodingKey.self).allKeys.map(\.stringValue)
        }
    }

    @Test func keysThatReadAsOneGiveTheSameAnswerOnEveryRun() throws {
        let spellings: Value = ["1": "a", "01": "b", "+1": "c", "001": "d", "x": "e", "é": "f", "Z": "g"]
        // Listed by their UTF-8 bytes, whatever the map's order in this process.
        #expect(try spellings.decoded(as: ListedKeys.self).keys == ["+1", "001", "01", "1", "Z", "x", "é"])
        #expect(try KeptContainers().decode(ListedKeys.self, from: spellings).keys == ["+1", "001", "01", "1", "Z", "x", "é"])
        // A dictionary keeps the last of the keys that read as one: the plain spelling.
        let numbered: Value = ["1": "a", "01": "b", "+1": "c", "001": "d", "2": "e"]
        #expect(try numbered.decoded(as: [Int: String].self) == [1: "a", 2: "e"])
        #expect(try Value.map(["m": numbered]).decoded(as: [String: [Int: String]].self) == ["m": [1: "a", 2: "e"]])
        #expect(try Value.map(["01": "b", "+1": "c"]).decoded(as: [Int: String].self) == [1: "b"])
    }

    struct Ratio: Decodable, Equatable {
        let ratio: Float
        let spare: Float?
    }

    /// The path and description of a `typeMismatch`, or nil for any other answer.
    private func mismatch<T: Decodable>(_ type: T.Type, _ value: Value) -> (path: [String], description: String)? {
        guard case .failure(DecodingError.typeMismatch(_, let context)) = Result(catching: { try value.decoded(as: type) }) else {
            return nil
        }
        return (context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }, context.debugDescription)
    }

    @Test func aFiniteNumberTooLargeForAFloatIsAMismatch() throws {
        let tooLarge = mismatch(Ratio.self, ["ratio": 1e300])
        #expect(tooLarge?.path == ["ratio"] && tooLarge?.description == "1e+300 does not fit in Float")
        #expect(mismatch(Ratio.self, ["ratio": 1, "spare": -1e39])?.path == ["spare"])
        #expect(mismatch([Float].self, [1, 1e300])?.path == ["1"])
        #expect(mismatch(Float.self, 1e300)?.path == [])
        // What fits reads as before, rounded; infinity and NaN given as such stay what they are.
        let largest = Double(Float.greatestFiniteMagnitude)
        #expect(try Value.map(["ratio": .double(largest), "spare": .int(Int64.max)]).decoded(as: Ratio.self)
            == Ratio(ratio: .greatestFiniteMagnitude, spare: Float(Int64.max)))
        #expect(try Value.double(-.infinity).decoded(as: Float.self) == -.infinity)
        #expect(try Value.map(["ratio": .double(.infinity)]).decoded(as: Ratio.self).ratio == .infinity)
        #expect(try Value.double(.nan).decoded(as: Float.self).isNaN)
        #expect(try Value.double(1e300).decoded(as: Double.self) == 1e300)
    }

    /// Reads a `T` more than its array holds.
    struct PastTheEnd<T: Decodable>: Decodable {
        init(from decoder: any Decoder) throws {
            var items = try decoder.unkeyedContainer()
            while !items.isAtEnd { _ = try items.decode(T.self) }
            _ = try items.decode(T.self)
        }
    }

    @Test func readingPastTheEndNamesTheTypeAskedFor() throws {
        func missing<T: Decodable>(_ type: T.Type, in value: Value) -> (type: Any.Type, path: Int)? {
            guard case .failure(DecodingError.valueNotFound(let missing, let context)) = Result(catching: {
                try value.decoded(as: PastTheEnd<T>.self)
            }) else { return nil }
            return (missing, context.codingPath.count)
        }
        #expect(missing(Int.self, in: [1, 2])?.type == Int.self)
        #expect(missing(String.self, in: [])?.type == String.self)
        #expect(missing(Ratio.self, in: [["ratio": 1]])?.type == Ratio.self)
        #expect(missing([Int].self, in: [[1]])?.type == [Int].self)
        #expect(missing(Value.self, in: [1])?.type == Value.self)
        #expect(missing(Int.self, in: [1])?.path == 0)
    }

    /// A list of lists, as deep as the value is.
    struct Nest: Decodable {
        let depth: Int
        init(from decoder: any Decoder) throws {
            var items = try decoder.unkeyedContainer()
            depth = items.isAtEnd ? 0 : try items.decode(Nest.self).depth + 1
        }
    }

    /// A map holding the next, as deep as the value is, with a number at the bottom.
    final class Chain: Decodable {
        let next: Chain?
        let n: Int?
    }

    /// `tables` maps, each in the one before, the innermost holding `n`.
    private func chain(_ tables: Int) -> Value {
        var value: Value = ["n": 1]
        for _ in 1..<tables { value = ["next": value] }
        return value
    }

    /// `innermost` inside `levels` arrays.
    private func nested(_ levels: Int, around innermost: Value = []) -> Value {
        var value = innermost
        for _ in 0..<levels { value = [value] }
        return value
    }

    @Test func nestingIsBoundedByThePayloadDepth() throws {
        let limit = ValueDecoder.depthLimit
        #expect(limit == LuaHost.maxPayloadDepth)
        // As deep as the limit reads; one more is refused at the key that goes too deep.
        #expect(try nested(limit).decoded(as: Nest.self).depth == limit)
        for value in [nested(limit + 1), nested(30_000)] {
            #expect {
                try value.decoded(as: Nest.self)
            } throws: { error in
                guard case DecodingError.dataCorrupted(let context) = error else { return false }
                return context.codingPath.count == limit + 1 && context.codingPath.allSatisfy { $0.intValue == 0 }
                    && context.debugDescription == "values nested deeper than \(limit)"
            }
        }
        // Maps count as arrays do: the deepest value Lua hands over (200 tables, a number in the
        // innermost) decodes, in a typed responder's kept container too.
        var decoded = try KeptContainers().decode(Chain.self, from: chain(limit))
        var tables = 1
        while let next = decoded.next {
            decoded = next
            tables += 1
        }
        #expect(tables == limit && decoded.n == 1)
        // The limit is on maps and arrays (a number is read in place): the innermost of 201 maps
        // is 200 keys deep, of 202, 201.
        #expect(try chain(limit + 1).decoded(as: Chain.self).next != nil)
        #expect {
            try chain(limit + 2).decoded(as: Chain.self)
        } throws: { error in
            guard case DecodingError.dataCorrupted(let context) = error else { return false }
            return context.codingPath.count == limit + 1 && context.codingPath.allSatisfy { $0.stringValue == "next" }
        }
        // Values themselves are taken as they are, however deep.
        #expect(try nested(30_000).decoded(as: [Value].self).count == 1)
    }
}
