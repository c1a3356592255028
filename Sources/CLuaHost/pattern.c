/*
 * Lua patterns (manual §6.4.1) for the sandbox, with a step budget.
 *
 * Lua 5.4.4's matcher backtracks inside one C call, where the count hook never fires: a
 * pattern like ("a*"):rep(8) .. "b" against 30,000 "a"s runs for hours. This matcher has the
 * same language and results, but counts its steps: every 4,096 it charges the instruction
 * budget and checks the deadline (raising the host's limit errors), and one call may take at
 * most LUAHIER_PATTERN_STEPS + 64 steps per subject byte before it fails with
 * "pattern too complex". Its functions replace string.find, match,
 * gmatch and gsub in the sandbox.
 */
#include "luahier_pattern.h"
#include "luahier_limits.h"
#include "luahier_sandbox.h"

#include <lauxlib.h>
#include <ctype.h>
#include <stddef.h>
#include <string.h>

#define LUAHIER_PATTERN_STEPS 4000000
#define LUAHIER_PATTERN_MAXCAPTURES 32
#define LUAHIER_PATTERN_MAXDEPTH 200
#define LUAHIER_CAP_UNFINISHED (-1)
#define LUAHIER_CAP_POSITION (-2)

typedef struct luahier_MatchState {
    const char *src_init, *src_end, *p_end;
    lua_State *L;
    long long steps_left;  /* this call's budget */
    long long steps_limit;
    int unreported;        /* steps not yet charged to the instruction budget */
    int depth_left;        /* recursion left before "pattern too complex" */
    int level;             /* captures open or closed so far */
    struct { const char *init; ptrdiff_t len; } capture[LUAHIER_PATTERN_MAXCAPTURES];
} luahier_MatchState;

/* `n` steps of work. Raises when this call's budget, the entry's budget or the time is spent. */
static void luahier_steps(luahier_MatchState *ms, long long n) {
    ms->steps_left -= n;
    ms->unreported += (int)(n < 4096 ? n : 4096);
    if (ms->steps_left < 0)
        luaL_error(ms->L, "pattern too complex: more than %I matching steps on a subject of %I bytes "
                          "(a backtracking pattern; simplify it or shorten the subject)",
                   (LUAI_UACINT)ms->steps_limit, (LUAI_UACINT)(ms->src_end - ms->src_init));
    if (ms->unreported < 4096) return;
    ms->unreported = 0;
    luahier_work(ms->L, 4096 / 8);
}

/* One step of work. */
static void luahier_step(luahier_MatchState *ms) { luahier_steps(ms, 1); }

static const char *luahier_classend(luahier_MatchState *ms, const char *p) {
    if (*p++ == '%') {
        if (p == ms->p_end) luaL_error(ms->L, "malformed pattern (ends with '%%')");
        return p + 1;
    }
    if (*(p - 1) == '[') {
        if (*p == '^') p++;
        do {
            if (p == ms->p_end) luaL_error(ms->L, "malformed pattern (missing ']')");
            if (*(p++) == '%' && p < ms->p_end) p++;
        } while (*p != ']');
        return p + 1;
    }
    return p;
}

static int luahier_matchclass(int c, int cl) {
    int res;
    switch (tolower(cl)) {
    case 'a': res = isalpha(c); break;
    case 'c': res = iscntrl(c); break;
    case 'd': res = isdigit(c); break;
    case 'g': res = isgraph(c); break;
    case 'l': res = islower(c); break;
    case 'p': res = ispunct(c); break;
    case 's': res = isspace(c); break;
    case 'u': res = isupper(c); break;
    case 'w': res = isalnum(c); break;
    case 'x': res = isxdigit(c); break;
    default: return cl == c;
    }
    if (isupper(cl)) res = !res;
    return res;
}

/* `p` at '[', `ec` at the closing ']'. */
static int luahier_matchbracket(int c, const char *p, const char *ec) {
    int sig = 1;
    if (*(p + 1) == '^') {
        sig = 0;
        p++;
    }
    while (++p < ec) {
        if (*p == '%') {
            p++;
            if (luahier_matchclass(c, (unsigned char)*p)) return sig;
        } else if (*(p + 1) == '-' && p + 2 < ec) {
            p += 2;
            if ((unsigned char)*(p - 2) <= c && c <= (unsigned char)*p) return sig;
        } else if ((unsigned char)*p == c) {
            return sig;
        }
    }
    return !sig;
}

