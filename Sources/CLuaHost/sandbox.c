/* The sandbox's C functions: Lua's own where they would run unbounded in one C call (sort,
 * string.rep, plain find) redone to charge their work, the tracked coroutine.resume, the
 * guarded xpcall handler and the libraries the sandbox starts from. */
#include "luahier_sandbox.h"
#include "luahier_limits.h"

#include <lauxlib.h>
#include <lualib.h>
#include <limits.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* An xpcall message handler, guarded: once a limit has tripped the error passes through
 * untouched and no Lua code runs. Lua 5.4.4 re-enters a message handler that raises, in C,
 * forever; a tripped limit raises at every Lua instruction, so the user's handler must not run. */
static int luahier_guardedhandler(lua_State *L) {
    if (luahier_tripped(L)) return 1;
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, 1);
    return 1;
}

int luahier_guardhandler(lua_State *L) {
    lua_settop(L, 1);
    lua_pushcclosure(L, luahier_guardedhandler, 1);
    return 1;
}

int luahier_resume(lua_State *L) {
    lua_State *co = lua_tothread(L, 1);
    luaL_argexpected(L, co != NULL, 1, "coroutine");
    int narg = lua_gettop(L) - 1;
    if (!lua_checkstack(co, narg)) {
        lua_pushboolean(L, 0);
        lua_pushliteral(L, "too many arguments to resume");
        return 2;
    }
    lua_xmove(L, co, narg);
    luahier_Guard *g = luahier_guard(L);
    lua_State *caller = g->running;
    g->running = co;
    /* A trip under way (a coroutine made before it has no hook when the host counts no
     * instructions), or an interrupt that hooked the caller just before: the coroutine
     * stops too, at its first instruction. */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (g->active && (g->budget.exceeded || luahier_interrupt_signal)) luahier_hooknext(co);
    int nres = 0;
    int status = lua_resume(co, L, narg, &nres);
    g->running = caller;
    /* A trip while the coroutine ran: the caller's next instruction raises it too. */
    if (g->active && g->budget.exceeded) luahier_hooknext(L);
    if (status == LUA_OK || status == LUA_YIELD) {
        if (!lua_checkstack(L, nres + 1)) {
            lua_pop(co, nres);
            lua_pushboolean(L, 0);
            lua_pushliteral(L, "too many results to resume");
            return 2;
        }
        lua_pushboolean(L, 1);
        lua_xmove(co, L, nres);
        return nres + 1;
    }
    /* false, then the message (lua_xmove does nothing when the coroutine is the caller). */
    lua_xmove(co, L, 1);
    lua_pushboolean(L, 0);
    lua_insert(L, -2);
    return 2;
}

/* lua_CFunction coroutine.close(co) for the sandbox: Lua's (upvalue 1), with the guard's note
 * of the running thread while it runs co's __close handlers on co's own stack, as
 * luahier_resume does for a resume: a deadline then stops that thread, and a trip under way
 * stops it at its first instruction. Called protected, so the note is undone whatever
 * happens (a stale note would point at a thread the collector may free). */
static int luahier_close(lua_State *L) {
    lua_State *co = lua_tothread(L, 1);
    luahier_Guard *g = luahier_guard(L);
    lua_State *caller = g->running;
    if (co != NULL && co != L) {
        g->running = co;
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        if (g->active && (g->budget.exceeded || luahier_interrupt_signal)) luahier_hooknext(co);
    }
    int arguments = lua_gettop(L);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    int status = lua_pcall(L, arguments, LUA_MULTRET, 0);
    g->running = caller;
    if (g->active && g->budget.exceeded) luahier_hooknext(L);
    if (status != LUA_OK) return lua_error(L);
    return lua_gettop(L);
}

int luahier_trackclose(lua_State *L) {
    luaL_checktype(L, 1, LUA_TFUNCTION);
    lua_settop(L, 1);
    lua_pushcclosure(L, luahier_close, 1);
    return 1;
}

/* [-0, +0, e] Whether the value at `a` sorts before the one at `b`: the comparator at index 2,
 * or `<`. */
