/*
 * The fair lock's scripts: a reentrant lock whose waiters are served first
 * come, first served, across clients and processes.
 *
 * Why it looks like this. The lock itself is the reentrant lock's hash
 * (field owner -> reentry count, PTTL = lease) and fencing counter, so a
 * fair handle and a plain handle of one name exclude each other (a plain
 * acquisition simply ignores the queue). Beside it, two sorted sets hold
 * the waiters:
 *
 *   KEYS[1] <prefix>{<name>}        hash: owner -> count (the lock)
 *   KEYS[2] <prefix>{<name>}:fence  string: fencing counter
 *   KEYS[3] <prefix>{<name>}:q      zset: waiter -> ticket (its place)
 *   KEYS[4] <prefix>{<name>}:qt     zset: waiter -> alive-until (master ms)
 *
 * The ticket is chosen by the waiting client (its wall clock in
 * microseconds when the acquisition began) and is the same on every
 * master, so with N masters every queue orders the same waiters the same
 * way (equal tickets fall back to the member's bytes, as zsets do): no
 * cycle of "x first here, y first there" can stall a quorum. A waiter
 * that was absent from one master's queue (that master was down when it
 * arrived) is put back at its right place by its next attempt.
 *
 * A waiter stays in the queue only while it shows it is alive: each of
 * its attempts (or a batched touch, lease_scripts.c) moves its
 * alive-until to now + skip_ms. Every script first drops the waiters whose
 * alive-until has passed (a crashed or paused client), so a dead waiter
 * delays the others by at most skip_ms. A paused waiter that comes back
 * re-enters with its own ticket: it asked first, so it keeps its place.
 * The queue's keys live as long as their longest-lived waiter.
 *
 * An unlock wakes exactly the next waiter: it publishes on
 * <hash>:ch:<owner>, a channel only that waiter listens to (its client
 * subscribes it while the waiter waits), so one unlock wakes one waiter
 * wherever it is, and the client's wait queues (pubsub/) need no routing
 * by message. With nobody queued it publishes on the reentrant lock's
 * channel <hash>:ch, for plain-handle waiters.
 */
#include "family_lua.h"

/* Lua helpers over KEYS[1..4], after RL_LUA_CLOCK. */
#define FAIR_HELPERS                                                        \
  "local function head()\n"                                                 \
  "  return redis.call('zrange', KEYS[3], 0, 0)[1]\n"                       \
  "end\n"                                                                   \
  "local function tidy()\n"                                                 \
  "  if redis.call('zcard', KEYS[3]) == 0 then\n"                           \
  "    redis.call('del', KEYS[3], KEYS[4])\n"                               \
  "  end\n"                                                                 \
  "end\n"                                                                   \
  "local function purge()\n"                                                \
  "  local dead = redis.call('zrangebyscore', KEYS[4], '-inf', now)\n"     \
  "  for i = 1, #dead do\n"                                                 \
  "    redis.call('zrem', KEYS[3], dead[i])\n"                              \
  "    redis.call('zrem', KEYS[4], dead[i])\n"                              \
  "  end\n"                                                                 \
  "  tidy()\n"                                                              \
  "end\n"                                                                   \
  "local function unqueue(o)\n"                                             \
  "  redis.call('zrem', KEYS[3], o)\n"                                      \
  "  redis.call('zrem', KEYS[4], o)\n"                                      \
  "  tidy()\n"                                                              \
  "end\n"                                                                   \
  "local function enqueue(o, ticket, skip)\n"                               \
  "  redis.call('zadd', KEYS[3], 'NX', ticket, o)\n"                        \
  "  redis.call('zadd', KEYS[4], fmt(now + skip), o)\n"                     \
  "  keep(KEYS[3], skip)\n"                                                 \
  "  keep(KEYS[4], skip)\n"                                                 \
  "end\n"                                                                   \
  "local function notify(h)\n"                                              \
  "  if h then\n"                                                           \
  "    redis.call('publish', KEYS[1] .. ':ch:' .. h, h)\n"                  \
  "  else\n"                                                                \
  "    redis.call('publish', KEYS[1] .. ':ch', '0')\n"                      \
  "  end\n"                                                                 \
  "end\n"

#define FAIR_PRELUDE RL_LUA_CLOCK RL_LUA_FMT RL_LUA_KEEP FAIR_HELPERS

