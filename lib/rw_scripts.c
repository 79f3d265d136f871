/*
 * The read-write lock's scripts: one name gives a read side, shared by any
 * number of readers, and a write side that excludes readers and writers.
 *
 * Why it looks like this. Redisson keeps both sides in one hash with a
 * `mode` field and per-hold timeout keys, and lets a stream of readers
 * starve a writer. Here each concern has its own key, all under the lock's
 * hash tag:
 *
 *   KEYS[1] <prefix>{<name>}:w      hash: writer -> reentry count, PTTL =
 *                                   the write lease (the reentrant lock's
 *                                   shape: its renew script renews it)
 *   KEYS[2] <prefix>{<name>}:r      zset: reader -> its read hold's expiry
 *                                   (master ms)
 *   KEYS[3] <prefix>{<name>}:rc     hash: reader -> read reentry count
 *   KEYS[4] <prefix>{<name>}:wq     zset: waiting writer -> alive-until
 *                                   (master ms)
 *   KEYS[5] <prefix>{<name>}:w:fence string: fencing counter
 *   channel <prefix>{<name>}:w:ch   messages 'w' (writer gone), 'r' (last
 *                                   reader gone), 'q' (last waiting writer
 *                                   gave up)
 *
 * Each read hold has its own expiry in the zset: a crashed reader's share
 * ends at its own expiry, whatever the others do, and every script first
 * drops expired readers. The zset and the count hash live as long as the
 * longest read hold.
 *
 * Writers are not starved: a writer that must wait registers in the
 * waiting-writer set, and while a live waiting writer is there, new
 * readers wait behind it (readers that already hold the read side may
 * still re-enter, or they would deadlock with the writer waiting for
 * them). A waiting writer stays registered only while it shows it is
 * alive (each attempt, or a batched touch, moves its alive-until to now +
 * alive_ms), so a dead waiting writer holds readers back for at most
 * alive_ms.
 *
 * Tokens: a write acquisition's token is the fencing token of an
 * exclusive lock. A read hold's token is the counter as it stands: the
 * token of the last write acquisition before it (raised to the caller's
 * floor), so "my data is at least as new as write T". A writer after it
 * always gets a larger token; readers share theirs.
 */
#include "family_lua.h"

/* Lua helpers over KEYS[1..5], after RL_LUA_CLOCK. prune_readers() drops
 * expired read holds and returns the live count, announcing 'r' if that
 * left no reader and no writer. prune_writers() drops dead waiting
 * writers and returns the live count. */
#define RW_HELPERS                                                          \
  "local function prune_readers()\n"                                        \
  "  local dead = redis.call('zrangebyscore', KEYS[2], '-inf', now)\n"     \
  "  for i = 1, #dead do\n"                                                 \
  "    redis.call('zrem', KEYS[2], dead[i])\n"                              \
  "    redis.call('hdel', KEYS[3], dead[i])\n"                              \
  "  end\n"                                                                 \
  "  local live = redis.call('zcard', KEYS[2])\n"                           \
  "  if live == 0 then\n"                                                   \
  "    redis.call('del', KEYS[2], KEYS[3])\n"                               \
  "    if #dead > 0 and redis.call('exists', KEYS[1]) == 0 then\n"          \
  "      redis.call('publish', KEYS[1] .. ':ch', 'r')\n"                    \
  "    end\n"                                                               \
  "  end\n"                                                                 \
  "  return live\n"                                                         \
  "end\n"                                                                   \
  "local function prune_writers()\n"                                        \
  "  redis.call('zremrangebyscore', KEYS[4], '-inf', now)\n"               \
  "  local n = redis.call('zcard', KEYS[4])\n"                              \
  "  if n == 0 then redis.call('del', KEYS[4]) end\n"                       \
  "  return n\n"                                                            \
  "end\n"                                                                   \
  "local function last_left(key)\n"                                         \
  "  local m = redis.call('zrange', key, -1, -1, 'withscores')\n"          \
  "  if m[2] == nil then return -1 end\n"                                   \
  "  return tonumber(m[2]) - now\n"                                         \
  "end\n"                                                                   \
  "local function read_hold(owner, lease)\n"                                \
  "  local e = now + lease\n"                                               \
  "  local old = tonumber(redis.call('zscore', KEYS[2], owner) or '0')\n"  \
  "  if old > e then e = old end\n"                                         \
  "  redis.call('zadd', KEYS[2], fmt(e), owner)\n"                          \
  "  local n = redis.call('hincrby', KEYS[3], owner, 1)\n"                  \
  "  keep(KEYS[2], e - now)\n"                                              \
  "  keep(KEYS[3], e - now)\n"                                              \
  "  return n\n"                                                            \
  "end\n"

#define RW_PRELUDE RL_LUA_CLOCK RL_LUA_FMT RL_LUA_KEEP RW_HELPERS

