/*
 * Lua scripts, one per lock operation, as in Redisson's RedissonLock but
 * with a fencing counter beside each lock.
 *
 * Fencing tokens: a first acquisition on a master gives the largest of the
 * lock's counter plus one, a floor sent by the acquiring client (its wall
 * clock in microseconds when it sent, or one more than the largest token
 * it has seen, whichever is larger) and the client's wall clock when the
 * master runs the script, never overestimated: the master's clock plus
 * the difference the client measured between the two
 * (RL_LUA_CLIENT_WALL). That last term is
 * for a command that reaches a master late, after acquisitions whose
 * floors were taken later (a master stopped during a failover, then
 * resumed: test_sentinel stopped_master_token). The master's own clock
 * sets no token: it only counts the time since the client measured the
 * difference, and the grant's deadline bounds that. A counter that a
 * master lost (restarted empty, or expired after a day unused) therefore
 * restarts from the client's clock, not from the master's: a master whose
 * clock is hours behind cannot hand out a token below an earlier one,
 * and one whose clock is far ahead cannot lift tokens to a
 * height that a later all-counters-lost state, seeded from a correct
 * clock, would not reach. What remains is the acquiring client's clock,
 * and the write-back (acquire.c) that keeps a majority of counters at the
 * highest token handed out. Tokens stay below 2^53 (until
 * the year 2255 as wall-clock microseconds), so Lua's doubles hold them
 * exactly; this is what lets the counter carry a TTL, so that no key
 * rlock writes lives forever.
 */
#include "scripts.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "sha1.h"

/* The reentrant lock's clocked scripts read the master's clock only when
 * their deadline argument (arg) has one: late_ is true when it has
 * passed, and wall_ is set (RL_LUA_CLIENT_WALL; 0 without a deadline). */
#define CLOCKED_TIME(arg)                                                   \
  RL_LUA_CLOCKED_ARG(arg)                                                   \
  "local now_us, late_ = 0, false\n"                                        \
  "if deadline_ > 0 then\n"                                                 \
  "  local t = redis.call('time')\n"                                        \
  "  now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])\n"                  \
  "  late_ = now_us > deadline_\n"                                          \
  "else\n"                                                                  \
  "  ahead_ = nil\n"                                                        \
  "end\n"                                                                   \
  RL_LUA_CLIENT_WALL

/* KEYS[1] lock hash, KEYS[2] fence counter.
 * ARGV[1] lease ms, ARGV[2] owner,
 * ARGV[3] the owner's count to set where the key is absent (1 for a first
 *         acquisition; for a reentrant one, the hold's count plus one, so
 *         that a master that missed the hold catches up),
 * ARGV[4] the token floor (decimal),
 * ARGV[5] a deadline in microseconds of this master's clock after which
 *         nothing is granted (0: none), with ":" and how far the client's
 *         wall clock is ahead of this master's (RL_LUA_CLOCKED_ARG); last,
 *         so that a round can send each master its own.
 * Where the owner's field is there but ARGV[3] is 1, the client holds
 * nothing: the field is what is left of a hold that the client ended
 * without its release landing (an unlock that got no answer: release.c),
 * and the grant takes a new token as a first acquisition does: with the
 * counter as it stood, the new holder would have the old holder's token
 * (test_leftover_field leftover_field_new_token). The count is still
 * incremented, never set: an undo of an earlier grant of the same owner
 * may be on its way (undo_lua), and the last unlock deletes whatever the
 * count.
 * Ten arguments in all with EVALSHA, sha and numkeys: Redis refuses more
 * from a connection that has not authenticated yet, and the error must
 * stay the server's NOAUTH. The counter keeps RL_FENCE_TTL_MS (a day).
 * Replies {1, token, count, existed} for a grant (existed: the owner's
 * field was there before), {0, holder_pttl} when another owner holds it,
 * {0, -3} when the deadline has passed.
 * A reentrant grant never shortens the lock's TTL: an attempt with a
 * shorter lease, undone or not, must not cut the holder's time.
 * Redis does not roll a script back when a command in it fails (an ACL
 * user without +pexpire, say), so a first acquisition whose PEXPIRE is
 * refused deletes the hash it just wrote and fails with that error: never
 * a lock hash without a TTL. (PEXPIRE cannot go first: once a script has
 * run a write command, Redis lets its later writes through an OOM, and
 * HSET is what must meet maxmemory.) Every grant pushes the master's
 * lease horizon to the lease (RL_LUA_HORIZON), for the restart
 * quarantine. */
