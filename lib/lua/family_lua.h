/*
 * Lua fragments shared by the family's scripts, and the script bodies each
 * kind's file defines. The fragments exist so that the safety rules every
 * acquire-type script must follow (the master's clock, the deadline, the
 * fencing floor, TTLs that never shrink) are written once, not once per
 * script. Internal to the *_scripts.c files.
 *
 * Conventions of every family script:
 * - Times come from the master's own clock (TIME): `now_us` in
 *   microseconds, `now` in milliseconds. Expiry and liveness scores in
 *   sorted sets are in the master's milliseconds. Integers stay below
 *   2^53, so Lua's doubles hold them exactly. Redis passes a Lua number
 *   argument on exactly (%.17g), so a number given to redis.call is
 *   written as is (string.format costs the server about 0.4 us a call);
 *   but Lua's own tostring and `..` use %.14g, which turns a 16-digit
 *   microsecond value into 1.7e+15, so a value that is concatenated
 *   goes through fmt (%.0f) first.
 * - A deadline argument is in the master's microseconds, 0 for none, and
 *   is the last argument of every acquire-type script (the connection
 *   appends it); an acquisition that runs after it changes nothing and
 *   replies {-1, now_us}.
 * - Acquire-type scripts take their arguments in the reentrant lock's
 *   order: lease, owner, count (the owner's count to set where its field
 *   is absent: 1 for a first acquisition, the hold's count + 1 for a
 *   re-entry, so that a master that missed the hold catches up), fencing
 *   floor, then the kind's own, then the deadline. A grant replies
 *   {1, token, count, existed, ...}, existed being 1 when the owner's
 *   field was there before (a re-entry this master knew of). Fencing
 *   counters keep RL_FENCE_TTL_MS, written into the scripts.
 * - Scripts that create keys first probe PEXPIRE's permission (ACL
 *   probe below), so that an ACL user without it has nothing written
 *   rather than a key without a TTL; or, on a common path that only
 *   creates keys, write them, set their TTL by pcall and delete them
 *   again when PEXPIRE is refused, as the reentrant lock's acquire does.
 * - Each acquire and release answers its common case (a free lock with
 *   no queue or waiter; the release of a count-1 hold with nobody
 *   waiting) first, before the helpers are defined or the master's clock
 *   is read where that case needs none; docs/performance.md says what
 *   each call costs.
 * - A first (non-reentrant) exclusive acquisition's token is
 *   max(counter + 1, floor, wall_), the counter being 0 where there is
 *   none (never used, expired, or lost with a master's memory); wall_ is
 *   the client's wall clock as the script runs (RL_LUA_CLIENT_WALL). The
 *   master's own clock sets no token, as for the reentrant lock
 *   (scripts.c): a master restarted empty with its clock far ahead would
 *   lift tokens to a height that a later state, seeded from a correct
 *   clock, would not reach. "First" is as the client sees it (its count
 *   argument is 1): where the owner's field is there already, it is left
 *   over from a hold the client ended without its release landing, and
 *   the grant increments that count but takes a new token, as the
 *   reentrant lock's acquire does (scripts.c).
 * - A kind's pub/sub channel is its first key followed by ":ch".
 * - Every key written gets a TTL, and a TTL is never shortened by a grant
 *   or a renewal (keep()).
 */
#ifndef RL_FAMILY_LUA_H
#define RL_FAMILY_LUA_H

#include "scripts.h" /* RL_FENCE_TTL_MS */

#define RL_LUA_STR_(x) #x
#define RL_LUA_STR(x) RL_LUA_STR_(x)

/* now_us and now from the master's clock. */
#define RL_LUA_CLOCK                                                        \
  "local t_ = redis.call('time')\n"                                         \
  "local now_us = tonumber(t_[1]) * 1000000 + tonumber(t_[2])\n"           \
  "local now = math.floor(now_us / 1000)\n"

/* Refuses, changing nothing, when the deadline has passed. The argument
 * is a Lua expression; acquire-type scripts pass "ARGV[#ARGV]": the
 * deadline is their last argument, as for the reentrant lock's acquire,
 * because the connection appends it as it writes the command, in that
 * master's own clock (round.h, rl_arg_master_deadline). Then sets wall_
 * (RL_LUA_CLIENT_WALL), which next_token uses. Needs RL_LUA_CLOCK. */