static int luahier_singlematch(luahier_MatchState *ms, const char *s, const char *p, const char *ep) {
    if (s >= ms->src_end) return 0;
    int c = (unsigned char)*s;
    switch (*p) {
    case '.': return 1;
    case '%': return luahier_matchclass(c, (unsigned char)*(p + 1));
    case '[':
        /* A class is scanned at every try: a long one is long work (a step per 8 bytes). */
        if (ep - p > 16) luahier_steps(ms, (ep - p) / 8);
        return luahier_matchbracket(c, p, ep - 1);
    default: return (unsigned char)*p == c;
    }
}

static const char *luahier_domatch(luahier_MatchState *ms, const char *s, const char *p);

static const char *luahier_maxexpand(luahier_MatchState *ms, const char *s, const char *p, const char *ep) {
    ptrdiff_t i = 0;
    while (luahier_singlematch(ms, s + i, p, ep)) {
        luahier_step(ms);
        i++;
    }
    while (i >= 0) {
        const char *res = luahier_domatch(ms, s + i, ep + 1);
        if (res) return res;
        i--;
    }
    return NULL;
}

static const char *luahier_minexpand(luahier_MatchState *ms, const char *s, const char *p, const char *ep) {
    for (;;) {
        const char *res = luahier_domatch(ms, s, ep + 1);
        if (res != NULL) return res;
        if (!luahier_singlematch(ms, s, p, ep)) return NULL;
        s++;
    }
}

static const char *luahier_startcapture(luahier_MatchState *ms, const char *s, const char *p, int what) {
    if (ms->level >= LUAHIER_PATTERN_MAXCAPTURES) luaL_error(ms->L, "too many captures");
    ms->capture[ms->level].init = s;
    ms->capture[ms->level].len = what;
    ms->level++;
    const char *res = luahier_domatch(ms, s, p);
    if (res == NULL) ms->level--;
    return res;
}

static const char *luahier_endcapture(luahier_MatchState *ms, const char *s, const char *p) {
    int l = -1;
    for (int i = ms->level - 1; i >= 0; i--)
        if (ms->capture[i].len == LUAHIER_CAP_UNFINISHED) {
            l = i;
            break;
        }
    if (l < 0) luaL_error(ms->L, "invalid pattern capture");
    ms->capture[l].len = s - ms->capture[l].init;
    const char *res = luahier_domatch(ms, s, p);
    if (res == NULL) ms->capture[l].len = LUAHIER_CAP_UNFINISHED;
    return res;
}

static const char *luahier_matchcapture(luahier_MatchState *ms, const char *s, int l) {
    l -= '1';
    if (l < 0 || l >= ms->level || ms->capture[l].len == LUAHIER_CAP_UNFINISHED)
        luaL_error(ms->L, "invalid capture index %%%d", l + 1);
    size_t len = (size_t)ms->capture[l].len;
    if ((size_t)(ms->src_end - s) >= len && memcmp(ms->capture[l].init, s, len) == 0) return s + len;
    return NULL;
}

static const char *luahier_matchbalance(luahier_MatchState *ms, const char *s, const char *p) {
    if (p >= ms->p_end - 1) luaL_error(ms->L, "malformed pattern (missing arguments to '%%b')");
    if (s >= ms->src_end || *s != *p) return NULL;
    int b = *p, e = *(p + 1), cont = 1;
    while (++s < ms->src_end) {
        luahier_step(ms);
        if (*s == e) {
            if (--cont == 0) return s + 1;
        } else if (*s == b) {
            cont++;
        }
    }
    return NULL;
}