static int luahier_sortless(lua_State *L, int a, int b, int has_comparator) {
    if (!has_comparator) return lua_compare(L, a, b, LUA_OPLT);
    lua_pushvalue(L, 2);
    lua_pushvalue(L, a);
    lua_pushvalue(L, b);
    lua_call(L, 2, 1);
    int less = lua_toboolean(L, -1);
    lua_pop(L, 1);
    return less;
}

/* [-0, +0, e] Heap sort's sift-down of the element at `root` within 1..n of the table at 1. */
static void luahier_siftdown(lua_State *L, lua_Integer root, lua_Integer n, int has_comparator) {
    lua_geti(L, 1, root);
    int value = lua_gettop(L);
    while (2 * root <= n) {
        lua_Integer child = 2 * root;
        lua_geti(L, 1, child);
        if (child + 1 <= n) {
            lua_geti(L, 1, child + 1);
            if (luahier_sortless(L, value + 1, value + 2, has_comparator)) {
                child++;
                lua_replace(L, value + 1);
            } else {
                lua_pop(L, 1);
            }
        }
        luahier_work(L, 2);
        if (!luahier_sortless(L, value, value + 1, has_comparator)) {
            lua_pop(L, 1);
            break;
        }
        lua_seti(L, 1, root);
        root = child;
    }
    lua_seti(L, 1, root);
}

int luahier_sort(lua_State *L) {
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_Integer n = luaL_len(L, 1);
    int has_comparator = !lua_isnoneornil(L, 2);
    if (has_comparator) luaL_checktype(L, 2, LUA_TFUNCTION);
    lua_settop(L, 2);
    luaL_checkstack(L, 8, "sorting");
    luahier_work(L, n);
    for (lua_Integer i = n / 2; i >= 1; i--) luahier_siftdown(L, i, n, has_comparator);
    for (lua_Integer end = n; end > 1; end--) {
        lua_geti(L, 1, 1);
        lua_geti(L, 1, end);
        lua_seti(L, 1, 1);
        lua_seti(L, 1, end);
        luahier_siftdown(L, 1, end - 1, has_comparator);
    }
    return 0;
}

int luahier_rep(lua_State *L) {
    size_t length, separator_length;
    const char *s = luaL_checklstring(L, 1, &length);
    lua_Integer n = luaL_checkinteger(L, 2);
    const char *separator = luaL_optlstring(L, 3, "", &separator_length);
    if (n <= 0) {
        lua_pushliteral(L, "");
        return 1;
    }
    if (length + separator_length < length || length + separator_length > (size_t)INT_MAX / (size_t)n)
        return luaL_error(L, "resulting string too large");
    size_t total = (size_t)n * length + (size_t)(n - 1) * separator_length;
    luaL_Buffer b;
    char *p = luaL_buffinitsize(L, &b, total);
    if (total > 0) {
        /* One period (s, then sep unless it is the only copy); then the filled part, a whole
         * number of periods, copied onto the rest until it is all filled. */
        memcpy(p, s, length);
        size_t filled = length;
        if (n > 1 && separator_length > 0) {
            memcpy(p + length, separator, separator_length);
            filled += separator_length;
        }
        while (filled < total) {
            size_t chunk = filled < total - filled ? filled : total - filled;
            memcpy(p + filled, p, chunk);
            filled += chunk;
            luahier_work(L, (long long)(chunk / LUAHIER_BYTES_PER_UNIT));
        }
    }
    luaL_pushresultsize(&b, total);
    return 1;
}

int luahier_setglobals(lua_State *L) {
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    lua_rawseti(L, LUA_REGISTRYINDEX, LUA_RIDX_GLOBALS);
    return 0;
}

int luahier_setstringmetatable(lua_State *L) {
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    lua_pushliteral(L, "");
    lua_insert(L, 1);
    lua_setmetatable(L, 1);
    return 0;
}

int luahier_getstringmetatable(lua_State *L) {
    lua_pushliteral(L, "");
    if (!lua_getmetatable(L, -1)) lua_pushnil(L);
    return 1;
}

/* ---- Libraries ------------------------------------------------------------------------ */

