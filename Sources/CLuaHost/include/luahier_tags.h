/* Domain tags (tags.c): which domain each table has travelled as, so a table that travelled as
 * an event is refused as an error and the other way round (contract §3; docs/decisions.md,
 * "Domains stick to tables"). A tag lasts as long as its table: it is kept by the table's
 * address, and the allocator (limits.c) forgets the address when it frees the table's block,
 * so a table made later at the same address starts untagged.
 *
 * Why not a weak-keyed Lua table, as before: each collection cleared its dead keys, the next
 * rehash shrank it to the few live ones and it grew again, a rehash every few lines of a
 * stream (docs/performance.md, "The domain tags kept by address"). Here a tag is a probe of a
 * C array, and the array (a userdata of the state, under the memory cap) grows and shrinks
 * only by halves and doublings of what is tagged.
 * Uses the guard (luahier_guard.h). */
#ifndef LUAHIER_TAGS_H
#define LUAHIER_TAGS_H

#include "luahier_guard.h"

#include <lua.h>

/* What luahier_tagof answers. */
enum { LUAHIER_UNTAGGED = 0, LUAHIER_TAGGED_EVENT = 1, LUAHIER_TAGGED_ERROR = 2 };

/* [-0, +0, m] Sets up `tags` for the state of `L`: learns the size Lua frees a table's block
 * with, and makes the first slots. Once, when the state is made; before any tag. */
void luahier_tagsopen(lua_State *L, luahier_TagSet *tags);

/* [-0, +0, -] Forgets every tag, and the set: before lua_close, which frees the slots' userdata
 * and the tables in any order. */
void luahier_tagsclose(luahier_TagSet *tags);

/* [-0, +0, -] The domain the table at `index` travelled as: LUAHIER_UNTAGGED or
 * LUAHIER_TAGGED_* (a long walk to find out makes the next tag draw a new seed). */
int luahier_tagof(lua_State *L, luahier_TagSet *tags, int index);

/* [-0, +0, m] Tags the table at `index` as travelling as an error (`is_error`) or an event. */
void luahier_tag(lua_State *L, luahier_TagSet *tags, int index, int is_error);

/* [-0, +0, -] The allocator freed `block`, of a table's size: its tag, if it was a tagged table,
 * goes. Touches no Lua (it runs inside collections). */
void luahier_tagsfreed(luahier_TagSet *tags, const void *block);

#endif