static const char acquire_lua[] =
    CLOCKED_TIME("ARGV[5]")
    "if late_ then return {0, -3} end\n"
    RL_LUA_NEXT_TOKEN_FN
    "if redis.call('exists', KEYS[1]) == 0 then\n"
    "  redis.call('hset', KEYS[1], ARGV[2], ARGV[3])\n"
    "  local e = redis.pcall('pexpire', KEYS[1], ARGV[1])\n"
    "  if type(e) == 'table' and e.err then\n"
    "    redis.call('del', KEYS[1])\n"
    "    return e\n"
    "  end\n"
    RL_LUA_HORIZON("ARGV[1]")
    "  return {1, next_token(KEYS[2], tonumber(ARGV[4])), tonumber(ARGV[3]),\n"
    "          0}\n"
    "end\n"
    "if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then\n"
    "  local n = redis.call('hincrby', KEYS[1], ARGV[2], 1)\n"
    "  if redis.call('pttl', KEYS[1]) < tonumber(ARGV[1]) then\n"
    "    redis.call('pexpire', KEYS[1], ARGV[1])\n"
    "  end\n"
    RL_LUA_HORIZON("ARGV[1]")
    "  if ARGV[3] == '1' then\n"
    "    return {1, next_token(KEYS[2], tonumber(ARGV[4])), n, 1}\n"
    "  end\n"
    "  return {1, tonumber(redis.call('get', KEYS[2]) or '0'), n, 1}\n"
    "end\n"
    "return {0, redis.call('pttl', KEYS[1])}\n";

/* The unlock's step that unlock_lua and transfer_lua share: unless
 * ARGV[last] is "1" (the owner's last hold), the owner's count (field
 * ARGV[2] of KEYS[1]) goes down by one; while it stays above 0 the TTL is
 * raised to at least the lease ARGV[1] (never shortened) and the script
 * returns still_held. One text, so that the two cannot drift apart. */
#define RL_LUA_DECREMENT(last, still_held)                                \
  "local n = 0\n"                                                         \
  "if ARGV[" last "] ~= '1' then\n"                                       \
  "  n = redis.call('hincrby', KEYS[1], ARGV[2], -1)\n"                   \
  "end\n"                                                                 \
  "if n > 0 then\n"                                                       \
  "  if redis.call('pttl', KEYS[1]) < tonumber(ARGV[1]) then\n"           \
  "    redis.call('pexpire', KEYS[1], ARGV[1])\n"                         \
  "  end\n"                                                               \
  "  return " still_held "\n"                                             \
  "end\n"

/* KEYS[1] lock hash. ARGV[1] lease ms, ARGV[2] owner, ARGV[3] channel,
 * ARGV[4] "1" for the owner's last hold (delete whatever the count: the
 * masters' counts may have diverged, see acquire.c), else "0".
 * Replies 0 not owner, 1 released, 2 still held (count decremented). The
 * TTL is never shortened. An unlock is never retried (one that cannot
 * reach a majority ends the hold: see release.c), so a decrement cannot
 * be applied twice. */
static const char unlock_lua[] =
    "if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then return 0 end\n"
    RL_LUA_DECREMENT("4", "2")
    "redis.call('del', KEYS[1])\n"
    "redis.call('publish', ARGV[3], '0')\n"
    "return 1\n";

