import Testing
@testable import LuaHierarchy

/// Domains stick to tables (docs/decisions.md): a table that travelled as an event is refused as
/// an error, and the other way round, for as long as the table lives; the tag is kept by the
/// table's address (Sources/CLuaHost/tags.c) and goes when the allocator frees the table.
@Suite("Domain tags")
struct DomainTagTests {
    static let chain = """
        local root = hier.root
        root:handleEvent(function() end)
        root:handleError(function() end)
        local function refusedAsError(t) return not pcall(root.reportError, root, t) end
        local function refusedAsEvent(t) return not pcall(root.triggerEvent, root, t) end
        -- tags.c's hash in Lua's wrapping integers: where the probe for `address` starts among
        -- 2^bits slots, under `seed` (a global the tests that know it set).
        function hash(address, bits)
          local x = address ~ seed
          x = x ~ (x >> 33); x = x * 0xFF51AFD7ED558CCD
          x = x ~ (x >> 33); x = x * 0xC4CEB9FE1A85EC53
          x = x ~ (x >> 33)
          return x >> (64 - bits)
        end

        """

    @Test func aTagLastsAsLongAsItsTableThroughCollections() throws {
        let f = try Fixture()
        let printed = try f.output(
            Self.chain + """
                local event, error = {type = "Tap"}, {type = "Boom"}
                root:triggerEvent(event)
                root:reportError(error)
                for _ = 1, 3 do fullgc() end
                print(refusedAsError(event), refusedAsEvent(error))
                -- Each still goes as its own domain.
                print(root:triggerEvent(event).status, root:reportError(error).status)
                """)
        #expect(printed == ["true\ttrue", "handled\thandled"])
    }

    /// A table the allocator makes where a tagged one was freed is a new table: untagged. Without
    /// the allocator's forgetting, it would be refused as the freed table's domain.
    @Test func aTableMadeWhereATaggedOneWasFreedStartsUntagged() throws {
        let f = try Fixture()
        let printed = try f.output(
            Self.chain + """
                local t = {type = "Tap"}
                root:triggerEvent(t)
                local address = tostring(t)
                t = nil
                fullgc()
                -- Keep every table made, so the freed blocks are used up until that one comes back.
                local kept, found = {}, nil
                for i = 1, 200000 do
                  local u = {type = "Boom"}
                  if tostring(u) == address then found = u break end
                  kept[i] = u
                end
                print(found ~= nil, found and not refusedAsError(found), found and root:reportError(found).status)
                """)
        #expect(printed == ["true\ttrue\thandled"])
    }

    /// The set grows past its first slots and shrinks again as tables die; every live table keeps
    /// its tag through both.
    @Test func tagsSurviveTheSetGrowingAndShrinking() throws {
        let f = try Fixture()
        let start = f.hierarchy.domainTags
        try f.lua(
            Self.chain + """
                tables = {}
                for i = 1, 5000 do
                  tables[i] = {type = i % 2 == 0 and "Tap" or "Boom"}
                  if i % 2 == 0 then root:triggerEvent(tables[i]) else root:reportError(tables[i]) end
                end
                """)
        let grown = f.hierarchy.domainTags
        #expect(grown.tagged >= 5000)
        #expect(grown.slots >= 2 * grown.tagged && grown.slots > start.slots)
        let printed = try f.output(
            Self.chain + """
                local wrong = 0
                for i = 1, 5000 do
                  if i % 2 == 0 and not refusedAsError(tables[i]) then wrong = wrong + 1 end
                  if i % 2 == 1 and not refusedAsEvent(tables[i]) then wrong = wrong + 1 end
                end
                -- Keep one in ten.
                for i = 1, 5000 do if i % 10 ~= 0 then tables[i] = nil end end
                fullgc()
                print(wrong)
                """)
        #expect(printed == ["0"])
        let thinned = f.hierarchy.domainTags
        #expect(thinned.tagged < 1000)
        // The next tag shrinks the slots; the survivors keep their tags.
        let after = try f.output(
            Self.chain + """
                root:triggerEvent({type = "Tap"})
                local wrong = 0
                for i = 10, 5000, 10 do
                  if not refusedAsError(tables[i]) then wrong = wrong + 1 end
                  if root:triggerEvent(tables[i]).status ~= "handled" then wrong = wrong + 1 end
                end
                tables = nil
                print(wrong)
                """)
        #expect(after == ["0"])
        #expect(f.hierarchy.domainTags.slots < grown.slots)
        f.hierarchy.collectGarbage()
        #expect(f.hierarchy.domainTags.tagged < thinned.tagged)
    }

