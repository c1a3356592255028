/* The guard (luahier_guard.h): each thread's extra space points at its state's guard. */
#include "luahier_guard.h"

luahier_Guard *luahier_guard(lua_State *L) {
    return *(luahier_Guard **)lua_getextraspace(L);
}
