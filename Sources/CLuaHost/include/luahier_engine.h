/* The driver of every dispatch (engine.c): runs the walk (luahier_walk.h) in protected calls:
 * a responder's raised error goes back into the walk at the next responder (the position
 * rule), a tripped limit ends the dispatch, and the end is the outcome; and the trigger that
 * Lua's `node:triggerEvent` and `node:reportError` call. The layout it reads is
 * luahier_enginetypes.h's. Uses host functions, errors, limits and the walk. */
#ifndef LUAHIER_ENGINE_H
#define LUAHIER_ENGINE_H

#include <lua.h>

#include "luahier_enginetypes.h"

/* [-0, +1, m] A new table of the words, LUAHIER_WORD_* -> its text (luahier_enginetypes.h). */
void luahier_pushwords(lua_State *L);

/* [-0, +(0|LUAHIER_DISPATCH_RESULTS), -] Runs a dispatch of the value at `value` (normalized
 * and tagged, with its type at `type`) along the plan at `plan`, inside the caller's budget:
 * the driver's pcalls catch every error of the responders, so it raises nothing (every
 * allocation of its own is the host's). Returns 0 with LUAHIER_DISPATCH_RESULTS values pushed
 * (`r` says where the final value, its type, the choice and the trace record are) and `r`
 * filled; or LUAHIER_FAIL_DEPTH when it would nest past the limit (nothing pushed). */
int luahier_rundispatch(lua_State *L, luahier_Engine *engine, int plan, int value, int type, int is_error,
                        luahier_Result *r);

/* [-0, +0, -] Which dispatch runs at the innermost depth now (luahier_Engine.serials). */
long long luahier_dispatchserial(const luahier_Engine *engine);

/* [-0, +0, -] A responder was removed: the dispatches under way, whose plans have it, call the
 * skipper in its place (contract §4: a responder removed during a dispatch is not called). Their
 * plans are found in their walks' frames, on the threads the dispatches run on. `object` is
 * the responder's address (what LUAHIER_ENTRY_OBJECT holds). */
void luahier_skipremoved(lua_State *L, const luahier_Engine *engine, const void *object);

/* `node:triggerEvent(event)` and `node:reportError(err)`: upvalue LUAHIER_TRIGGER_DOMAIN says
 * which. It makes the outcome table (contract §5): status, kind, value, at, by, responder, choice;
 * a traced one's trace is made on first read (LuaEngine.swift). The closure's upvalues, after
 * the trampoline's two: */
enum {
    LUAHIER_TRIGGER_ENGINE = 1,   /* the luahier_Engine (light userdata) */
    LUAHIER_TRIGGER_DOMAIN,       /* false: events, true: errors */
    LUAHIER_TRIGGER_NODEMETA,     /* the node metatable, to know a node */
    LUAHIER_TRIGGER_OUTCOMEMETA,  /* the metatables of outcomes, untraced and traced, */
    LUAHIER_TRIGGER_TRACEDMETA,
    LUAHIER_TRIGGER_PENDING,      /* outcome -> {plan, trace record} (weak keys) */
    LUAHIER_TRIGGER_PLANS,        /* the engine's plans (luahier_Engine.plans_ref) */
    LUAHIER_TRIGGER_WORDS,        /* the words table, then each word, LUAHIER_WORD_* after this one */
    LUAHIER_TRIGGER_COUNT = LUAHIER_TRIGGER_WORDS + LUAHIER_WORD_COUNT
};
int luahier_trigger(lua_State *L);

#endif