int luahier_opensandboxlibs(lua_State *L) {
    static const luaL_Reg libs[] = {
        {LUA_GNAME, luaopen_base}, {LUA_LOADLIBNAME, luaopen_package},
        {LUA_COLIBNAME, luaopen_coroutine}, {LUA_TABLIBNAME, luaopen_table},
        {LUA_STRLIBNAME, luaopen_string}, {LUA_MATHLIBNAME, luaopen_math},
        {LUA_UTF8LIBNAME, luaopen_utf8}, {LUA_OSLIBNAME, luaopen_os}, {NULL, NULL}};
    for (const luaL_Reg *lib = libs; lib->func; lib++) {
        luaL_requiref(L, lib->name, lib->func, 1);
        lua_pop(L, 1);
    }
    return 0;
}

int luahier_openalllibs(lua_State *L) {
    luaL_openlibs(L);
    return 0;
}

extern void *memmem(const void *haystack, size_t haystacklen, const void *needle, size_t needlelen);

int luahier_plainfind(lua_State *L) {
    size_t ls, lp;
    const char *s = luaL_checklstring(L, 1, &ls);
    const char *p = luaL_checklstring(L, 2, &lp);
    lua_Integer init = luaL_optinteger(L, 3, 1);
    if (init < 0) init = (init < -(lua_Integer)ls) ? 1 : (lua_Integer)ls + init + 1;
    if (init == 0) init = 1;
    if (init > (lua_Integer)ls + 1) {
        lua_pushnil(L);
        return 1;
    }
    const char *start = s + init - 1;
    const char *found = lp == 0 ? start : (const char *)memmem(start, ls - (size_t)(init - 1), p, lp);
    if (found == NULL) {
        lua_pushnil(L);
        return 1;
    }
    lua_pushinteger(L, (lua_Integer)(found - s) + 1);
    lua_pushinteger(L, (lua_Integer)(found - s) + (lua_Integer)lp);
    return 2;
}

/* ---- table.insert, remove, move, concat, unpack ------------------------------------------ */

/* Lua's own loop over a table's elements in one C call: with a `__len` that lies (2^40) or an
 * `__index` chain of tables (up to 2,000 deep for each element), one call ran for hours and no
 * hook could stop it. These do what Lua 5.4's do, element by element, charging each step
 * (luahier_work: the deadline is checked every LUAHIER_HOOK_INTERVAL steps). */

enum { LUAHIER_TAB_READ = 1, LUAHIER_TAB_WRITE = 2, LUAHIER_TAB_LENGTH = 4 };

/* [-0, +0, v] Argument `arg` is a table, or has the metamethods for `needs`. */
static void luahier_checktable(lua_State *L, int arg, int needs) {
    if (lua_type(L, arg) == LUA_TTABLE) return;
    int top = lua_gettop(L);
    int usable = lua_getmetatable(L, arg)
        && (!(needs & LUAHIER_TAB_READ) || lua_getfield(L, top + 1, "__index") != LUA_TNIL)
        && (!(needs & LUAHIER_TAB_WRITE) || lua_getfield(L, top + 1, "__newindex") != LUA_TNIL)
        && (!(needs & LUAHIER_TAB_LENGTH) || lua_getfield(L, top + 1, "__len") != LUA_TNIL);
    lua_settop(L, top);
    if (!usable) luaL_checktype(L, arg, LUA_TTABLE);
}

/* [-0, +0, e] t[to] = t[from] for the table at `table`, one charged step. */
static void luahier_shift(lua_State *L, int table, lua_Integer from, lua_Integer to) {
    luahier_work(L, 1);
    lua_geti(L, table, from);
    lua_seti(L, table, to);
}

int luahier_tinsert(lua_State *L) {
    luahier_checktable(L, 1, LUAHIER_TAB_READ | LUAHIER_TAB_WRITE | LUAHIER_TAB_LENGTH);
    lua_Integer end = luaL_len(L, 1);
    lua_Integer position = (lua_Integer)((lua_Unsigned)end + 1u);   /* the first free slot */
    switch (lua_gettop(L)) {
    case 2:
        break;
    case 3: {
        lua_Integer wanted = luaL_checkinteger(L, 2);
        /* 1 <= wanted <= end + 1, in unsigned arithmetic as Lua checks it. */
        luaL_argcheck(L, (lua_Unsigned)wanted - 1u < (lua_Unsigned)position, 2, "position out of bounds");
        for (lua_Integer i = position; i > wanted; i--) luahier_shift(L, 1, i - 1, i);
        position = wanted;
        break;
    }
    default:
        return luaL_error(L, "wrong number of arguments to 'insert'");
    }
    lua_seti(L, 1, position);
    return 0;
}

