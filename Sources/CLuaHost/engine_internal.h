/* Helpers the engine's C files share (engine.c, walk.c, lines.c); not part of the host's API
 * (include/), so Swift does not see them. */
#ifndef LUAHIER_ENGINE_INTERNAL_H
#define LUAHIER_ENGINE_INTERNAL_H

#include "luahier_host.h"

/* [-0, +1, -] Pushes interned word `word` (LUAHIER_WORD_*) of `e`. */
void luahier_pushword(lua_State *L, const luahier_Engine *e, int word);

/* [-0, +0, m] table[word] = the value at `value`, unless the table has that field. */
void luahier_setifabsent(lua_State *L, const luahier_Engine *e, int table, int word, int value);

#endif