/*
 * ARGV[1] lease ms, [2] owner, [3] count: the owner's count where its
 * field is absent (1 for a first acquisition; the hold's count + 1 for a
 * re-entry, which this master then grants whatever the queue: the owner
 * holds the lock on a majority, and a master that missed it catches up),
 * [4] fencing floor, [5] ticket, [6] skip_ms: how long the waiter stays
 * queued without another attempt (0 for a single attempt, which never
 * joins the queue: it would only block others; re-entries pass 0 too),
 * [7] deadline (master us, 0 none; last, appended by the connection).
 *
 * Grants when the owner holds it already (a re-entry: the TTL is never
 * shortened, and any queue entry of the owner is dropped), or when the
 * lock is free and the owner is the first live waiter or nobody waits.
 * Replies:
 *   {1, token, count, existed, ticket}  granted; existed 1 when the
 *                              owner's field was there; ticket is the
 *                              place the owner left in the queue (0 if
 *                              none), which the undo gives back;
 *   {0, pttl, place, head_wait} not granted; pttl the holder's remaining
 *                              lease (-1 if the lock is free), place the
 *                              owner's 0-based place in the queue (-1 if
 *                              not queued), head_wait the ms before the
 *                              waiter ahead of it may be skipped when the
 *                              lock is free and it is not coming (-1 if
 *                              the lock is held);
 *   {-1, now_us}               the deadline had passed: nothing changed.
 * When the first live waiter changes while the lock is free (a dead head
 * was dropped), the new one is told.
 * Where no queue is there (neither :q nor :qt), one EXISTS stands in for
 * the queue's steps when they would leave no trace: a free lock is
 * granted (an attempt that joins the queue would be its head, granted,
 * and leave it again: its ticket is ARGV[5]; one that does not, ticket
 * 0), and a held one refused to an attempt that joins none (place -1).
 * An attempt that joins the queue of a held lock takes the whole path.
 * (t == t: a NaN ticket takes it too, where ZADD refuses it.)
 */
const char rl_fam_fair_acquire_lua[] =
    RL_LUA_CLOCK RL_LUA_DEADLINE("ARGV[#ARGV]") RL_LUA_NEXT_TOKEN
    "local owner, count = ARGV[2], tonumber(ARGV[3])\n"
    "local skip = tonumber(ARGV[6])\n"
    "local enq, t = skip > 0 and count <= 1, 0\n"
    "if enq then t = tonumber(ARGV[5]) end\n"
    "local free = t and t == t and\n"
    "  redis.call('exists', KEYS[1], KEYS[3], KEYS[4]) == 0\n"
    "if free then\n"
    "  redis.call('hset', KEYS[1], owner, count)\n"
    "  local e = redis.pcall('pexpire', KEYS[1], ARGV[1])\n"
    "  if type(e) == 'table' and e.err then\n"
    "    redis.call('del', KEYS[1])\n"
    "    return e\n"
    "  end\n"
    RL_LUA_HORIZON("ARGV[1]")
    "  return {1, next_token(KEYS[2], tonumber(ARGV[4])), count, 0, t}\n"
    "end\n"
    RL_LUA_FMT RL_LUA_KEEP FAIR_HELPERS RL_LUA_ACL_PROBE
    "local lease, floor = tonumber(ARGV[1]), tonumber(ARGV[4])\n"
    "if redis.call('hexists', KEYS[1], owner) == 1 then\n"
    "  keep(KEYS[1], lease)\n"
    "  local n = redis.call('hincrby', KEYS[1], owner, 1)\n"
    "  unqueue(owner)\n"
    RL_LUA_HORIZON("lease")
    "  if count <= 1 then return {1, next_token(KEYS[2], floor), n, 1, 0} end\n"
    "  return {1, tonumber(redis.call('get', KEYS[2]) or '0'), n, 1, 0}\n"
    "end\n"
    "if t and t == t and redis.call('exists', KEYS[3], KEYS[4]) == 0 and\n"
    "   not enq then\n"
    "  return {0, redis.call('pttl', KEYS[1]), -1, -1}\n"
    "end\n"
    "local before = head()\n"
    "purge()\n"
    "if enq then enqueue(owner, ARGV[5], skip) end\n"
    "local h = head()\n"
    "local held = redis.call('exists', KEYS[1]) == 1\n"
    "if not held and (count > 1 or h == nil or h == owner) then\n"
    "  local ticket = tonumber(redis.call('zscore', KEYS[3], owner) or '0')\n"
    "  unqueue(owner)\n"
    "  redis.call('hset', KEYS[1], owner, count)\n"
    "  redis.call('pexpire', KEYS[1], lease)\n"
    RL_LUA_HORIZON("lease")
    "  return {1, next_token(KEYS[2], floor), count, 0, ticket}\n"
    "end\n"
    "local place = redis.call('zrank', KEYS[3], owner) or -1\n"
    "if held then\n"
    "  return {0, redis.call('pttl', KEYS[1]), place, -1}\n"
    "end\n"
    "if h ~= before then notify(h) end\n"
    "local wait = tonumber(redis.call('zscore', KEYS[4], h)) - now\n"
    "return {0, -1, place, wait}\n";