/* The unlock of a holder that hands the lock to a waiter of its own
 * client (transfer.c): one script, so that the waiter is granted in the
 * unlock's round trip.
 * KEYS[1] lock hash, KEYS[2] fence counter. ARGV[1] the releasing
 * owner's lease ms, ARGV[2] that owner, ARGV[3] "1" for its last hold
 * (as unlock's ARGV[4]), ARGV[4] the waiter (owner field), ARGV[5] the
 * waiter's lease ms, ARGV[6] the token floor, ARGV[7] the deadline in
 * microseconds of this master's clock after which nothing is granted
 * (acquire's ARGV[5]).
 * Where the releasing owner's count reaches 0, the lock goes to the
 * waiter as a first acquisition would give it (HSET 1, PEXPIRE, the
 * fencing counter bumped as acquire bumps it) and nothing is published:
 * the lock is not free. Replies that grant as acquire does, {1, token, 1,
 * 0}. Otherwise it is the unlock script: {0, 0} not owner, {0, 2} still
 * held (decremented), {0, 1} released and published (the deadline had
 * passed, or the waiter's PEXPIRE was refused: never a hash without a
 * TTL). The channel is the hash's name + ":ch" (the reentrant lock's).
 * The grant pushes the lease horizon to the waiter's lease. */
static const char transfer_lua[] =
    "if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then return {0, 0} end\n"
    CLOCKED_TIME("ARGV[7]")
    RL_LUA_NEXT_TOKEN_FN
    RL_LUA_DECREMENT("3", "{0, 2}")
    "redis.call('del', KEYS[1])\n"
    "if not late_ then\n"
    "  redis.call('hset', KEYS[1], ARGV[4], '1')\n"
    "  local e = redis.pcall('pexpire', KEYS[1], ARGV[5])\n"
    "  if type(e) == 'table' and e.err then\n"
    "    redis.call('del', KEYS[1])\n"
    "  else\n"
    RL_LUA_HORIZON("ARGV[5]")
    "    return {1, next_token(KEYS[2], tonumber(ARGV[6])), 1, 0}\n"
    "  end\n"
    "end\n"
    "redis.call('publish', KEYS[1] .. ':ch', '0')\n"
    "return {0, 1}\n";

/* KEYS[1] lock hash. ARGV[1] channel. Replies 1 if it was held. */
static const char force_lua[] =
    "if redis.call('del', KEYS[1]) == 1 then\n"
    "  redis.call('publish', ARGV[1], '0')\n"
    "  return 1\n"
    "end\n"
    "return 0\n";

/* KEYS[1] fence counter. ARGV[1] token, ARGV[2] TTL ms. Raises the counter
 * to the token (never lowers it). Replies the counter afterwards. */
static const char fence_max_lua[] =
    "local f = tonumber(redis.call('get', KEYS[1]) or '0')\n"
    "local t = tonumber(ARGV[1])\n"
    "if f < t then\n"
    "  redis.call('set', KEYS[1], ARGV[1], 'px', ARGV[2])\n"
    "  return t\n"
    "end\n"
    "redis.call('pexpire', KEYS[1], ARGV[2])\n"
    "return f\n";

/* KEYS[1..n] lock hashes. ARGV[1] lease ms, ARGV[2..n+1] their owners.
 * Replies a string of n characters: '1' where the owner still holds the
 * lock (its TTL is now at least the lease: never shortened), '0' where it
 * no longer does. A string, not an array of integers: the client parses
 * one object per batch of a hundred instead of a hundred and one.
 * PEXPIRE GT raises a TTL and never lowers it in one call, where PTTL and
 * PEXPIRE took two; a hash without a TTL (GT counts it as infinite) is
 * still given one. GT needs Redis 7.0. A batch that renewed any pushes
 * the master's lease horizon once (RL_LUA_HORIZON). */
static const char renew_lua[] =
    "local r = {}\n"
    "local lease = tonumber(ARGV[1])\n"
    "for i = 1, #KEYS do\n"
    "  if redis.call('hexists', KEYS[i], ARGV[i + 1]) == 1 then\n"
    "    if redis.call('pexpire', KEYS[i], lease, 'GT') == 0 and\n"
    "       redis.call('pttl', KEYS[i]) == -1 then\n"
    "      redis.call('pexpire', KEYS[i], lease)\n"
    "    end\n"
    "    r[i] = '1'\n"
    "  else\n"
    "    r[i] = '0'\n"
    "  end\n"
    "end\n"
    "local s_ = table.concat(r)\n"
    "if string.find(s_, '1', 1, true) then " RL_LUA_HORIZON_PUSH("lease")
    " end" RL_LUA_HORIZON_MARK
    "return s_\n";

