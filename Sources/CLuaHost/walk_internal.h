/* walk.c's helpers that the driver (engine.c) and lines.c share; not part of the host's API
 * (include/), so Swift does not see them. */
#ifndef LUAHIER_WALK_INTERNAL_H
#define LUAHIER_WALK_INTERNAL_H

#include <lua.h>

#include "luahier_enginetypes.h"

/* [-0, +1, -] Pushes interned word `word` (LUAHIER_WORD_*) of `e`. */
void luahier_pushword(lua_State *L, const luahier_Engine *e, int word);

/* [-0, +0, m] table[word] = the value at `value`, unless the table has that field. */
void luahier_setifabsent(lua_State *L, const luahier_Engine *e, int table, int word, int value);

/* [-0, +1, m] Pushes a new trace record (luahier_enginetypes.h) of a dispatch along the plan at
 * `plan`: the walk's, for the driver when a traced dispatch stops before its first step. */
void luahier_pushrecord(lua_State *L, int plan);

#endif