static const char *luahier_domatch(luahier_MatchState *ms, const char *s, const char *p) {
    if (ms->depth_left-- == 0) luaL_error(ms->L, "pattern too complex (nested too deeply)");
    for (;;) {
        luahier_step(ms);
        if (p == ms->p_end) break;
        if (*p == '(') {
            s = (p + 1 < ms->p_end && *(p + 1) == ')') ? luahier_startcapture(ms, s, p + 2, LUAHIER_CAP_POSITION)
                                                        : luahier_startcapture(ms, s, p + 1, LUAHIER_CAP_UNFINISHED);
            break;
        }
        if (*p == ')') {
            s = luahier_endcapture(ms, s, p + 1);
            break;
        }
        if (*p == '$' && p + 1 == ms->p_end) {
            s = (s == ms->src_end) ? s : NULL;
            break;
        }
        if (*p == '%' && p + 1 < ms->p_end && *(p + 1) == 'b') {
            s = luahier_matchbalance(ms, s, p + 2);
            if (s == NULL) break;
            p += 4;
            continue;
        }
        if (*p == '%' && p + 1 < ms->p_end && *(p + 1) == 'f') {
            p += 2;
            if (p >= ms->p_end || *p != '[') luaL_error(ms->L, "missing '[' after '%%f' in pattern");
            const char *ep = luahier_classend(ms, p);
            int previous = (s == ms->src_init) ? '\0' : (unsigned char)*(s - 1);
            int current = (s < ms->src_end) ? (unsigned char)*s : '\0';
            if (!luahier_matchbracket(previous, p, ep - 1) && luahier_matchbracket(current, p, ep - 1)) {
                p = ep;
                continue;
            }
            s = NULL;
            break;
        }
        if (*p == '%' && p + 1 < ms->p_end && isdigit((unsigned char)*(p + 1))) {
            s = luahier_matchcapture(ms, s, (unsigned char)*(p + 1));
            if (s == NULL) break;
            p += 2;
            continue;
        }
        const char *ep = luahier_classend(ms, p);
        if (!luahier_singlematch(ms, s, p, ep)) {
            if (ep < ms->p_end && (*ep == '*' || *ep == '?' || *ep == '-')) {
                p = ep + 1;
                continue;
            }
            s = NULL;
            break;
        }
        if (ep < ms->p_end && *ep == '?') {
            const char *res = luahier_domatch(ms, s + 1, ep + 1);
            if (res != NULL) {
                s = res;
                break;
            }
            p = ep + 1;
            continue;
        }
        if (ep < ms->p_end && *ep == '+') {
            s = luahier_maxexpand(ms, s + 1, p, ep);
            break;
        }
        if (ep < ms->p_end && *ep == '*') {
            s = luahier_maxexpand(ms, s, p, ep);
            break;
        }
        if (ep < ms->p_end && *ep == '-') {
            s = luahier_minexpand(ms, s, p, ep);
            break;
        }
        s++;
        p = ep;
    }
    ms->depth_left++;
    return s;
}

/* [-0, +1, e] Capture i, or the whole match (s..e) when there are no captures. */
static void luahier_pushcapture(luahier_MatchState *ms, int i, const char *s, const char *e) {
    if (i >= ms->level) {
        if (i != 0) luaL_error(ms->L, "invalid capture index %%%d", i + 1);
        lua_pushlstring(ms->L, s, (size_t)(e - s));
        return;
    }
    ptrdiff_t l = ms->capture[i].len;
    if (l == LUAHIER_CAP_UNFINISHED) luaL_error(ms->L, "unfinished capture");
    if (l == LUAHIER_CAP_POSITION)
        lua_pushinteger(ms->L, (ms->capture[i].init - ms->src_init) + 1);
    else
        lua_pushlstring(ms->L, ms->capture[i].init, (size_t)l);
}

static int luahier_pushcaptures(luahier_MatchState *ms, const char *s, const char *e) {
    int n = (ms->level == 0 && s) ? 1 : ms->level;
    luaL_checkstack(ms->L, n, "too many captures");
    for (int i = 0; i < n; i++) luahier_pushcapture(ms, i, s, e);
    return n;
}