/*
 * ARGV[1] lease ms, [2] owner, [3] fence TTL ms, [4] fencing floor,
 * [5] deadline (master us, 0 none).
 *
 * Grants a re-entry to a reader; the read side to the write holder (it
 * keeps it after releasing the write side); and a first read hold when no
 * one else writes and no live writer waits. Replies:
 *   {1, token, count}     granted (count: the owner's read holds here);
 *   {0, wait_ms, why}     not granted: why 1 = another owner writes
 *                         (wait_ms its PTTL), 3 = a writer waits (wait_ms
 *                         until the later of the last read hold's expiry
 *                         and the waiting writer's alive-until);
 *   {-1, now_us}          the deadline had passed: nothing changed.
 */
const char rl_fam_rw_read_acquire_lua[] =
    RW_PRELUDE RL_LUA_DEADLINE("ARGV[5]") RL_LUA_CURRENT_TOKEN
    "local lease, owner = tonumber(ARGV[1]), ARGV[2]\n"
    "local floor = tonumber(ARGV[4])\n"
    "prune_readers()\n"
    "local waiting = prune_writers()\n"
    "if redis.call('hexists', KEYS[3], owner) == 1 or\n"
    "   redis.call('hexists', KEYS[1], owner) == 1 then\n"
    "  local n = read_hold(owner, lease)\n"
    "  return {1, current_token(KEYS[5], floor, ARGV[3]), n}\n"
    "end\n"
    "if redis.call('exists', KEYS[1]) == 1 then\n"
    "  return {0, redis.call('pttl', KEYS[1]), 1}\n"
    "end\n"
    "if waiting > 0 then\n"
    "  local w = math.max(last_left(KEYS[2]), last_left(KEYS[4]))\n"
    "  return {0, w, 3}\n"
    "end\n"
    "local n = read_hold(owner, lease)\n"
    "return {1, current_token(KEYS[5], floor, ARGV[3]), n}\n";

/*
 * ARGV[1] owner. Releases one read hold; also the read side's undo (a
 * decrement; the hold's expiry is left alone). A hold that expired is not
 * the owner's any more. Replies 0 not owner, 1 released (the owner has no
 * read hold left here; 'r' is announced when no reader and no writer
 * remain), 2 still held.
 */
const char rl_fam_rw_read_unlock_lua[] =
    RW_PRELUDE
    "local owner = ARGV[1]\n"
    "prune_readers()\n"
    "if redis.call('hexists', KEYS[3], owner) == 0 then return 0 end\n"
    "if redis.call('hincrby', KEYS[3], owner, -1) > 0 then return 2 end\n"
    "redis.call('hdel', KEYS[3], owner)\n"
    "redis.call('zrem', KEYS[2], owner)\n"
    "if redis.call('zcard', KEYS[2]) == 0 then\n"
    "  redis.call('del', KEYS[2], KEYS[3])\n"
    "  if redis.call('exists', KEYS[1]) == 0 then\n"
    "    redis.call('publish', KEYS[1] .. ':ch', 'r')\n"
    "  end\n"
    "end\n"
    "return 1\n";

/*
 * ARGV[1] lease ms, [2] owner, [3] fence TTL ms, [4] fencing floor,
 * [5] deadline (master us, 0 none), [6] alive_ms: how long the owner stays
 * registered as a waiting writer without another attempt; 0 for a single
 * attempt, which never registers (it would hold readers back for
 * nothing).
 *
 * Grants a re-entry to the writer (TTL never shortened), or the write side
 * when no one writes and no live read hold is left (the owner leaves the
 * waiting set). Replies:
 *   {1, token, count}     granted;
 *   {0, wait_ms, why}     not granted, the owner now registered as a
 *                         waiting writer if alive_ms > 0: why 1 = another
 *                         owner writes (wait_ms its PTTL), 2 = readers hold
 *                         it (wait_ms until the last read hold's expiry);
 *   {-2}                  the owner holds the read side and not the write
 *                         side: it would wait for itself (nothing changed);
 *   {-1, now_us}          the deadline had passed: nothing changed.
 */
const char rl_fam_rw_write_acquire_lua[] =
    RW_PRELUDE RL_LUA_DEADLINE("ARGV[5]") RL_LUA_NEXT_TOKEN
    "local lease, owner = tonumber(ARGV[1]), ARGV[2]\n"
    "local floor, alive = tonumber(ARGV[4]), tonumber(ARGV[6])\n"
    "local live = prune_readers()\n"
    "prune_writers()\n"
    "if redis.call('hexists', KEYS[1], owner) == 1 then\n"
    "  local n = redis.call('hincrby', KEYS[1], owner, 1)\n"
    "  keep(KEYS[1], lease)\n"
    "  return {1, tonumber(redis.call('get', KEYS[5]) or '0'), n}\n"
    "end\n"
    "if redis.call('hexists', KEYS[3], owner) == 1 then return {-2} end\n"
    "if live == 0 and redis.call('exists', KEYS[1]) == 0 then\n"
    "  redis.call('zrem', KEYS[4], owner)\n"
    "  prune_writers()\n"
    "  redis.call('hset', KEYS[1], owner, 1)\n"
    "  redis.call('pexpire', KEYS[1], lease)\n"
    "  return {1, next_token(KEYS[5], floor, ARGV[3]), 1}\n"
    "end\n"
    "if alive > 0 then\n"
    "  redis.call('zadd', KEYS[4], fmt(now + alive), owner)\n"
    "  keep(KEYS[4], alive)\n"
    "end\n"
    "if redis.call('exists', KEYS[1]) == 1 then\n"
    "  return {0, redis.call('pttl', KEYS[1]), 1}\n"
    "end\n"
    "return {0, last_left(KEYS[2]), 2}\n";

