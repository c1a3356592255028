/* The walk (walk.c): the Lua function every dispatch runs, offering the value to each entry of
 * a plan (luahier_enginetypes.h), and the value rules it and the driver apply (contract §3).
 * Uses host functions (luahier_host.h: stripped chunks), errors (read-only tables, host
 * frames) and limits (work charged). */
#ifndef LUAHIER_WALK_H
#define LUAHIER_WALK_H

#include <lua.h>

#include "luahier_enginetypes.h"

/* [-0, +1, m] Pushes the text of the walk's variant (`traced`: the one that records traces):
 * `text` is Lua/walk.lua (LuaSources.walk), its constants' C names filled in from the enums
 * here, its "--T|" lines kept for `traced`. Returns LUA_OK, or LUA_ERRSYNTAX with an error
 * pushed instead when the text names a constant this file does not fill in. embed-lua
 * compiles the same text at build time. */
int luahier_pushwalksource(lua_State *L, int traced, const char *text);

/* [-0, +1, m] Pushes the walk (`traced`: its variant that records traces), its helpers bound;
 * returns LUA_OK, or an error status with the error pushed instead. Made once per state.
 * `engine` must outlive the state's use of it. `bytecode` (`size` bytes) is the variant as
 * embed-lua compiled it at build time, loaded when this Lua can (luahier_loaddump); else the
 * variant's text is made from `text` and compiled. */
int luahier_pushwalk(lua_State *L, luahier_Engine *engine, int traced, const char *text,
                     const unsigned char *bytecode, size_t size);

/* [-0, +1, -] The function a removed responder's entry calls instead (LUAHIER_ENTRY_CALL): its
 * answer, which no responder can give, tells the walk to pass the entry by. */
void luahier_pushskipper(lua_State *L);

/* [-0, +1, -] What the skipper answers: a host closure's answer for "not offered after all"
 * (a typed Swift responder whose value does not decode as its type). */
void luahier_pushskipmark(lua_State *L);

/* [-0, +0, m] Normalizes the value at `index` as a value of the domain `is_error` says (contract
 * §3): a string is shorthand (a fresh table), an error table without `type` gets "Error", and a
 * table that travelled as the other domain is refused. The value is replaced in place and its
 * type pushed. Returns 1, or 0 with a description of what it is instead pushed ("nil", "a
 * number", "an event (Tap)", ...) and the value left as it was. */
int luahier_asvalue(lua_State *L, luahier_Engine *engine, int index, int is_error);

/* [-0, +1, m] luahier_asvalue's rule for the table at `index`, for a caller with no engine (the
 * host's Swift side): pushes its type and returns 1, or pushes why it is not a value of that
 * domain and returns 0. The same rule, worded in one place. */
int luahier_astable(lua_State *L, struct luahier_TagSet *tags, int index, int is_error);

/* Where luahier_asvalue finds what it reads, for a caller that holds it (a closure's
 * upvalues): the word "type". */
typedef struct luahier_Keys {
    int type;
} luahier_Keys;

/* As luahier_asvalue, with `keys` (NULL: from the registry). */
int luahier_asvaluewith(lua_State *L, luahier_Engine *engine, int index, int is_error, const luahier_Keys *keys);

#endif