static void luahier_prepmatch(luahier_MatchState *ms, lua_State *L, const char *s, size_t ls, const char *p, size_t lp) {
    ms->L = L;
    ms->src_init = s;
    ms->src_end = s + ls;
    ms->p_end = p + lp;
    ms->steps_limit = LUAHIER_PATTERN_STEPS + 64 * (long long)ls;
    ms->steps_left = ms->steps_limit;
    ms->unreported = 0;
}

static void luahier_reprepmatch(luahier_MatchState *ms) {
    ms->level = 0;
    ms->depth_left = LUAHIER_PATTERN_MAXDEPTH;
}

static size_t luahier_startindex(lua_Integer pos, size_t len) {
    if (pos > 0) return (size_t)pos;
    if (pos == 0) return 1;
    if (pos < -(lua_Integer)len) return 1;
    return len + (size_t)pos + 1;
}

/* Whether a pattern has no special characters (it may hold NULs: each piece is checked). */
static int luahier_nospecials(const char *p, size_t l) {
    size_t upto = 0;
    do {
        if (strpbrk(p + upto, "^$*+?.([%-")) return 0;
        upto += strlen(p + upto) + 1;
    } while (upto <= l);
    return 1;
}

static int luahier_findaux(lua_State *L, int find) {
    size_t ls, lp;
    const char *s = luaL_checklstring(L, 1, &ls);
    const char *p = luaL_checklstring(L, 2, &lp);
    size_t init = luahier_startindex(luaL_optinteger(L, 3, 1), ls) - 1;
    if (init > ls) {
        luaL_pushfail(L);
        return 1;
    }
    if (find && (lua_toboolean(L, 4) || luahier_nospecials(p, lp))) {
        lua_settop(L, 3);
        return luahier_plainfind(L);
    }
    luahier_MatchState ms;
    const char *s1 = s + init;
    int anchor = (*p == '^');
    if (anchor) {
        p++;
        lp--;
    }
    luahier_prepmatch(&ms, L, s, ls, p, lp);
    do {
        luahier_reprepmatch(&ms);
        const char *e = luahier_domatch(&ms, s1, p);
        if (e != NULL) {
            if (find) {
                lua_pushinteger(L, (s1 - s) + 1);
                lua_pushinteger(L, e - s);
                return luahier_pushcaptures(&ms, NULL, 0) + 2;
            }
            return luahier_pushcaptures(&ms, s1, e);
        }
    } while (s1++ < ms.src_end && !anchor);
    luaL_pushfail(L);
    return 1;
}

static int luahier_strfind(lua_State *L) { return luahier_findaux(L, 1); }
static int luahier_strmatch(lua_State *L) { return luahier_findaux(L, 0); }

typedef struct luahier_GMatch {
    const char *src, *p, *lastmatch;
    luahier_MatchState ms;
} luahier_GMatch;

static int luahier_gmatchstep(lua_State *L) {
    luahier_GMatch *gm = (luahier_GMatch *)lua_touserdata(L, lua_upvalueindex(3));
    gm->ms.L = L;
    gm->ms.steps_left = gm->ms.steps_limit;
    for (const char *src = gm->src; src <= gm->ms.src_end; src++) {
        luahier_reprepmatch(&gm->ms);
        const char *e = luahier_domatch(&gm->ms, src, gm->p);
        if (e != NULL && e != gm->lastmatch) {
            gm->src = gm->lastmatch = e;
            return luahier_pushcaptures(&gm->ms, src, e);
        }
    }
    return 0;
}

static int luahier_gmatch(lua_State *L) {
    size_t ls, lp;
    const char *s = luaL_checklstring(L, 1, &ls);
    const char *p = luaL_checklstring(L, 2, &lp);
    size_t init = luahier_startindex(luaL_optinteger(L, 3, 1), ls) - 1;
    lua_settop(L, 2);
    luahier_GMatch *gm = (luahier_GMatch *)lua_newuserdatauv(L, sizeof(luahier_GMatch), 0);
    if (init > ls) init = ls + 1;
    luahier_prepmatch(&gm->ms, L, s, ls, p, lp);
    gm->src = s + init;
    gm->p = p;
    gm->lastmatch = NULL;
    lua_pushcclosure(L, luahier_gmatchstep, 3);
    return 1;
}