/*
 * ARGV[1] lease ms, [2] owner. Releases one write hold. Replies 0 not
 * owner, 1 released ('w' announced; the owner's read holds, if any,
 * stay), 2 still held (TTL never shortened).
 */
const char rl_fam_rw_write_unlock_lua[] =
    RL_LUA_KEEP
    "local owner = ARGV[2]\n"
    "if redis.call('hexists', KEYS[1], owner) == 0 then return 0 end\n"
    "if redis.call('hincrby', KEYS[1], owner, -1) > 0 then\n"
    "  keep(KEYS[1], tonumber(ARGV[1]))\n"
    "  return 2\n"
    "end\n"
    "redis.call('del', KEYS[1])\n"
    "redis.call('publish', KEYS[1] .. ':ch', 'w')\n"
    "return 1\n";

/*
 * ARGV[1] owner, [2] alive_ms (0 if the owner no longer waits). Takes back
 * exactly one write grant (a decrement; the TTL is left alone). When that
 * frees the write side and the owner still waits, it is registered as a
 * waiting writer again, so readers do not slip in while it retries.
 * Replies as unlock.
 */
const char rl_fam_rw_write_undo_lua[] =
    RW_PRELUDE
    "local owner, alive = ARGV[1], tonumber(ARGV[2])\n"
    "if redis.call('hexists', KEYS[1], owner) == 0 then return 0 end\n"
    "if redis.call('hincrby', KEYS[1], owner, -1) > 0 then return 2 end\n"
    "redis.call('del', KEYS[1])\n"
    "if alive > 0 then\n"
    "  redis.call('zadd', KEYS[4], fmt(now + alive), owner)\n"
    "  keep(KEYS[4], alive)\n"
    "end\n"
    "redis.call('publish', KEYS[1] .. ':ch', 'w')\n"
    "return 1\n";

/*
 * ARGV[1] owner. A waiting writer that gives up leaves the waiting set;
 * when it was the last live one and no one writes, 'q' is announced, since
 * readers may go now. Replies 1 if it was registered.
 */
const char rl_fam_rw_write_leave_lua[] =
    RW_PRELUDE
    "local removed = redis.call('zrem', KEYS[4], ARGV[1])\n"
    "if prune_writers() == 0 and removed == 1 and\n"
    "   redis.call('exists', KEYS[1]) == 0 then\n"
    "  redis.call('publish', KEYS[1] .. ':ch', 'q')\n"
    "end\n"
    "return removed\n";

/*
 * ARGV[1] side: 'w' deletes the write side whoever holds it, 'r' every
 * read hold. Replies 1 if there was something to delete (and announces
 * it).
 */
const char rl_fam_rw_force_lua[] =
    "if ARGV[1] == 'w' then\n"
    "  if redis.call('del', KEYS[1]) == 0 then return 0 end\n"
    "  redis.call('publish', KEYS[1] .. ':ch', 'w')\n"
    "  return 1\n"
    "end\n"
    "if redis.call('del', KEYS[2], KEYS[3]) == 0 then return 0 end\n"
    "redis.call('publish', KEYS[1] .. ':ch', 'r')\n"
    "return 1\n";

/*
 * ARGV[1] owner (may be empty). Reads only, so it may run anywhere.
 * Replies {write count of the owner, live read count of the owner, live
 * readers, write side held (0/1), live waiting writers, write PTTL (-2
 * when free), ms until the last read hold expires (-1 when none)}.
 */
const char rl_fam_rw_query_lua[] =
    RL_LUA_CLOCK RL_LUA_FMT
    "local owner = ARGV[1]\n"
    "local wc = tonumber(redis.call('hget', KEYS[1], owner) or '0')\n"
    "local rc = 0\n"
    "local e = tonumber(redis.call('zscore', KEYS[2], owner) or '0')\n"
    "if e > now then rc = tonumber(redis.call('hget', KEYS[3], owner) or '0') end\n"
    "local readers = redis.call('zcount', KEYS[2], '(' .. fmt(now), '+inf')\n"
    "local writers = redis.call('zcount', KEYS[4], '(' .. fmt(now), '+inf')\n"
    "local last = -1\n"
    "local m = redis.call('zrange', KEYS[2], -1, -1, 'withscores')\n"
    "if m[2] and tonumber(m[2]) > now then last = tonumber(m[2]) - now end\n"
    "return {wc, rc, readers, redis.call('exists', KEYS[1]),\n"
    "        writers, redis.call('pttl', KEYS[1]), last}\n";
