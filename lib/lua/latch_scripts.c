/*
 * The count-down latch's scripts: set once to a count, counted down by
 * anyone, awaited by many until it reaches zero.
 *
 * Why it looks like this. Three things a plain counter gets wrong:
 * - A count-down that timed out on one master may be sent again, and with
 *   N masters a count-down reaches some masters and not others. So every
 *   count-down carries an id (unique per call, the same on every master
 *   and every retry) and a master counts an id once: retries are safe and
 *   the masters converge.
 * - An awaiter must tell "reached zero" from "gone": a latch whose
 *   counters all vanished (abandoned, expired) must not release its
 *   awaiters as if the events had happened. So a latch that reaches zero
 *   stays, open, for `linger` ms, and a missing latch is a state of its
 *   own.
 * - An awaiter that sleeps through "zero, then set again" must still see
 *   that its latch opened: every setting gets a new generation (the
 *   master's clock in microseconds), and a changed generation means the
 *   awaited one opened.
 *
 *   KEYS[1] <prefix>{<name>}:l    hash: count, init, gen, ttl, linger
 *   KEYS[2] <prefix>{<name>}:l:d  set: ids of the count-downs counted
 *   channel <prefix>{<name>}:l:ch message: the generation that opened
 *
 * TTLs: a counting latch lives `ttl` ms after its last activity (setting
 * or a count-down), so an abandoned one goes; an open one lives `linger`
 * ms and goes. The id set lives with the latch and goes when it opens.
 * Redis does not roll a script back when a command in it fails (an ACL
 * user without +pexpire), so a key is given its TTL before it is written
 * (PEXPIRE of a key not there yet is a no-op that fails that check first).
 */
#include "family_lua.h"

/*
 * ARGV[1] count (>= 1), [2] ttl ms, [3] linger ms. Sets the latch unless
 * it is counting. Replies {1, count, gen} set (a missing or open latch
 * starts a new generation), {0, count, gen} already counting (nothing
 * changed), {-4} a count below 1. Numbers go to HSET as Lua numbers,
 * which Redis writes exactly (%.17g; the generation is below 2^53). The
 * latch is written, then given its TTL; a refused PEXPIRE (an ACL user
 * without it) deletes it again and fails with that error.
 */
const char rl_fam_latch_set_lua[] =
    "local t_ = redis.call('time')\n"
    "local now_us = tonumber(t_[1]) * 1000000 + tonumber(t_[2])\n"
    "local c = tonumber(redis.call('hget', KEYS[1], 'count') or '0')\n"
    "if c > 0 then\n"
    "  return {0, c, tonumber(redis.call('hget', KEYS[1], 'gen'))}\n"
    "end\n"
    "local n = tonumber(ARGV[1])\n"
    "if n == nil or n < 1 then return {-4} end\n"
    "if n ~= math.floor(n) then n = tonumber(string.format('%.0f', n)) end\n"
    "redis.call('del', KEYS[1], KEYS[2])\n"
    "redis.call('hset', KEYS[1], 'count', n, 'init', n, 'gen', now_us,\n"
    "           'ttl', ARGV[2], 'linger', ARGV[3])\n"
    "local e = redis.pcall('pexpire', KEYS[1], ARGV[2])\n"
    "if type(e) == 'table' and e.err then\n"
    "  redis.call('del', KEYS[1])\n"
    "  return e\n"
    "end\n"
    "return {1, n, now_us}\n";

/*
 * ARGV[1] id of this count-down. Replies {1, count} counted and still
 * above zero (TTLs renewed), {2, 0} this one opened it (announced; the
 * latch lingers open), {3, 0} it was open already, {4, count} this id was
 * counted before, {0, -1} no such latch. Only 1 and 2 change anything.
 * The latch's fields come in one HMGET. The id set gets its TTL before
 * the id is added (a PEXPIRE of a set not there yet is a no-op that fails
 * an ACL user without it before anything is written), except where this
 * count-down opens the latch: the set is deleted in the same script.
 */
const char rl_fam_latch_count_down_lua[] =
    "local v = redis.call('hmget', KEYS[1], 'count', 'ttl', 'linger', 'gen')\n"
    "if not v[1] then return {0, -1} end\n"
    "local c = tonumber(v[1])\n"
    "if c <= 0 then return {3, 0} end\n"
    "local ttl = v[2]\n"
    "if c > 1 then redis.call('pexpire', KEYS[2], ttl) end\n"
    "if redis.call('sadd', KEYS[2], ARGV[1]) == 0 then return {4, c} end\n"
    "c = c - 1\n"
    "redis.call('hset', KEYS[1], 'count', c)\n"
    "if c == 0 then\n"
    "  redis.call('del', KEYS[2])\n"
    "  redis.call('pexpire', KEYS[1], v[3])\n"
    "  redis.call('publish', KEYS[1] .. ':ch', v[4])\n"
    "  return {2, 0}\n"
    "end\n"
    "redis.call('pexpire', KEYS[1], ttl)\n"
    "redis.call('pexpire', KEYS[2], ttl)\n"
    "return {1, c}\n";

/*
 * No arguments. Reads only. Replies {state, count, gen, pttl}: state 0
 * missing (count -1, gen 0), 1 counting, 2 open; pttl the latch's
 * remaining life (an awaiter's bound on how long to sleep).
 */
const char rl_fam_latch_count_lua[] =
    "local v = redis.call('hmget', KEYS[1], 'count', 'gen')\n"
    "if not v[1] then return {0, -1, 0, -2} end\n"
    "local c = tonumber(v[1])\n"
    "local state = 1\n"
    "if c <= 0 then state = 2 end\n"
    "return {state, c, tonumber(v[2]), redis.call('pttl', KEYS[1])}\n";

/* No arguments. Deletes the latch (an operator's reset); awaiters are told
 * to look again ("x"). Replies 1 if it existed. */
const char rl_fam_latch_force_lua[] =
    "if redis.call('del', KEYS[1], KEYS[2]) == 0 then return 0 end\n"
    "redis.call('publish', KEYS[1] .. ':ch', 'x')\n"
    "return 1\n";
