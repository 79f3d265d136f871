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
 *   channel <prefix>{<name>}:w:ch   for waiting writers: 'w' (the writer
 *                                   went), 'r' (the last reader went)
 *   channel <prefix>{<name>}:r:ch   for waiting readers: 'w' (the writer
 *                                   went and no writer waits), 'q' (the
 *                                   last waiting writer gave up)
 *
 * Two channels, because the sides wake differently: an event for writers
 * wakes one waiting writer per client, an event for readers wakes a
 * client's first waiting reader, which passes the wake on to the next
 * once it has its share (lib/lock/pubwait.c), so every reader goes and a
 * writer is not woken for nothing.
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
 * Tokens: every first hold, read or write, takes the next token of the
 * counter, as an exclusive lock's first acquisition does (re-entries keep
 * theirs). So a read hold's token is above the token of every write
 * acquisition before it and below that of every acquisition after it:
 * "this reader sees every write whose token is lower, and none whose
 * token is higher". A storage layer fences with two rules: apply a write
 * only if its token is at least every token it has seen, reads included
 * (a stale writer is refused after any later reader or writer); serve a
 * read only if its token is at least every write token it has applied (a
 * stale reader is refused after a later writer; concurrent readers are
 * not refused by each other).
 */
#include "family_lua.h"

/* Lua helpers over KEYS[1..5], after RL_LUA_CLOCK. prune_readers() drops
 * expired read holds and returns the live count, announcing 'r' to
 * writers if that left no reader and no writer. prune_writers() drops
 * dead waiting writers and returns the live count, announcing 'q' to
 * readers if that left none and no one writes (none there, the common
 * case, is one ZCARD). writer_gone() announces
 * the end of a write hold: to writers, and to readers when no writer
 * waits (else the next writer goes first). */
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
  "  local had = redis.call('zcard', KEYS[4])\n"                            \
  "  if had == 0 then return 0 end\n"                                      \
  "  redis.call('zremrangebyscore', KEYS[4], '-inf', now)\n"               \
  "  local n = redis.call('zcard', KEYS[4])\n"                              \
  "  if n == 0 then\n"                                                      \
  "    redis.call('del', KEYS[4])\n"                                        \
  "    if had > 0 and redis.call('exists', KEYS[1]) == 0 then\n"            \
  "      redis.call('publish', KEYS[2] .. ':ch', 'q')\n"                    \
  "    end\n"                                                               \
  "  end\n"                                                                 \
  "  return n\n"                                                            \
  "end\n"                                                                   \
  "local function writer_gone()\n"                                          \
  "  redis.call('publish', KEYS[1] .. ':ch', 'w')\n"                        \
  "  if redis.call('zcount', KEYS[4], '(' .. fmt(now), '+inf') == 0 then\n" \
  "    redis.call('publish', KEYS[2] .. ':ch', 'w')\n"                      \
  "  end\n"                                                                 \
  "end\n"                                                                   \
  "local function last_left(key)\n"                                         \
  "  local m = redis.call('zrange', key, -1, -1, 'withscores')\n"          \
  "  if m[2] == nil then return -1 end\n"                                   \
  "  return tonumber(m[2]) - now\n"                                         \
  "end\n"                                                                   \
  "local function read_hold(owner, lease, count)\n"                         \
  "  local e = now + lease\n"                                               \
  "  local old = tonumber(redis.call('zscore', KEYS[2], owner) or '0')\n"  \
  "  if old > e then e = old end\n"                                         \
  "  redis.call('zadd', KEYS[2], fmt(e), owner)\n"                          \
  "  local n\n"                                                             \
  "  if redis.call('hexists', KEYS[3], owner) == 1 then\n"                  \
  "    n = redis.call('hincrby', KEYS[3], owner, 1)\n"                      \
  "  else\n"                                                                \
  "    n = count\n"                                                         \
  "    redis.call('hset', KEYS[3], owner, count)\n"                         \
  "  end\n"                                                                 \
  "  keep(KEYS[2], e - now)\n"                                              \
  "  keep(KEYS[3], e - now)\n"                                              \
  RL_LUA_HORIZON("e - now")                                                 \
  "  return n\n"                                                            \
  "end\n"

#define RW_PRELUDE RL_LUA_CLOCK RL_LUA_FMT RL_LUA_KEEP RW_HELPERS