    /// Where a probe starts is a keyed hash with a secret seed per state.
    @Test func eachStateDrawsItsOwnSeed() throws {
        let a = try Fixture(), b = try Fixture()
        #expect(a.hierarchy.domainTags.seed != b.hierarchy.domainTags.seed)
    }

    /// A script sees its tables' addresses (`tostring`). One that knew the seed, as this test
    /// does, could keep the tables whose probes start in the first eighth of the slots and pile
    /// them into one run, each tag then walking all of it. The tag that meets a long probe draws
    /// a new seed, so the run scatters: without that, the longest probe here is in the
    /// hundreds and the seed stays what it was.
    @Test func tablesChosenToCrowdOneRunDoNotMakeProbesLong() throws {
        let f = try Fixture()
        let seed: UInt64 = 0x0123_4567_89AB_CDEF
        f.hierarchy.setDomainTagSeed(seed)
        let printed = try f.output(
            Self.chain + """
                seed = \(Int64(bitPattern: seed))
                local function eighth(address) return hash(address, 3) end
                crowd = {}
                local others = {}   -- kept, so no address comes round again
                while #crowd < 3000 do
                  local t = {type = "Tap"}
                  if eighth(tonumber(tostring(t):match("0x(%x+)"), 16)) == 0 then crowd[#crowd + 1] = t
                  else others[#others + 1] = t end
                end
                others = nil
                for _, t in ipairs(crowd) do root:triggerEvent(t) end
                local wrong = 0
                for _, t in ipairs(crowd) do if not refusedAsError(t) then wrong = wrong + 1 end end
                print(wrong)
                """)
        #expect(printed == ["0"])
        let tags = f.hierarchy.domainTags
        #expect(tags.seed != seed)
        #expect(tags.longestProbe < 64)
    }

    /// Tags whose probes start at consecutive slots each find their own slot at once, yet
    /// together make one long run; the free of a table whose probe starts at its head walks all
    /// of it. That walk makes the next tag, anywhere, draw a new seed (the allocator may not
    /// move the slots itself).
    @Test func aLongWalkByAFreeMakesTheNextTagDrawANewSeed() throws {
        let f = try Fixture()
        let seed: UInt64 = 0x0FED_CBA9_8765_4321
        f.hierarchy.setDomainTagSeed(seed)
        try f.lua(
            Self.chain + """
                kept = {}
                for i = 1, 260 do kept[i] = {type = "Tap"}; root:triggerEvent(kept[i]) end
                """)
        let bits = f.hierarchy.domainTags.slots.trailingZeroBitCount
        #expect(bits == 10)
        try #require(f.hierarchy.domainTags.seed == seed, "the set grew under the seed set")
        let printed = try f.output(
            Self.chain + """
                seed = \(Int64(bitPattern: seed))
                local bits = \(bits)
                local function home(t) return hash(tonumber(tostring(t):match("0x(%x+)"), 16), bits) end
                -- One table for each of 100 consecutive starts from slot 512.
                local run, missing = {}, 100
                while missing > 0 do
                  local t = {type = "Tap"}
                  kept[#kept + 1] = t
                  local h = home(t) - 512
                  if h >= 0 and h < 100 and not run[h] then run[h] = t; missing = missing - 1 end
                end
                -- The garbage so far freed now, before the run is there for its frees to walk.
                fullgc()
                for h = 0, 99 do root:triggerEvent(run[h]) end
                print("run tagged")
                """)
        #expect(printed == ["run tagged"])
        let afterRun = f.hierarchy.domainTags
        #expect(afterRun.seed == seed && afterRun.longestProbe < 64, "the run's tags met no long probe")
        try f.lua(
            Self.chain + """
                seed = \(Int64(bitPattern: seed))
                local bits = \(bits)
                local function home(t) return hash(tonumber(tostring(t):match("0x(%x+)"), 16), bits) end
                local head
                repeat
                  local t = {type = "Boom"}
                  if home(t) == 512 then head = t else kept[#kept + 1] = t end
                until head
                head = nil
                fullgc()
                """)
        #expect(f.hierarchy.domainTags.seed == seed, "a free moves no tag")
        let tagged = try f.output(
            Self.chain + """
                seed = \(Int64(bitPattern: seed))
                local bits = \(bits)
                local function home(t) return hash(tonumber(tostring(t):match("0x(%x+)"), 16), bits) end
                -- A table whose probe starts far from the run, so its own probe is short.
                local fresh
                repeat
                  local t = {type = "Tap"}
                  if home(t) < 400 then fresh = t else kept[#kept + 1] = t end
                until fresh
                print(root:triggerEvent(fresh).status)
                """)
        #expect(tagged == ["handled"])
        #expect(f.hierarchy.domainTags.seed != seed)
    }
}