int luahier_tremove(lua_State *L) {
    luahier_checktable(L, 1, LUAHIER_TAB_READ | LUAHIER_TAB_WRITE | LUAHIER_TAB_LENGTH);
    lua_Integer size = luaL_len(L, 1);
    lua_Integer position = luaL_optinteger(L, 2, size);
    /* A position given must be within 1..size + 1 (size itself, or 0 of an empty list, always
     * is). The message names argument #1, as the Lua 5.4.4 this host is built on does. */
    if (position != size)
        luaL_argcheck(L, (lua_Unsigned)position - 1u <= (lua_Unsigned)size, 1, "position out of bounds");
    lua_geti(L, 1, position);
    for (; position < size; position++) luahier_shift(L, 1, position + 1, position);
    lua_pushnil(L);
    lua_seti(L, 1, position);
    return 1;
}

/* More elements than one table.move copies: refused at once with a clear message, rather than
 * left to run into the deadline. */
#define LUAHIER_MAX_MOVE (1 << 24)

int luahier_tmove(lua_State *L) {
    lua_Integer first = luaL_checkinteger(L, 2);
    lua_Integer last = luaL_checkinteger(L, 3);
    lua_Integer to = luaL_checkinteger(L, 4);
    int target = lua_isnoneornil(L, 5) ? 1 : 5;
    luahier_checktable(L, 1, LUAHIER_TAB_READ);
    luahier_checktable(L, target, LUAHIER_TAB_WRITE);
    if (last >= first) {
        luaL_argcheck(L, first > 0 || last < LUA_MAXINTEGER + first, 3, "too many elements to move");
        lua_Integer count = last - first;   /* one less than the elements moved */
        luaL_argcheck(L, to <= LUA_MAXINTEGER - count, 4, "destination wrap around");
        if (count >= LUAHIER_MAX_MOVE)
            return luaL_error(L, "table.move: %I elements is more than the sandbox moves at once (%d)",
                              (LUAI_UACINT)count + 1, LUAHIER_MAX_MOVE);
        /* Forwards unless the ranges overlap with the destination ahead, as Lua does. */
        if (to > last || to <= first || (target != 1 && !lua_compare(L, 1, target, LUA_OPEQ))) {
            for (lua_Integer i = 0; i <= count; i++) {
                luahier_work(L, 1);
                lua_geti(L, 1, first + i);
                lua_seti(L, target, to + i);
            }
        } else {
            for (lua_Integer i = count; i >= 0; i--) {
                luahier_work(L, 1);
                lua_geti(L, 1, first + i);
                lua_seti(L, target, to + i);
            }
        }
    }
    lua_pushvalue(L, target);
    return 1;
}

/* [-0, +0, e] Adds list[i] to the buffer; it must be a string or a number. */
static void luahier_concatfield(lua_State *L, luaL_Buffer *b, lua_Integer i) {
    luahier_work(L, 1);
    lua_geti(L, 1, i);
    if (!lua_isstring(L, -1))
        luaL_error(L, "invalid value (%s) at index %I in table for 'concat'", luaL_typename(L, -1), (LUAI_UACINT)i);
    luaL_addvalue(b);
}

int luahier_tconcat(lua_State *L) {
    luahier_checktable(L, 1, LUAHIER_TAB_READ | LUAHIER_TAB_LENGTH);
    lua_Integer last = luaL_len(L, 1);
    size_t separator_length;
    const char *separator = luaL_optlstring(L, 2, "", &separator_length);
    lua_Integer i = luaL_optinteger(L, 3, 1);
    last = luaL_optinteger(L, 4, last);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    for (; i < last; i++) {
        luahier_concatfield(L, &b, i);
        luaL_addlstring(&b, separator, separator_length);
    }
    if (i == last) luahier_concatfield(L, &b, i);
    luaL_pushresult(&b);
    return 1;
}