/* The common first read hold, before the helpers are even defined: no
 * writer, no reader (live or not), no waiting writer, so none of the
 * prune and scan steps would find anything. The hold is written, then
 * both keys get their TTL; a refused PEXPIRE (an ACL user without it)
 * deletes the two keys it just created and fails with that error, so no
 * key is left without a TTL (the reentrant lock's acquire does the same,
 * scripts.c). Needs lease, owner, count and floor. */
#define RW_FIRST_READ                                                       \
  "if lease >= 1 and\n"                                                     \
  "   redis.call('exists', KEYS[1], KEYS[2], KEYS[3], KEYS[4]) == 0 then\n" \
  "  redis.call('zadd', KEYS[2], now + lease, owner)\n"                     \
  "  redis.call('hset', KEYS[3], owner, count)\n"                           \
  "  local e = redis.pcall('pexpire', KEYS[2], lease)\n"                    \
  "  if not (type(e) == 'table' and e.err) then\n"                          \
  "    e = redis.pcall('pexpire', KEYS[3], lease)\n"                        \
  "  end\n"                                                                 \
  "  if type(e) == 'table' and e.err then\n"                                \
  "    redis.call('del', KEYS[2], KEYS[3])\n"                               \
  "    return e\n"                                                          \
  "  end\n"                                                                 \
  RL_LUA_HORIZON("lease")                                                   \
  "  return {1, next_token(KEYS[5], floor), count, 0}\n"                    \
  "end\n"

/*
 * ARGV[1] lease ms, [2] owner, [3] count: the owner's read count where it
 * has none here (1 for a first read hold; the hold's count + 1 for a
 * re-entry, which this master then grants unless another owner writes
 * here: the owner reads on a majority, so no writer can have one, and a
 * master that missed the hold catches up), [4] fencing floor, [5]
 * deadline (master us, 0 none; last, appended by the connection).
 *
 * Grants a re-entry to a reader; the read side to the write holder (it
 * keeps it after releasing the write side); and a first read hold when no
 * one else writes and no live writer waits. Replies:
 *   {1, token, count, existed}  granted (count: the owner's read holds
 *                         here; existed: it had one here before);
 *   {0, wait_ms, why}     not granted: why 1 = another owner writes
 *                         (wait_ms its PTTL), 3 = a writer waits (wait_ms
 *                         until the last waiting writer's alive-until:
 *                         by then it has the lock, gave up, or is dead);
 *   {-1, now_us}          the deadline had passed: nothing changed.
 */
const char rl_fam_rw_read_acquire_lua[] =
    RL_LUA_CLOCK RL_LUA_DEADLINE("ARGV[#ARGV]") RL_LUA_NEXT_TOKEN
    "local lease, owner = tonumber(ARGV[1]), ARGV[2]\n"
    "local count, floor = tonumber(ARGV[3]), tonumber(ARGV[4])\n"
    RW_FIRST_READ
    RL_LUA_FMT RL_LUA_KEEP RW_HELPERS RL_LUA_ACL_PROBE
    "prune_readers()\n"
    "local waiting = prune_writers()\n"
    "local existed = redis.call('hexists', KEYS[3], owner)\n"
    "if existed == 1 or redis.call('hexists', KEYS[1], owner) == 1 then\n"
    "  local n = read_hold(owner, lease, count)\n"
    "  if existed == 1 and count > 1 then\n"
    "    return {1, tonumber(redis.call('get', KEYS[5]) or '0'), n, 1}\n"
    "  end\n"
    "  if existed == 1 then return {1, next_token(KEYS[5], floor), n, 1} end\n"
    "  return {1, next_token(KEYS[5], floor), n, 0}\n"
    "end\n"
    "if redis.call('exists', KEYS[1]) == 1 then\n"
    "  return {0, redis.call('pttl', KEYS[1]), 1}\n"
    "end\n"
    "if waiting > 0 and count <= 1 then\n"
    "  return {0, last_left(KEYS[4]), 3}\n"
    "end\n"
    "local n = read_hold(owner, lease, count)\n"
    "return {1, next_token(KEYS[5], floor), n, 0}\n";

/*
 * ARGV[1] owner, [2] "1" for the owner's last read hold (drop it whatever
 * the count), else "0"; [3], only for the read side's undo: the count the
 * undone grant set (the attempt's ARGV[3] of read_acquire). As the undo,
 * it takes back one grant, as the reentrant lock's undo does: only where
 * the owner's read count is at least that count (a master that refused
 * the attempt or never ran it keeps the owner's earlier read hold), by a
 * decrement; the hold's expiry is left alone. A hold that expired is not the owner's any more. Replies 0 not
 * owner (or, for the undo, nothing undone), 1 released (the owner has no
 * read hold left here; 'r' is announced to writers when no reader and no
 * writer remain), 2 still held.
 */
