/* The sandbox's step-counting patterns (pattern.c): string.find, match, gmatch and gsub.
 * Uses limits (luahier_limits.h: the work charged) and the sandbox (luahier_sandbox.h: the
 * linear plain find). */
#ifndef LUAHIER_PATTERN_H
#define LUAHIER_PATTERN_H

#include <lua.h>

/* lua_CFunction () -> {find, match, gmatch, gsub}: the step-counting pattern functions
 * (pattern.c), which replace string.find, match, gmatch and gsub in the sandbox. */
int luahier_pushpatternlib(lua_State *L);

#endif