static void luahier_addreplacement(luahier_MatchState *ms, luaL_Buffer *b, const char *s, const char *e) {
    size_t l;
    lua_State *L = ms->L;
    const char *news = lua_tolstring(L, 3, &l);
    const char *p;
    while ((p = (const char *)memchr(news, '%', l)) != NULL) {
        luaL_addlstring(b, news, (size_t)(p - news));
        p++;
        if (*p == '%') {
            luaL_addchar(b, *p);
        } else if (*p == '0') {
            luaL_addlstring(b, s, (size_t)(e - s));
        } else if (isdigit((unsigned char)*p)) {
            luahier_pushcapture(ms, *p - '1', s, e);
            luaL_tolstring(L, -1, NULL);
            lua_remove(L, -2);
            luaL_addvalue(b);
        } else {
            luaL_error(L, "invalid use of '%c' in replacement string", '%');
        }
        l -= (size_t)(p + 1 - news);
        news = p + 1;
    }
    luaL_addlstring(b, news, l);
}

static int luahier_addvalue(luahier_MatchState *ms, luaL_Buffer *b, const char *s, const char *e, int tr) {
    lua_State *L = ms->L;
    switch (tr) {
    case LUA_TFUNCTION: {
        lua_pushvalue(L, 3);
        int n = luahier_pushcaptures(ms, s, e);
        lua_call(L, n, 1);
        break;
    }
    case LUA_TTABLE:
        luahier_pushcapture(ms, 0, s, e);
        lua_gettable(L, 3);
        break;
    default:
        luahier_addreplacement(ms, b, s, e);
        return 1;
    }
    if (!lua_toboolean(L, -1)) {
        lua_pop(L, 1);
        luaL_addlstring(b, s, (size_t)(e - s));
        return 0;
    }
    if (!lua_isstring(L, -1)) return luaL_error(L, "invalid replacement value (a %s)", luaL_typename(L, -1));
    luaL_addvalue(b);
    return 1;
}

static int luahier_gsub(lua_State *L) {
    size_t srcl, lp;
    const char *src = luaL_checklstring(L, 1, &srcl);
    const char *p = luaL_checklstring(L, 2, &lp);
    const char *lastmatch = NULL;
    int tr = lua_type(L, 3);
    lua_Integer max_s = luaL_optinteger(L, 4, (lua_Integer)srcl + 1);
    int anchor = (*p == '^');
    lua_Integer n = 0;
    int changed = 0;
    luahier_MatchState ms;
    luaL_Buffer b;
    luaL_argexpected(L, tr == LUA_TNUMBER || tr == LUA_TSTRING || tr == LUA_TFUNCTION || tr == LUA_TTABLE, 3,
                     "string/function/table");
    luaL_buffinit(L, &b);
    if (anchor) {
        p++;
        lp--;
    }
    luahier_prepmatch(&ms, L, src, srcl, p, lp);
    while (n < max_s) {
        luahier_reprepmatch(&ms);
        const char *e = luahier_domatch(&ms, src, p);
        if (e != NULL && e != lastmatch) {
            n++;
            changed = luahier_addvalue(&ms, &b, src, e, tr) | changed;
            src = lastmatch = e;
        } else if (src < ms.src_end) {
            luaL_addchar(&b, *src++);
        } else {
            break;
        }
        if (anchor) break;
    }
    if (!changed) {
        lua_pushvalue(L, 1);
    } else {
        luaL_addlstring(&b, src, (size_t)(ms.src_end - src));
        luaL_pushresult(&b);
    }
    lua_pushinteger(L, n);
    return 2;
}

int luahier_pushpatternlib(lua_State *L) {
    lua_createtable(L, 0, 4);
    lua_pushcfunction(L, luahier_strfind);
    lua_setfield(L, -2, "find");
    lua_pushcfunction(L, luahier_strmatch);
    lua_setfield(L, -2, "match");
    lua_pushcfunction(L, luahier_gmatch);
    lua_setfield(L, -2, "gmatch");
    lua_pushcfunction(L, luahier_gsub);
    lua_setfield(L, -2, "gsub");
    return 1;
}
