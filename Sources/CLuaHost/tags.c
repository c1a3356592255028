/* Domain tags (luahier_tags.h): a set of table addresses, each with the domain its table
 * travelled as, that lives as long as the tables do. Open addressing with linear probing at
 * most half full, deletion by shifting back (no tombstones), so a probe is short and a set
 * that emptied is empty.
 *
 * A script sees its tables' addresses (`tostring`), so where a probe starts is a keyed hash
 * with a secret seed per state: a script cannot choose tables that crowd one run of slots.
 * Should a run grow long all the same (a seed that happens to suit the allocator's spacing ill,
 * or one guessed), whatever walks it notices: a tag draws a new seed and moves the tags at
 * once; a look-up or a free (which may not allocate) leaves that to the next tag; moving the
 * tags draws again while the copy itself walks long. So no run stays long. */
#include "luahier_tags.h"

#include <lauxlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

/* The fewest slots: 64. */
#define LUAHIER_TAGS_MIN_BITS 6
/* Slots kept however few tables are tagged once they were needed: 1,024 (8 KiB). Tagged
 * tables die a collection's worth at a time; shrinking below this only to grow again at the
 * next cycle's tables would move the tags every cycle. */
#define LUAHIER_TAGS_KEPT_BITS 10
/* A probe this long at most half full is a run a random hash makes about once in 250,000
 * probes: a tag that meets one draws a new seed. */
#define LUAHIER_TAGS_LONG_PROBE 64
/* Seeds drawn at most for one move of the tags. A random hash at most half full walks about
 * half a slot a tag as the tags are copied; a copy that walks eight a tag met a seed that
 * crowds these addresses, which a fresh seed all but never does again. */
#define LUAHIER_TAGS_DRAWS 8

/* A new secret for the hash (the kernel's randomness; the clock and an address without it). */
static uint64_t luahier_tagsseed(const luahier_TagSet *t) {
    uint64_t seed;
    if (getrandom(&seed, sizeof seed, GRND_NONBLOCK) != (ssize_t)sizeof seed) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        seed = (((uint64_t)ts.tv_nsec << 32) ^ (uint64_t)ts.tv_sec ^ (uint64_t)(uintptr_t)t ^ t->seed) *
               UINT64_C(0x9E3779B97F4A7C15);
    }
    return seed;
}

/* Where `address`'s probe starts: the top bits of the address and the seed, mixed (MurmurHash3's
 * finalizer, in which every bit of the address moves about half the bits of the result). A
 * secret multiplier alone (multiply-shift) was tried: the allocator hands tables out at regular
 * spacings, and for some multipliers those start in a few slots only. */
static size_t luahier_tagshome(const luahier_TagSet *t, uintptr_t address) {
    uint64_t x = (uint64_t)address ^ t->seed;
    x ^= x >> 33;
    x *= UINT64_C(0xFF51AFD7ED558CCD);
    x ^= x >> 33;
    x *= UINT64_C(0xC4CEB9FE1A85EC53);
    x ^= x >> 33;
    return (size_t)(x >> (64 - t->bits));
}

/* The slot that holds `address`, or the empty one its probe ends at; `steps`: how many slots
 * past the first it looked at. */
static size_t luahier_tagsfind(const luahier_TagSet *t, uintptr_t address, size_t *steps) {
    size_t mask = ((size_t)1 << t->bits) - 1;
    size_t i = luahier_tagshome(t, address);
    for (size_t step = 0;; step++) {
        uintptr_t entry = t->slots[i];
        if (entry == 0 || (entry & ~(uintptr_t)1) == address) {
            *steps = step;
            return i;
        }
        i = (i + 1) & mask;
    }
}

/* [-0, +0, m] Moves the tags to 2^bits new slots or more (with a new seed when `reseed`).
 * Making them may run a collection step: its frees edit the old slots, and under the full
 * libraries its finalizers may tag tables, even move the tags themselves; so the slots are
 * sized, and the old ones read, only once the new block is had. */
