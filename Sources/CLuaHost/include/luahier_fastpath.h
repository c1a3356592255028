/* Runs of responders and the fast path of `triggerEvent` (fastpath.c). */
#ifndef LUAHIER_FASTPATH_H
#define LUAHIER_FASTPATH_H

#include <lua.h>

/* Consecutive Lua `receive*` responders of one dispatch, called in one protected call instead
 * of one each (LuaResponderRunner.swift). The dispatcher's rules still hold: each is called
 * with the same value, in order; the first answer other than the interned "notHandled" ends
 * the run and goes back to Swift, which applies it; so does any change to the tree's chains
 * (a responder removed meanwhile must not be called). */
typedef struct luahier_Run {
    const int *refs;          /* registry references of the functions, in order */
    int count;
    int reached;              /* the index being called; after the run, how far it got */
    int stopped;              /* 1: refs[reached] answered, its answer is on the stack */
    const void *not_handled;  /* the interned "notHandled" string */
    const long *changes;      /* the tree's chain-change count, and its value at start */
    long changes_at_start;
} luahier_Run;

/* `node:triggerEvent(event)` at the top level, walked along a plan the host made for the
 * node (ChainPlan.swift, LuaFastPath.swift): no Swift on the way unless something other than
 * "notHandled" or "handled" happens. Anything the plan does not cover goes to the host as it
 * is; anything the walk cannot finish goes to the host to finish, from where the walk was.
 *
 * A plan is a table, all in its array part: */
enum {
    LUAHIER_PLAN_STAMP = 1,    /* the tree's chain-change count when it was made */
    LUAHIER_PLAN_OBJECT = 2,   /* the host's ChainPlan (a userdata) */
    LUAHIER_PLAN_AT = 3,       /* the origin's path */
    LUAHIER_PLAN_END = 4,      /* the status of an event that passes it all: "unhandled" or "detached" */
    LUAHIER_PLAN_HOPS = 5,     /* nodes in the chain, charged to the instruction budget */
    LUAHIER_PLAN_COUNT = 6,    /* event responders in the chain */
    LUAHIER_PLAN_TRACED = 7,   /* true: the host finishes every dispatch (it records the trace) */
    LUAHIER_PLAN_ENTRIES = 8,  /* then per responder, in dispatch order (at most 64): */
    LUAHIER_PLAN_STRIDE = 5    /* function (false: the host calls it), filter (false: any; a type
                                * name; or a set of them), node path, index on its node, where */
};

/* The upvalues of the fast `triggerEvent` closure. */
enum {
    LUAHIER_UP_ENTRY = 1,      /* the host entry (the trampoline's upvalue 1) */
    LUAHIER_UP_INDEX,          /* the host function's index (its upvalue 2) */
    LUAHIER_UP_FAST,           /* the luahier_Fast */
    LUAHIER_UP_PLANS,          /* node userdata -> plan, weak keys */
    LUAHIER_UP_TAGS,           /* the host's domain tags: table -> true (event) / false (error) */
    LUAHIER_UP_TYPE, LUAHIER_UP_STATUS, LUAHIER_UP_KIND, LUAHIER_UP_VALUE, LUAHIER_UP_AT,
    LUAHIER_UP_BY, LUAHIER_UP_RESPONDER, LUAHIER_UP_INDEXKEY, LUAHIER_UP_WHERE,
    LUAHIER_UP_EVENT, LUAHIER_UP_RECEIVEEVENT, LUAHIER_UP_HANDLED,
    LUAHIER_UP_PENDINGTRACES,  /* outcome -> what its trace is made from, weak keys */
    LUAHIER_UP_TRACEDOUTCOME,  /* the metatable that makes `outcome.trace` on first read */
    LUAHIER_UP_OUTCOMEMETA,    /* the locked metatable of an untraced outcome */
    LUAHIER_UP_COUNT = LUAHIER_UP_OUTCOMEMETA
};

/* A traced walk's lazy trace, kept for its outcome until read: */
enum {
    LUAHIER_WALKTRACE_PLAN = 1,    /* the plan */
    LUAHIER_WALKTRACE_CALLED = 2,  /* the entries called, one byte each */
    LUAHIER_WALKTRACE_TYPE = 3,    /* the event's type */
    LUAHIER_WALKTRACE_HANDLED = 4  /* whether the last one called answered "handled" */
};

/* How a walk that the host must finish stopped (the codes above 0 are lua_pcall's). */
enum {
    LUAHIER_STOP_ANSWER = -1,  /* a responder answered something else: the answer is passed */
    LUAHIER_STOP_HOST = -2,    /* a responder the host calls (another kind, a Swift closure) */
    LUAHIER_STOP_CHANGED = -3, /* the tree changed after a responder: go on after it */
    LUAHIER_STOP_END = -4      /* the walk could not start and the plan has no event responder:
                                * the host ends the dispatch */
};

/* What the fast path shares with the host. */
typedef struct luahier_Fast {
    const long *changes;       /* the tree's chain-change count */
    long *depth;               /* the dispatcher's nesting depth */
    const void *not_handled;   /* the interned verdicts */
    const void *handled;
    long long dispatch_charge; /* charged to the instruction budget per dispatch */
    long long dispatch_instructions; /* a dispatch's own budget (0: none) */
    double dispatch_seconds;
    long long walks;           /* dispatches the fast path took, and of those, */
    long long handovers;       /* how many the host finished (for tests and benchmarks) */
} luahier_Fast;

/* How a plan walk ended. The walk returns the first four; the last two are the host's
 * reading of a walk that raised an error. */
enum {
    LUAHIER_WALKED_ALL = 0,      /* every matching responder answered "notHandled" */
    LUAHIER_WALKED_ANSWER = 1,   /* the entry answered something else */
    LUAHIER_WALKED_HOST = 2,     /* the entry is for the host to call */
    LUAHIER_WALKED_CHANGED = 3,  /* the tree changed after the entry */
    LUAHIER_WALKED_RAISED = 4,   /* the entry's call raised an error */
    LUAHIER_WALKED_NOTHING = 5   /* the walk failed before its first call and the plan has no
                                  * event responder */
};

/* The entries a plan walk called, in order, for traces and handovers. */
typedef struct luahier_Called {
    unsigned char entries[64];
    int count;
} luahier_Called;

/* [-2, +(0|1), e] A lua_CFunction, called protected with (light userdata run, value). On an
 * error, `reached` names the responder that raised it. */
int luahier_runresponders(lua_State *L);

/* [-0, +1, -] Pushes the plan walk, loaded without debug information; returns LUA_OK, or an
 * error status with the error pushed instead. Made once, when the host starts. */
int luahier_pushplanwalk(lua_State *L);

/* [-0, +0, e] Called by the trampoline after every host function: if a plan walk is under
 * way and the host call moved the chain-change count, the walk is marked stale and stops
 * after the responder that made the call. */
void luahier_notewalkchange(lua_State *L);

/* [-?, +1, e] `node:triggerEvent(event)`. The fast path takes a top-level dispatch of an
 * event table from a node with a current plan; anything else goes to the host unchanged. */
int luahier_trigger(lua_State *L);

#endif
