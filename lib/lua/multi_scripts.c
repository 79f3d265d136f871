/*
 * Several reentrant locks at once (rlock_lock_all), in one script per
 * master: every lock or none.
 *
 * Why one script. A client that takes locks one after another can hold
 * some while it waits for the others, and two clients that take {a, b}
 * and {b, a} deadlock (or, with leases, livelock until one expires). One
 * script on one master checks every lock and then takes every lock, with
 * nothing in between, so nobody ever holds part of the set there: the
 * order callers list the locks in does not matter, and there is no wait
 * while holding. With N masters each master grants all or none; the
 * client holds the set when a majority granted it, and undoes the grants
 * of a failed round exactly, as for one lock. The locks are the reentrant
 * lock's own keys, so a set taken here excludes the same names taken one
 * by one, and re-entry counts are shared with single acquisitions.
 *
 *   KEYS[2i-1] <prefix>{<name_i>}        hash: owner -> count
 *   KEYS[2i]   <prefix>{<name_i>}:fence  fencing counter (acquire only)
 *   channel    <prefix>{<name_i>}:ch     the unlock message of lock i
 *
 * The keys of different names lie in different Cluster slots: a master
 * that is a Redis Cluster node runs the _xslot twins, which start with the
 * Redis 7.0 shebang `#!lua flags=allow-cross-slot-keys`, and only when
 * every key of the set is served by that one node. Otherwise the client
 * falls back to taking the locks one by one in one global order (sorted
 * by key), which cannot deadlock either (docs/architecture.md).
 */
#include "family_lua.h"
#include "family_scripts.h"

/*
 * KEYS: pairs (lock hash, fence counter), one per lock.
 * ARGV[1] lease ms, [2] owner, [3] fencing floor (one for all: the
 * client's, as for a single lock), [4..3+n] per lock, the owner's count
 * to set where its hash is absent (1 for a first acquisition; for a
 * reentrant one the hold's count plus one, so that a master that missed
 * the hold catches up, as the lock's acquire does), [4+n] deadline
 * (master us, 0 none): last, appended by the connection. Fencing
 * counters keep RL_FENCE_TTL_MS (family_lua.h).
 * Per lock, exactly the lock's acquire (scripts.c): a first acquisition
 * sets the count and the lease and takes a token max(counter + 1, floor);
 * a re-entry increments and never shortens the TTL, its token the counter
 * as it stands. Replies:
 *   {1, token_1, count_1, existed_1, ..., token_n, count_n, existed_n}
 *       all granted (existed: the owner's field was there before);
 *   {0, i, pttl}   lock i (1-based) is held by another owner, pttl its
 *                  remaining lease: nothing changed;
 *   {-1, now_us}   the deadline had passed: nothing changed.
 * Every TTL is set before the count it guards is written (a no-op PEXPIRE
 * of the absent key first), so that a missing +pexpire can never leave a
 * lock hash without one.
 */
#define MULTI_ACQUIRE_LUA                                                   \
  RL_LUA_CLOCK RL_LUA_FMT RL_LUA_KEEP RL_LUA_DEADLINE("ARGV[#ARGV]")       \
  RL_LUA_NEXT_TOKEN RL_LUA_ACL_PROBE                                        \
  "local lease, owner = tonumber(ARGV[1]), ARGV[2]\n"                       \
  "local floor = tonumber(ARGV[3]) or 0\n"                                  \
  "local n = #KEYS / 2\n"                                                   \
  "for i = 1, n do\n"                                                       \
  "  local k = KEYS[2 * i - 1]\n"                                           \
  "  if redis.call('exists', k) == 1 and\n"                                 \
  "     redis.call('hexists', k, owner) == 0 then\n"                        \
  "    return {0, i, redis.call('pttl', k)}\n"                              \
  "  end\n"                                                                 \
  "end\n"                                                                   \
  "local r = {1}\n"                                                         \
  "for i = 1, n do\n"                                                       \
  "  local k, f = KEYS[2 * i - 1], KEYS[2 * i]\n"                           \
  "  local c, token, existed\n"                                             \
  "  if redis.call('hexists', k, owner) == 1 then\n"                        \
  "    keep(k, lease)\n"                                                    \
  "    c = redis.call('hincrby', k, owner, 1)\n"                            \
  "    if tonumber(ARGV[3 + i]) <= 1 then\n"                                \
  "      token = next_token(f, floor)\n"                                    \
  "    else\n"                                                              \
  "      token = tonumber(redis.call('get', f) or '0')\n"                   \
  "    end\n"                                                               \
  "    existed = 1\n"                                                       \
  "  else\n"                                                                \
  "    c = tonumber(ARGV[3 + i])\n"                                         \
  "    redis.call('pexpire', k, lease)\n"                                   \
  "    redis.call('hset', k, owner, fmt(c))\n"                              \
  "    redis.call('pexpire', k, lease)\n"                                   \
  "    token = next_token(f, floor)\n"                                      \
  "    existed = 0\n"                                                       \
  "  end\n"                                                                 \
  "  r[#r + 1] = token\n"                                                   \
  "  r[#r + 1] = c\n"                                                       \
  "  r[#r + 1] = existed\n"                                                 \
  "end\n"                                                                   \
  RL_LUA_HORIZON("lease")                                                   \
  "return r\n"

