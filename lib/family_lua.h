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
 *   argument on exactly (%.17g), but Lua's own tostring and `..` use
 *   %.14g, which turns a 16-digit microsecond value into 1.7e+15; so
 *   values are formatted with %.0f (fmt) before they are written or
 *   concatenated.
 * - A deadline argument is in the master's microseconds, 0 for none; an
 *   acquisition that runs after it changes nothing and replies
 *   {-1, now_us}, so the client can also refine its clock offset.
 * - A first (non-reentrant) exclusive acquisition's token is
 *   max(counter + 1, floor), or max(now_us, floor) when there is no
 *   counter (never used, expired, or lost with a master's memory).
 * - A kind's pub/sub channel is its first key followed by ":ch".
 * - Every key written gets a TTL, and a TTL is never shortened by a grant
 *   or a renewal (keep()).
 */
#ifndef RL_FAMILY_LUA_H
#define RL_FAMILY_LUA_H

/* now_us and now from the master's clock. */
#define RL_LUA_CLOCK                                                        \
  "local t_ = redis.call('time')\n"                                         \
  "local now_us = tonumber(t_[1]) * 1000000 + tonumber(t_[2])\n"           \
  "local now = math.floor(now_us / 1000)\n"

/* Refuses, changing nothing, when the deadline in ARGV[i] has passed.
 * The argument is a Lua expression such as "ARGV[5]". */
#define RL_LUA_DEADLINE(arg)                                                \
  "local deadline_ = tonumber(" arg ") or 0\n"                              \
  "if deadline_ > 0 and now_us > deadline_ then return {-1, now_us} end\n"

/* keep(key, ms): makes the key's TTL at least ms (a key without a TTL
 * gets one), never shorter. A missing key is left missing. */
#define RL_LUA_KEEP                                                         \
  "local function keep(key, ms)\n"                                          \
  "  ms = math.ceil(ms)\n"                                                  \
  "  if ms < 1 then ms = 1 end\n"                                           \
  "  local p = redis.call('pttl', key)\n"                                   \
  "  if p ~= -2 and p < ms then redis.call('pexpire', key, ms) end\n"      \
  "end\n"

/* fmt(n): an integer as Redis expects it. */
#define RL_LUA_FMT                                                          \
  "local function fmt(n) return string.format('%.0f', n) end\n"

/* next_token(fence_key, floor, ttl): the token of a first exclusive
 * acquisition, stored back in the counter. Needs RL_LUA_CLOCK, RL_LUA_FMT. */
#define RL_LUA_NEXT_TOKEN                                                   \
  "local function next_token(key, floor, ttl)\n"                            \
  "  local f = tonumber(redis.call('get', key) or '0')\n"                   \
  "  if f > 0 then f = f + 1 else f = now_us end\n"                         \
  "  if f < floor then f = floor end\n"                                     \
  "  redis.call('set', key, fmt(f), 'px', ttl)\n"                           \
  "  return f\n"                                                            \
  "end\n"

/* current_token(fence_key, floor, ttl): a shared (read) hold's token: the
 * counter as it is, so the token of the last exclusive acquisition before
 * it, raised to the floor (and stored, so the next exclusive token is
 * above it). Needs RL_LUA_CLOCK, RL_LUA_FMT. */
#define RL_LUA_CURRENT_TOKEN                                                \
  "local function current_token(key, floor, ttl)\n"                         \
  "  local f = tonumber(redis.call('get', key) or '0')\n"                   \
  "  if f <= 0 then f = now_us end\n"                                       \
  "  if f < floor then f = floor end\n"                                     \
  "  redis.call('set', key, fmt(f), 'px', ttl)\n"                           \
  "  return f\n"                                                            \
  "end\n"

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

#endif