const char rl_fam_rw_read_unlock_lua[] =
    RL_LUA_CLOCK
    "local owner = ARGV[1]\n"
    "local m = redis.call('zrange', KEYS[2], 0, 1, 'withscores')\n"
    "if m[1] == owner and m[3] == nil and tonumber(m[2]) > now then\n"
    "  local n = redis.call('hget', KEYS[3], owner)\n"
    "  if n and not (ARGV[3] and tonumber(n) < tonumber(ARGV[3])) and\n"
    "     (ARGV[2] == '1' or tonumber(n) <= 1) then\n"
    "    redis.call('del', KEYS[2], KEYS[3])\n"
    "    if redis.call('exists', KEYS[1]) == 0 then\n"
    "      redis.call('publish', KEYS[1] .. ':ch', 'r')\n"
    "    end\n"
    "    return 1\n"
    "  end\n"
    "end\n"
    RL_LUA_FMT RL_LUA_KEEP RW_HELPERS
    "prune_readers()\n"
    "local n = tonumber(redis.call('hget', KEYS[3], owner))\n"
    "if n == nil then return 0 end\n"
    "if ARGV[3] and n < tonumber(ARGV[3]) then return 0 end\n"
    "if ARGV[2] ~= '1' and n > 1 then\n"
    "  redis.call('hincrby', KEYS[3], owner, -1)\n"
    "  return 2\n"
    "end\n"
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
 * ARGV[1] lease ms, [2] owner, [3] count: the owner's write count where
 * its field is absent (1 for a first acquisition, the hold's count + 1
 * for a re-entry), [4] fencing floor, [5] alive_ms: how long the owner
 * stays registered as a waiting writer without another attempt (0 for a
 * single attempt or a re-entry, which never register: they would hold
 * readers back for nothing), [6] deadline (master us, 0 none; last,
 * appended by the connection).
 *
 * Grants a re-entry to the writer (TTL never shortened), or the write side
 * when no one writes and no live read hold is left (the owner leaves the
 * waiting set). Replies:
 *   {1, token, count, existed}  granted;
 *   {0, wait_ms, why}     not granted, the owner now registered as a
 *                         waiting writer if alive_ms > 0: why 1 = another
 *                         owner writes (wait_ms its PTTL), 2 = readers hold
 *                         it (wait_ms until the last read hold's expiry);
 *   {-2}                  the owner holds the read side and not the write
 *                         side: it would wait for itself (nothing changed);
 *   {-1, now_us}          the deadline had passed: nothing changed.
 */
const char rl_fam_rw_write_acquire_lua[] =
    RL_LUA_CLOCK RL_LUA_DEADLINE("ARGV[#ARGV]") RL_LUA_NEXT_TOKEN
    "local lease, owner = tonumber(ARGV[1]), ARGV[2]\n"
    "local count, floor = tonumber(ARGV[3]), tonumber(ARGV[4])\n"
    "if redis.call('exists', KEYS[1], KEYS[2], KEYS[3], KEYS[4]) == 0 then\n"
    "  redis.call('hset', KEYS[1], owner, count)\n"
    "  local e = redis.pcall('pexpire', KEYS[1], ARGV[1])\n"
    "  if type(e) == 'table' and e.err then\n"
    "    redis.call('del', KEYS[1])\n"
    "    return e\n"
    "  end\n"
    RL_LUA_HORIZON("ARGV[1]")
    "  return {1, next_token(KEYS[5], floor), count, 0}\n"
    "end\n"
    RL_LUA_FMT RL_LUA_KEEP RW_HELPERS RL_LUA_ACL_PROBE
    "local alive = tonumber(ARGV[5])\n"
    "local live = prune_readers()\n"
    "prune_writers()\n"
    "if redis.call('hexists', KEYS[1], owner) == 1 then\n"
    "  keep(KEYS[1], lease)\n"
    "  local n = redis.call('hincrby', KEYS[1], owner, 1)\n"
    RL_LUA_HORIZON("lease")
    "  if count <= 1 then return {1, next_token(KEYS[5], floor), n, 1} end\n"
    "  return {1, tonumber(redis.call('get', KEYS[5]) or '0'), n, 1}\n"
    "end\n"
    "if redis.call('hexists', KEYS[3], owner) == 1 then return {-2} end\n"
    "if live == 0 and redis.call('exists', KEYS[1]) == 0 then\n"
    "  redis.call('zrem', KEYS[4], owner)\n"
    "  if redis.call('zcard', KEYS[4]) == 0 then redis.call('del', KEYS[4]) end\n"
    "  redis.call('hset', KEYS[1], owner, count)\n"
    "  redis.call('pexpire', KEYS[1], lease)\n"
    RL_LUA_HORIZON("lease")
    "  return {1, next_token(KEYS[5], floor), count, 0}\n"
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
 * ARGV[1] lease ms, [2] owner, [3] "1" for the owner's last write hold
 * (delete whatever the count), else "0". Releases one write hold. Replies
 * 0 not owner, 1 released (announced; the owner's read holds, if any,
 * stay), 2 still held (TTL never shortened).
 */
const char rl_fam_rw_write_unlock_lua[] =
    "local owner = ARGV[2]\n"
    "local n = redis.call('hget', KEYS[1], owner)\n"
    "if not n then return 0 end\n"
    "if ARGV[3] == '1' or tonumber(n) <= 1 then\n"
    "  redis.call('del', KEYS[1])\n"
    "  redis.call('publish', KEYS[1] .. ':ch', 'w')\n"
    "  if redis.call('exists', KEYS[4]) == 0 then\n"
    "    redis.call('publish', KEYS[2] .. ':ch', 'w')\n"
    "    return 1\n"
    "  end\n"
    "end\n"
    RW_PRELUDE
    "if redis.call('exists', KEYS[1]) == 0 then\n"
    "  if redis.call('zcount', KEYS[4], '(' .. fmt(now), '+inf') == 0 then\n"
    "    redis.call('publish', KEYS[2] .. ':ch', 'w')\n"
    "  end\n"
    "  return 1\n"
    "end\n"
    "redis.call('hincrby', KEYS[1], owner, -1)\n"
    "keep(KEYS[1], tonumber(ARGV[1]))\n"
    "return 2\n";

/*
 * ARGV[1] owner, [2] alive_ms (0 if the owner no longer waits), [3] the
 * count the undone grant set (the attempt's ARGV[3]). Takes back one
 * write grant, as the reentrant lock's undo does: only where the owner's
 * write count is at least that count (a master that refused the attempt
 * or never ran it keeps the owner's earlier write hold), by a decrement;
 * the TTL is left alone. When that
 * frees the write side and the owner still waits, it is registered as a
 * waiting writer again, so readers do not slip in while it retries.
 * Replies as unlock (0 where nothing was undone).
 */
const char rl_fam_rw_write_undo_lua[] =
    RW_PRELUDE RL_LUA_ACL_PROBE
    "local owner, alive = ARGV[1], tonumber(ARGV[2])\n"
    "local n = tonumber(redis.call('hget', KEYS[1], owner))\n"
    "if n == nil or n < tonumber(ARGV[3]) then return 0 end\n"
    "if n > 1 then\n"
    "  redis.call('hincrby', KEYS[1], owner, -1)\n"
    "  return 2\n"
    "end\n"
    "redis.call('del', KEYS[1])\n"
    "if alive > 0 then\n"
    "  redis.call('zadd', KEYS[4], fmt(now + alive), owner)\n"
    "  keep(KEYS[4], alive)\n"
    "end\n"
    "writer_gone()\n"
    "return 1\n";

/*
 * ARGV[1] owner. A waiting writer that gives up leaves the waiting set;
 * when it was the last live one and no one writes, 'q' is announced to
 * readers, who may go now. Replies 1 if it was registered.
 */
const char rl_fam_rw_write_leave_lua[] =
    RW_PRELUDE
    "local removed = redis.call('zrem', KEYS[4], ARGV[1])\n"
    "if prune_writers() == 0 and removed == 1 and\n"
    "   redis.call('exists', KEYS[1]) == 0 then\n"
    "  redis.call('publish', KEYS[2] .. ':ch', 'q')\n"
    "end\n"
    "return removed\n";

/*
 * ARGV[1] side: 'w' deletes the write side whoever holds it, 'r' every
 * read hold. Replies 1 if there was something to delete (and announces
 * it).
 */
const char rl_fam_rw_force_lua[] =
    RW_PRELUDE
    "if ARGV[1] == 'w' then\n"
    "  if redis.call('del', KEYS[1]) == 0 then return 0 end\n"
    "  writer_gone()\n"
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