static void luahier_tagsresize(lua_State *L, luahier_TagSet *t, unsigned bits, int reseed) {
    uintptr_t *slots;
    for (;;) {
        slots = (uintptr_t *)lua_newuserdatauv(L, ((size_t)1 << bits) * sizeof *slots, 0);
        if ((t->count + 1) * 2 <= (size_t)1 << bits) break;
        lua_pop(L, 1);
        bits++;
    }
    uintptr_t *old = t->slots;
    size_t old_capacity = old ? (size_t)1 << t->bits : 0;
    t->slots = slots;
    t->bits = bits;
    t->reseed_due = 0;
    /* A copy whose probes walk more than a few slots a tag on average met a seed that crowds
     * these addresses: it stops there, and the tags are copied again under a new seed (the
     * last draw copies them whatever it walks). */
    size_t limit = 8 * t->count + LUAHIER_TAGS_LONG_PROBE;
    for (int draw = 0;; draw++) {
        int last = draw + 1 == LUAHIER_TAGS_DRAWS;
        if (reseed || draw > 0) t->seed = luahier_tagsseed(t);
        memset(slots, 0, ((size_t)1 << bits) * sizeof *slots);
        size_t walked = 0, steps, i;
        for (i = 0; i < old_capacity; i++) {
            if (old[i] == 0) continue;
            slots[luahier_tagsfind(t, old[i] & ~(uintptr_t)1, &steps)] = old[i];
            walked += steps;
            if (walked > limit && !last) break;
        }
        if (i == old_capacity) break;
    }
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
    t->seed = 0;
    t->reseed_due = 0;
    t->longest_probe = 0;
    t->ref = 0;
    luahier_tagsresize(L, t, LUAHIER_TAGS_MIN_BITS, 1);
    t->table_bytes = (size_t)(after - before);
}

void luahier_tagsclose(luahier_TagSet *t) {
    t->table_bytes = 0;
    t->count = 0;
    t->slots = NULL;
}

int luahier_tagof(lua_State *L, luahier_TagSet *t, int index) {
    if (t->slots == NULL) return LUAHIER_UNTAGGED;
    size_t steps;
    uintptr_t entry = t->slots[luahier_tagsfind(t, (uintptr_t)lua_topointer(L, index), &steps)];
    if (steps >= LUAHIER_TAGS_LONG_PROBE) t->reseed_due = 1;
    if (entry == 0) return LUAHIER_UNTAGGED;
    return (entry & 1) ? LUAHIER_TAGGED_EVENT : LUAHIER_TAGGED_ERROR;
}

void luahier_tag(lua_State *L, luahier_TagSet *t, int index, int is_error) {
    /* A finalizer that runs as the state closes tags nothing: no later dispatch reads it. */
    if (t->slots == NULL) return;
    uintptr_t address = (uintptr_t)lua_topointer(L, index);
    size_t capacity = (size_t)1 << t->bits;
    if ((t->count + 1) * 2 > capacity) {
        luahier_tagsresize(L, t, t->bits + 1, 0);
    } else if (t->count * 8 < capacity && t->bits > LUAHIER_TAGS_KEPT_BITS) {
        /* Mostly freed: a quarter full after. */
        unsigned bits = LUAHIER_TAGS_KEPT_BITS;
        while (((size_t)1 << bits) < (t->count + 1) * 4) bits++;
        if (bits < t->bits) luahier_tagsresize(L, t, bits, 0);
    }
    size_t steps;
    size_t i = luahier_tagsfind(t, address, &steps);
    if (steps >= LUAHIER_TAGS_LONG_PROBE || t->reseed_due) {
        luahier_tagsresize(L, t, t->bits, 1);
        i = luahier_tagsfind(t, address, &steps);
    }
    if (steps > t->longest_probe) t->longest_probe = steps;
    if (t->slots[i] == 0) t->count++;
    t->slots[i] = address | (is_error ? 0 : 1);
}

/* Forgets the tag at `block`, where luahier_tagsfreed found its first slot taken. */
static __attribute__((noinline)) void luahier_tagsforget(luahier_TagSet *t, const void *block) {
    size_t mask = ((size_t)1 << t->bits) - 1;
    size_t steps;
    size_t i = luahier_tagsfind(t, (uintptr_t)block, &steps);
    if (steps >= LUAHIER_TAGS_LONG_PROBE) t->reseed_due = 1;
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