#define RL_LUA_DEADLINE(arg)                                                \
  RL_LUA_CLOCKED_ARG(arg)                                                   \
  "if deadline_ > 0 and now_us > deadline_ then return {-1, now_us} end\n"  \
  RL_LUA_CLIENT_WALL

/* keep(key, ms): makes the key's TTL at least ms (a key without a TTL
 * gets one), never shorter. A missing key is left missing. */
#define RL_LUA_KEEP                                                         \
  "local function keep(key, ms)\n"                                          \
  "  ms = math.ceil(ms)\n"                                                  \
  "  if ms < 1 then ms = 1 end\n"                                           \
  "  local p = redis.call('pttl', key)\n"                                   \
  "  if p ~= -2 and p < ms then redis.call('pexpire', key, ms) end\n"      \
  "end\n"

/* raise(key, ms): what keep() does, for renewals, where the TTL is
 * usually raised: PEXPIRE GT raises it in one call where keep() takes
 * PTTL and PEXPIRE. Where GT changes nothing (a longer TTL, a missing
 * key, or none: GT counts none as infinite), PTTL tells the key without
 * a TTL, which gets one. Elsewhere keep() is cheaper: a key just created,
 * or one whose TTL is long enough, costs it one call and raise() two. */
#define RL_LUA_RAISE                                                        \
  "local function raise(key, ms)\n"                                         \
  "  ms = math.ceil(ms)\n"                                                  \
  "  if ms < 1 then ms = 1 end\n"                                           \
  "  if redis.call('pexpire', key, ms, 'GT') == 0 and\n"                    \
  "     redis.call('pttl', key) == -1 then\n"                               \
  "    redis.call('pexpire', key, ms)\n"                                    \
  "  end\n"                                                                 \
  "end\n"

/* fmt(n): an integer as Redis expects it. */
#define RL_LUA_FMT                                                          \
  "local function fmt(n) return string.format('%.0f', n) end\n"

/* next_token(fence_key, floor): the token of a first exclusive
 * acquisition, at least the floor sent and the client's wall clock now
 * (wall_), stored back in the counter for RL_FENCE_TTL_MS: the reentrant
 * lock's (scripts.h). Needs RL_LUA_DEADLINE. */
#define RL_LUA_NEXT_TOKEN RL_LUA_NEXT_TOKEN_FN

/* Fails the script before it writes anything when the caller may not
 * PEXPIRE (an ACL user without it), since Redis does not roll a script
 * back and a key written without its TTL would stay forever. With GT the
 * call changes nothing: a key's TTL is never lowered, a key without one
 * keeps none, a missing key stays missing; but the permission is
 * checked. */
#define RL_LUA_ACL_PROBE "redis.call('pexpire', KEYS[1], 1, 'GT')\n"

/* Bodies, one array per script, defined by the kinds' files. */
extern const char rl_fam_fair_acquire_lua[], rl_fam_fair_unlock_lua[],
    rl_fam_fair_force_lua[], rl_fam_fair_leave_lua[], rl_fam_fair_undo_lua[];
extern const char rl_fam_rw_read_acquire_lua[], rl_fam_rw_read_unlock_lua[],
    rl_fam_rw_write_acquire_lua[], rl_fam_rw_write_unlock_lua[],
    rl_fam_rw_write_undo_lua[], rl_fam_rw_write_leave_lua[],
    rl_fam_rw_force_lua[], rl_fam_rw_query_lua[];
extern const char rl_fam_sem_acquire_lua[], rl_fam_sem_release_lua[],
    rl_fam_sem_drop_lua[], rl_fam_sem_available_lua[], rl_fam_sem_force_lua[];
extern const char rl_fam_latch_set_lua[], rl_fam_latch_count_down_lua[],
    rl_fam_latch_count_lua[], rl_fam_latch_force_lua[];
extern const char rl_fam_multi_acquire_lua[], rl_fam_multi_unlock_lua[],
    rl_fam_multi_undo_lua[], rl_fam_multi_acquire_xslot_lua[],
    rl_fam_multi_unlock_xslot_lua[], rl_fam_multi_undo_xslot_lua[];
extern const char rl_fam_lease_renew_lua[], rl_fam_waiter_touch_lua[];
extern const char rl_fam_elect_proclaim_lua[], rl_fam_elect_read_lua[],
    rl_fam_elect_notify_lua[], rl_fam_elect_status_lua[];

#endif