/*
 * KEYS: the lock hashes. ARGV[1] owner, then per lock i ARGV[2i] its
 * lease ms and ARGV[2i+1] "1" for the owner's last hold of it (delete
 * whatever the count: the masters' counts may differ, as the lock's
 * unlock says), else "0". Releases one hold of each lock, as the single
 * unlock does (a lock the owner does not hold is left alone), never
 * shortening a TTL. Replies one code per lock: 0 not owner, 1 released
 * (announced on its channel), 2 still held.
 */
#define MULTI_UNLOCK_LUA                                                    \
  RL_LUA_KEEP                                                               \
  "local owner = ARGV[1]\n"                                                 \
  "local r = {}\n"                                                          \
  "for i = 1, #KEYS do\n"                                                   \
  "  local k = KEYS[i]\n"                                                   \
  "  local lease, last = tonumber(ARGV[2 * i]), ARGV[2 * i + 1]\n"          \
  "  if redis.call('hexists', k, owner) == 0 then\n"                        \
  "    r[i] = 0\n"                                                          \
  "  elseif last ~= '1' and\n"                                             \
  "         tonumber(redis.call('hget', k, owner)) > 1 then\n"              \
  "    keep(k, lease)\n"                                                    \
  "    redis.call('hincrby', k, owner, -1)\n"                               \
  "    r[i] = 2\n"                                                          \
  "  else\n"                                                                \
  "    redis.call('del', k)\n"                                              \
  "    redis.call('publish', k .. ':ch', '0')\n"                            \
  "    r[i] = 1\n"                                                          \
  "  end\n"                                                                 \
  "end\n"                                                                   \
  "return r\n"

/*
 * KEYS: the lock hashes. ARGV[1] owner, ARGV[1+i] the count the undone
 * grant set for lock i (the attempt's ARGV[3+i] of acquire). Takes back
 * one grant of each lock, as the single lock's undo does: only where the
 * owner's count is at least that count, so that a master that refused
 * the set (another owner holds one of its locks, or the deadline passed)
 * or never ran it keeps every hold the owner had before the attempt (a
 * set may contain a lock the caller already holds). A decrement, never a
 * reset; TTLs left alone. Replies one code per lock, as unlock (0 where
 * nothing was undone).
 */
#define MULTI_UNDO_LUA                                                      \
  "local owner = ARGV[1]\n"                                                 \
  "local r = {}\n"                                                          \
  "for i = 1, #KEYS do\n"                                                   \
  "  local k = KEYS[i]\n"                                                   \
  "  local n = tonumber(redis.call('hget', k, owner))\n"                    \
  "  if n == nil or n < tonumber(ARGV[1 + i]) then\n"                       \
  "    r[i] = 0\n"                                                          \
  "  elseif n > 1 then\n"                                                   \
  "    redis.call('hincrby', k, owner, -1)\n"                               \
  "    r[i] = 2\n"                                                          \
  "  else\n"                                                                \
  "    redis.call('del', k)\n"                                              \
  "    redis.call('publish', k .. ':ch', '0')\n"                            \
  "    r[i] = 1\n"                                                          \
  "  end\n"                                                                 \
  "end\n"                                                                   \
  "return r\n"

const char rl_fam_multi_acquire_lua[] = MULTI_ACQUIRE_LUA;
const char rl_fam_multi_unlock_lua[] = MULTI_UNLOCK_LUA;
const char rl_fam_multi_undo_lua[] = MULTI_UNDO_LUA;
const char rl_fam_multi_acquire_xslot_lua[] =
    RL_LUA_XSLOT_SHEBANG MULTI_ACQUIRE_LUA;
const char rl_fam_multi_unlock_xslot_lua[] =
    RL_LUA_XSLOT_SHEBANG MULTI_UNLOCK_LUA;
const char rl_fam_multi_undo_xslot_lua[] = RL_LUA_XSLOT_SHEBANG MULTI_UNDO_LUA;