/*
 * ARGV[1] lease ms, [2] owner, [3] "1" for the owner's last hold (delete
 * whatever the count: the masters' counts may differ, as for the
 * reentrant lock's unlock), else "0". Replies 0 not owner, 1 released
 * (the next live waiter is told), 2 still held (count decremented; the
 * TTL is never shortened). With no queue there, telling the next waiter
 * is the plain unlock message, sent without the queue's steps.
 */
const char rl_fam_fair_unlock_lua[] =
    "local owner = ARGV[2]\n"
    "local n = redis.call('hget', KEYS[1], owner)\n"
    "if not n then return 0 end\n"
    "if ARGV[3] == '1' or tonumber(n) <= 1 then\n"
    "  redis.call('del', KEYS[1])\n"
    "  if redis.call('exists', KEYS[3], KEYS[4]) == 0 then\n"
    "    redis.call('publish', KEYS[1] .. ':ch', '0')\n"
    "    return 1\n"
    "  end\n"
    "end\n"
    FAIR_PRELUDE
    "if redis.call('exists', KEYS[1]) == 0 then\n"
    "  purge()\n"
    "  notify(head())\n"
    "  return 1\n"
    "end\n"
    "redis.call('hincrby', KEYS[1], owner, -1)\n"
    "keep(KEYS[1], tonumber(ARGV[1]))\n"
    "return 2\n";

/* No arguments. Deletes the lock whoever holds it and tells the next live
 * waiter. Replies 1 if it was held. The queue stays. Where the hold was an
 * election's leadership (its hash has the leader's token, '#t':
 * election_scripts.c), the election's observers are told too, as a
 * resign tells them: they would otherwise learn it only when their timer
 * at the old lease's end fires. */
const char rl_fam_fair_force_lua[] =
    FAIR_PRELUDE
    "local elected = redis.call('hexists', KEYS[1], '#t')\n"
    "if redis.call('del', KEYS[1]) == 0 then return 0 end\n"
    "if elected == 1 then\n"
    "  redis.call('publish', KEYS[1] .. ':e:ch', '0')\n"
    "end\n"
    "purge()\n"
    "notify(head())\n"
    "return 1\n";

/*
 * ARGV[1] owner. A waiter that gives up (deadline, cancel, close, or an
 * acquisition won on other masters) leaves the queue, and the queue's
 * keys go when it was the last. If that makes another waiter first while
 * the lock is free, that one is told. Replies 1 if it was queued.
 */
const char rl_fam_fair_leave_lua[] =
    FAIR_PRELUDE
    "local before = head()\n"
    "local removed = redis.call('zrem', KEYS[3], ARGV[1])\n"
    "redis.call('zrem', KEYS[4], ARGV[1])\n"
    "purge()\n"
    "local h = head()\n"
    "if h and h ~= before and redis.call('exists', KEYS[1]) == 0 then\n"
    "  notify(h)\n"
    "end\n"
    "return removed\n";

/*
 * ARGV[1] owner, [2] ticket (from the grant's reply), [3] skip_ms, [4]
 * the count the undone grant set (the attempt's ARGV[3]). Takes back one
 * grant, as the reentrant lock's undo does: only where the owner's count
 * is at least that count (a master that refused the attempt or never ran
 * it keeps the owner's earlier hold untouched), by a decrement, never a
 * reset, and the TTL is left alone. When that frees the lock and the
 * grant came from the queue (ticket > 0, skip_ms > 0: the owner still
 * waits), the owner goes back to its own place, so a failed quorum round
 * costs no one their turn; then whoever is first is told. Replies as
 * unlock (0 where nothing was undone).
 */
const char rl_fam_fair_undo_lua[] =
    FAIR_PRELUDE RL_LUA_ACL_PROBE
    "local owner = ARGV[1]\n"
    "local ticket, skip = tonumber(ARGV[2]), tonumber(ARGV[3])\n"
    "local n = tonumber(redis.call('hget', KEYS[1], owner))\n"
    "if n == nil or n < tonumber(ARGV[4]) then return 0 end\n"
    "if n > 1 then\n"
    "  redis.call('hincrby', KEYS[1], owner, -1)\n"
    "  return 2\n"
    "end\n"
    "redis.call('del', KEYS[1])\n"
    "purge()\n"
    "if ticket > 0 and skip > 0 then enqueue(owner, ARGV[2], skip) end\n"
    "local h = head()\n"
    "if h ~= owner then notify(h) end\n"
    "return 1\n";