/* KEYS[1..n] lock hashes. ARGV[1..n] their owners. Deletes each lock its
 * owner still holds, whatever the reentry count, and publishes the unlock
 * message: a closing client gives back what it holds. Replies how many. */
static const char release_lua[] =
    "local n = 0\n"
    "for i = 1, #KEYS do\n"
    "  if redis.call('hexists', KEYS[i], ARGV[i]) == 1 then\n"
    "    redis.call('del', KEYS[i])\n"
    "    redis.call('publish', KEYS[i] .. ':ch', '0')\n"
    "    n = n + 1\n"
    "  end\n"
    "end\n"
    "return n\n";

/* KEYS[1] lock hash. ARGV[1] owner, ARGV[2] channel, ARGV[3] the count
 * the undone grant set (the attempt's ARGV[3] of acquire: 1 for a first
 * acquisition, the hold's count + 1 for a re-entry). Takes back one grant,
 * and only where a grant of the attempt can be: where the owner's count
 * is at least that count. A master that refused the attempt (its deadline
 * had passed, another owner held the lock) or never ran it has at most
 * the count the attempt built on, and the undo changes nothing there. So
 * an undo never takes the owner's count below the count its attempt built
 * on: an earlier hold is never lowered or deleted. This names the grant
 * because an owner has at most one acquisition of a lock in flight and
 * the undo is queued behind the attempt on the same connection: no later
 * attempt of that owner is granted there before the undo runs (a
 * connection that drops loses the undo, and the grant expires with its
 * lease). One server reached through two masters (a cluster node given as
 * a master of its own too) runs an attempt twice, and its two undos take
 * back what its grants added. Decrements, never sets, and leaves the TTL
 * alone. The count is read by the decrement itself (taken back where it
 * was below), not by HGET: the reentrant lock's smallest ACL rule has no
 * +hget. Replies as unlock (0 where nothing was undone). */
static const char undo_lua[] =
    "if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then return 0 end\n"
    "local n = redis.call('hincrby', KEYS[1], ARGV[1], -1)\n"
    "if n + 1 < tonumber(ARGV[3]) then\n"
    "  redis.call('hincrby', KEYS[1], ARGV[1], 1)\n"
    "  return 0\n"
    "end\n"
    "if n > 0 then return 2 end\n"
    "redis.call('del', KEYS[1])\n"
    "redis.call('publish', ARGV[2], '0')\n"
    "return 1\n";

/* KEYS[1] the restart records of the deployment (quarantine.c): a hash,
 * field = a master's address, value = "<run_id> <changed>". ARGV[1] TTL
 * ms, then triples (address, run_id, changed "0"/"1") to merge in: a
 * run_id that differs from the one stored marks the master changed, and
 * once changed a run_id stays so. Replies the whole hash (HGETALL), so one
 * call both writes what the client knows and reads what others knew.
 * Every command it may run but HSET (which locks need anyway) runs before
 * anything is written, whatever the arguments, so that a user without one
 * of them is refused in the connection's handshake (quarantine.c), and
 * the hash never lacks a TTL. (The first PEXPIRE, a write, also lets the
 * small writes after it through an OOM: records are kept even then.) */
static const char record_lua[] =
    "redis.call('pexpire', KEYS[1], ARGV[1])\n"
    "local all = redis.call('hgetall', KEYS[1])\n"
    "local known = {}\n"
    "for i = 1, #all - 1, 2 do known[all[i]] = all[i + 1] end\n"
    "for i = 2, #ARGV - 2, 3 do\n"
    "  local id, flag = ARGV[i + 1], ARGV[i + 2]\n"
    "  local old = known[ARGV[i]]\n"
    "  if old then\n"
    "    local oid, oflag = string.match(old, '^(%S+) ([01])$')\n"
    "    if oid ~= id or oflag == '1' then flag = '1' end\n"
    "  end\n"
    "  redis.call('hset', KEYS[1], ARGV[i], id .. ' ' .. flag)\n"
    "end\n"
    "if #ARGV > 1 then redis.call('pexpire', KEYS[1], ARGV[1]) end\n"
    "return redis.call('hgetall', KEYS[1])\n";