int luahier_tunpack(lua_State *L) {
    lua_Integer i = luaL_optinteger(L, 2, 1);
    lua_Integer last = lua_isnoneornil(L, 3) ? luaL_len(L, 1) : luaL_checkinteger(L, 3);
    if (i > last) return 0;
    lua_Unsigned count = (lua_Unsigned)last - (lua_Unsigned)i;   /* one less than the results */
    if (count >= (lua_Unsigned)INT_MAX || !lua_checkstack(L, (int)(++count)))
        return luaL_error(L, "too many results to unpack");
    for (; i < last; i++) {
        luahier_work(L, 1);
        lua_geti(L, 1, i);
    }
    lua_geti(L, 1, last);
    return (int)count;
}

/* [-0, +0, -] What a file that is not regular is, for messages. */
static const char *luahier_filekind(mode_t mode) {
    switch (mode & S_IFMT) {
    case S_IFDIR: return "a directory";
    case S_IFIFO: return "a FIFO";
    case S_IFCHR: return "a character device";
    case S_IFBLK: return "a block device";
    case S_IFSOCK: return "a socket";
    default: return "not a plain file";
    }
}

/* [-0, +0, -] __close (and __gc) of the box holding a module file while it is read: closes
 * it unless closed already. */
static int luahier_closesource(lua_State *L) {
    FILE **box = (FILE **)luaL_checkudata(L, 1, "luahier.source");
    if (*box != NULL) {
        fclose(*box);
        *box = NULL;
    }
    return 0;
}

int luahier_readsource(lua_State *L) {
    const char *path = luaL_checkstring(L, 1);
    /* The file is held in a to-be-closed box from before it is opened: the read allocates in
     * Lua's heap, and a refusal at the cap raises out of this function, which then still
     * closes it (an attacker's find: a descriptor leaked per refused `require`, until a
     * server took one connection a second). */
    FILE **box = (FILE **)lua_newuserdatauv(L, sizeof(FILE *), 0);
    *box = NULL;
    if (luaL_newmetatable(L, "luahier.source")) {
        lua_pushcfunction(L, luahier_closesource);
        lua_setfield(L, -2, "__close");
        lua_pushcfunction(L, luahier_closesource);
        lua_setfield(L, -2, "__gc");
    }
    lua_setmetatable(L, -2);
    int slot = lua_gettop(L);
    lua_toclose(L, slot);
    /* Regular files only, opened without blocking: a FIFO would hold the state in a read no
     * deadline reaches, and a device would never end. The text is read into Lua's heap, under
     * the cap (a refusal there trips it). */
    int descriptor = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat info;
    if (descriptor >= 0 && fstat(descriptor, &info) == 0 && !S_ISREG(info.st_mode)) {
        close(descriptor);
        lua_pushnil(L);
        lua_pushfstring(L, "cannot read %s: not a regular file (%s); modules are read from regular files only", path,
                        luahier_filekind(info.st_mode));
        return 2;
    }
    FILE *file = descriptor >= 0 ? fdopen(descriptor, "rb") : NULL;
    if (!file) {
        int saved = errno;
        if (descriptor >= 0) close(descriptor);
        lua_pushnil(L);
        lua_pushfstring(L, "cannot open %s: %s", path, strerror(saved));
        return 2;
    }
    *box = file;
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    size_t count;
    do {
        char *p = luaL_prepbuffer(&b);
        count = fread(p, 1, LUAL_BUFFERSIZE, file);
        luaL_addsize(&b, count);
    } while (count == LUAL_BUFFERSIZE);
    int failed = ferror(file);
    int saved = errno;
    *box = NULL;
    fclose(file);
    if (failed) {
        lua_pushnil(L);
        lua_pushfstring(L, "cannot read %s: %s", path, strerror(saved));
        return 2;
    }
    luaL_pushresult(&b);
    /* As luaL_loadfilex reads a file: a UTF-8 BOM and a first line starting with '#' (a
     * shebang) are skipped, the newline kept so line numbers stay the file's. */
    size_t length;
    const char *text = lua_tolstring(L, -1, &length);
    size_t skip = length >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
    if (skip < length && text[skip] == '#') {
        const char *newline = memchr(text + skip, '\n', length - skip);
        skip = newline ? (size_t)(newline - text) : length;
    }
    if (skip > 0) lua_pushlstring(L, text + skip, length - skip);
    return 1;
}
