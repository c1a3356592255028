/* Domain tags (luahier_tags.h): a set of table addresses, each with the domain its table
 * travelled as, that lives as long as the tables do. Open addressing with linear probing at
 * most half full, deletion by shifting back (no tombstones), so a probe is short and a set
 * that emptied is empty. */
#include "luahier_tags.h"

#include <lauxlib.h>
#include <string.h>

/* The fewest slots: 64. */
#define LUAHIER_TAGS_MIN_BITS 6
/* Slots kept however few tables are tagged once they were needed: 1,024 (8 KiB). Tagged
 * tables die a collection's worth at a time; shrinking below this only to grow again at the
 * next cycle's tables would move the tags every cycle. */
#define LUAHIER_TAGS_KEPT_BITS 10

/* Where `address`'s probe starts: the top bits of a Fibonacci hash (blocks are 16-byte
 * aligned and come in runs, so the low bits alone would crowd). */
static size_t luahier_tagshome(const luahier_TagSet *t, uintptr_t address) {
    return (size_t)(((uint64_t)address * UINT64_C(0x9E3779B97F4A7C15)) >> (64 - t->bits));
}

/* The slot that holds `address`, or the empty one its probe ends at. */
static size_t luahier_tagsfind(const luahier_TagSet *t, uintptr_t address) {
    size_t mask = ((size_t)1 << t->bits) - 1;
    size_t i = luahier_tagshome(t, address);
    for (;;) {
        uintptr_t entry = t->slots[i];
        if (entry == 0 || (entry & ~(uintptr_t)1) == address) return i;
        i = (i + 1) & mask;
    }
}

/* [-0, +0, m] Moves the tags to 2^bits new slots. Making them may run a collection step, whose
 * frees edit the old slots, which are copied only after. */
static void luahier_tagsresize(lua_State *L, luahier_TagSet *t, unsigned bits) {
    size_t capacity = (size_t)1 << bits;
    uintptr_t *slots = (uintptr_t *)lua_newuserdatauv(L, capacity * sizeof *slots, 0);
    memset(slots, 0, capacity * sizeof *slots);
    uintptr_t *old = t->slots;
    size_t old_capacity = old ? (size_t)1 << t->bits : 0;
    t->slots = slots;
    t->bits = bits;
    for (size_t i = 0; i < old_capacity; i++)
        if (old[i]) slots[luahier_tagsfind(t, old[i] & ~(uintptr_t)1)] = old[i];
    /* The registry's slot exists already: storing into it allocates nothing. */
    if (t->ref) lua_rawseti(L, LUA_REGISTRYINDEX, t->ref);
    else t->ref = luaL_ref(L, LUA_REGISTRYINDEX);
}

void luahier_tagsopen(lua_State *L, luahier_TagSet *t) {
    /* An empty table is one block, of the size Lua frees it with: the growth of Lua's own
     * count, with no collection to free anything meanwhile. */
    int running = lua_gc(L, LUA_GCISRUNNING);
    if (running) lua_gc(L, LUA_GCSTOP);
    long before = (long)lua_gc(L, LUA_GCCOUNT) * 1024 + lua_gc(L, LUA_GCCOUNTB);
    lua_createtable(L, 0, 0);
    long after = (long)lua_gc(L, LUA_GCCOUNT) * 1024 + lua_gc(L, LUA_GCCOUNTB);
    lua_pop(L, 1);
    if (running) lua_gc(L, LUA_GCRESTART);
    t->slots = NULL;
    t->count = 0;
    t->bits = 0;
    t->ref = 0;
    luahier_tagsresize(L, t, LUAHIER_TAGS_MIN_BITS);
    t->table_bytes = (size_t)(after - before);
}

void luahier_tagsclose(luahier_TagSet *t) {
    t->table_bytes = 0;
    t->count = 0;
    t->slots = NULL;
}

int luahier_tagof(lua_State *L, const luahier_TagSet *t, int index) {
    uintptr_t entry = t->slots[luahier_tagsfind(t, (uintptr_t)lua_topointer(L, index))];
    if (entry == 0) return LUAHIER_UNTAGGED;
    return (entry & 1) ? LUAHIER_TAGGED_EVENT : LUAHIER_TAGGED_ERROR;
}

void luahier_tag(lua_State *L, luahier_TagSet *t, int index, int is_error) {
    uintptr_t address = (uintptr_t)lua_topointer(L, index);
    size_t capacity = (size_t)1 << t->bits;
    if ((t->count + 1) * 2 > capacity) {
        luahier_tagsresize(L, t, t->bits + 1);
    } else if (t->count * 8 < capacity && t->bits > LUAHIER_TAGS_KEPT_BITS) {
        /* Mostly freed: a quarter full after. */
        unsigned bits = LUAHIER_TAGS_KEPT_BITS;
        while (((size_t)1 << bits) < (t->count + 1) * 4) bits++;
        if (bits < t->bits) luahier_tagsresize(L, t, bits);
    }
    size_t i = luahier_tagsfind(t, address);
    if (t->slots[i] == 0) t->count++;
    t->slots[i] = address | (is_error ? 0 : 1);
}

/* Forgets the tag at `block`, where luahier_tagsfreed found its first slot taken. */
static __attribute__((noinline)) void luahier_tagsforget(luahier_TagSet *t, const void *block) {
    size_t mask = ((size_t)1 << t->bits) - 1;
    size_t i = luahier_tagsfind(t, (uintptr_t)block);
    if (t->slots[i] == 0) return;
    /* Each entry after the hole, up to the next empty slot, moves back into it when its probe
     * starts at or before the hole. */
    for (size_t j = (i + 1) & mask; t->slots[j] != 0; j = (j + 1) & mask) {
        size_t home = luahier_tagshome(t, t->slots[j] & ~(uintptr_t)1);
        if (((j - home) & mask) >= ((j - i) & mask)) {
            t->slots[i] = t->slots[j];
            i = j;
        }
    }
    t->slots[i] = 0;
    t->count--;
}

void luahier_tagsfreed(luahier_TagSet *t, const void *block) {
    /* Most such blocks were never tagged, and the slots are at most half full: an empty first
     * slot answers at once. */
    if (t->slots[luahier_tagshome(t, (uintptr_t)block)] != 0) luahier_tagsforget(t, block);
}