/* The batches of a cluster node (docs/architecture.md). Declared keys
 * cannot span slots even with allow-cross-slot-keys (only undeclared
 * ones may, on one node), so the keys are arguments; a key the node does
 * not have (another node's, or one already migrated away) fails the call
 * that touches it, which pcall turns into that key's answer (the error's
 * text) instead of ending the script halfway. Each key's work is
 * idempotent, so a batch that ran in part can be sent again.
 *
 * ARGV[1] n, ARGV[2..n+1] lock hashes, ARGV[n+2] lease ms, ARGV[n+3..]
 * their owners (renew.c's layout with the key count first). Replies per
 * key 1 renewed, 0 no longer the owner's, or an error text (not handled
 * here). */
static const char renew_node_lua[] =
    "#!lua flags=allow-cross-slot-keys\n"
    "local n = tonumber(ARGV[1])\n"
    "local lease = tonumber(ARGV[n + 2])\n"
    "local r = {}\n"
    "for i = 1, n do\n"
    "  local key, owner = ARGV[i + 1], ARGV[n + 2 + i]\n"
    "  local e = redis.pcall('hexists', key, owner)\n"
    "  if type(e) == 'table' then\n"
    "    r[i] = tostring(e.err)\n"
    "  elseif e == 1 then\n"
    "    local t = redis.pcall('pttl', key)\n"
    "    if type(t) == 'number' and t < lease then\n"
    "      redis.pcall('pexpire', key, lease)\n"
    "    end\n"
    "    r[i] = 1\n"
    "  else\n"
    "    r[i] = 0\n"
    "  end\n"
    "end\n"
    "return r\n";

/* ARGV[1] n, ARGV[2..n+1] lock hashes, ARGV[n+2..] their owners (the
 * release layout with the key count first). Deletes each lock its owner
 * still holds and publishes the unlock message on its shard channel.
 * Replies per key 1 released, 0 not the owner's, or an error text. */
static const char release_node_lua[] =
    "#!lua flags=allow-cross-slot-keys\n"
    "local n = tonumber(ARGV[1])\n"
    "local r = {}\n"
    "for i = 1, n do\n"
    "  local key, owner = ARGV[i + 1], ARGV[n + 1 + i]\n"
    "  local e = redis.pcall('hexists', key, owner)\n"
    "  if type(e) == 'table' then\n"
    "    r[i] = tostring(e.err)\n"
    "  elseif e == 1 then\n"
    "    redis.pcall('del', key)\n"
    "    redis.pcall('spublish', key .. ':ch', '0')\n"
    "    r[i] = 1\n"
    "  else\n"
    "    r[i] = 0\n"
    "  end\n"
    "end\n"
    "return r\n";

static const char *const bodies[RL_SCRIPT_FAMILY] = {
    acquire_lua, unlock_lua, force_lua, fence_max_lua, renew_lua,
    release_lua, undo_lua, record_lua, renew_node_lua, release_node_lua,
    transfer_lua};

/* Cluster nodes only: a server before 7.0 does not know the shebang. */
static int cluster_only(int id) {
  return id == RL_SCRIPT_RENEW_NODE || id == RL_SCRIPT_RELEASE_NODE;
}

/* The cluster forms: the same text with SPUBLISH for PUBLISH and without
 * the lease horizon's push, made once. NULL where a script has neither. */
static const char *shard_bodies[RL_SCRIPT_COUNT];
static char shas[RL_SCRIPT_ALL][41];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static char *shard_form(const char *body) {
  static const char from[] = "redis.call('publish'";
  static const char to[] = "redis.call('spublish'";
  static const char mark[] = RL_LUA_HORIZON_MARK;
  if (strstr(body, from) == NULL && strstr(body, mark) == NULL) return NULL;
  size_t n = 0;
  for (const char *p = body; (p = strstr(p, from)) != NULL; p++) n++;
  char *out = malloc(strlen(body) + n + 1), *o = out;
  if (out == NULL) abort(); /* at load time, once: nothing to fall back to */
  for (const char *p = body; *p != '\0';) {
    const char *eol = strchr(p, '\n');
    size_t len = eol != NULL ? (size_t)(eol - p) + 1 : strlen(p);
    /* A line that ends with the horizon's mark is left out. */
    if (len >= sizeof mark - 1 &&
        memcmp(p + len - (sizeof mark - 1), mark, sizeof mark - 1) == 0) {
      p += len;
      continue;
    }
    for (const char *e = p + len; p < e;) {
      if ((size_t)(e - p) >= sizeof from - 1 &&
          memcmp(p, from, sizeof from - 1) == 0) {
        memcpy(o, to, sizeof to - 1);
        o += sizeof to - 1;
        p += sizeof from - 1;
      } else {
        *o++ = *p++;
      }
    }
  }
  *o = '\0';
  return out;
}

/* The plain form of any script of the one table. */
static const char *plain_body(int id) {
  if (id >= RL_SCRIPT_FAMILY)
    return rl_fam_script_body((rl_fam_script_id)(id - RL_SCRIPT_FAMILY));
  return bodies[id];
}

static void prepare(void) {
  for (int i = 0; i < RL_SCRIPT_COUNT; i++) {
    const char *p = plain_body(i);
    rl_sha1_hex(p, strlen(p), shas[i]);
    shard_bodies[i] = shard_form(p);
    const char *b = shard_bodies[i] ? shard_bodies[i] : p;
    rl_sha1_hex(b, strlen(b), shas[RL_SCRIPT_COUNT + i]);
  }
}

int rl_script_plain(int id) {
  return id >= RL_SCRIPT_COUNT && id < RL_SCRIPT_ALL ? id - RL_SCRIPT_COUNT
                                                     : id;
}

int rl_script_durable(int id) {
  /* A cluster form is the same script: it writes what the plain one does. */
  switch (rl_script_plain(id)) {
  case RL_SCRIPT_ACQUIRE:
  case RL_FAM(RL_FAM_FAIR_ACQUIRE):
  case RL_FAM(RL_FAM_RW_READ_ACQUIRE):
  case RL_FAM(RL_FAM_RW_WRITE_ACQUIRE):
  case RL_FAM(RL_FAM_SEM_ACQUIRE):
  case RL_FAM(RL_FAM_MULTI_ACQUIRE):
  case RL_FAM(RL_FAM_MULTI_ACQUIRE_XSLOT):
  case RL_SCRIPT_TRANSFER:
    return RL_DURABLE_GRANT;
  case RL_SCRIPT_RENEW:
  case RL_SCRIPT_RENEW_NODE:
  case RL_FAM(RL_FAM_LEASE_RENEW):
    return RL_DURABLE_RENEW;
  case RL_SCRIPT_FENCE_MAX:
  case RL_FAM(RL_FAM_ELECT_PROCLAIM):
    return RL_DURABLE_WRITE;
  default:
    return 0;
  }
}

rl_script_id rl_script_shard(rl_script_id id) {
  pthread_once(&once, prepare);
  if (id >= RL_SCRIPT_COUNT || shard_bodies[id] == NULL) return id;
  return (rl_script_id)(RL_SCRIPT_COUNT + id);
}

/* Whether a cluster node runs script id (plain id): all but the set's,
 * since rlock_lock_all is refused on a cluster master (lock.c). */
static int on_cluster(int id) {
  return id < RL_FAM(RL_FAM_MULTI_ACQUIRE) ||
         id > RL_FAM(RL_FAM_MULTI_UNDO_XSLOT);
}

int rl_script_loaded_on(int id, int cluster) {
  pthread_once(&once, prepare);
  if (id < RL_SCRIPT_FAMILY) return cluster || !cluster_only(id);
  if (id < RL_SCRIPT_COUNT)
    return !cluster || (shard_bodies[id] == NULL && on_cluster(id));
  return cluster && shard_bodies[id - RL_SCRIPT_COUNT] != NULL &&
         on_cluster(id - RL_SCRIPT_COUNT);
}

const char *rl_script_body(rl_script_id id) {
  pthread_once(&once, prepare);
  if (id < RL_SCRIPT_COUNT) return plain_body(id);
  const char *b = shard_bodies[id - RL_SCRIPT_COUNT];
  return b ? b : plain_body(id - RL_SCRIPT_COUNT);
}

const char *rl_script_sha(rl_script_id id) {
  pthread_once(&once, prepare);
  return shas[id];
}
