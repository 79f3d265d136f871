/*
 * The Lua scripts rlock runs on each master, and their EVALSHA names. Each
 * script is atomic on one master; a quorum round runs the same script on
 * every master. Key and argument layouts are documented beside each body
 * in scripts.c.
 */
#ifndef RL_SCRIPTS_H
#define RL_SCRIPTS_H

#include "family_scripts.h"

/*
 * One id space for every script a connection loads at its handshake: the
 * reentrant lock's first, then the lock family's (family_scripts.h) from
 * RL_SCRIPT_FAMILY on, so that rounds, the NOSCRIPT fallback and the
 * handshake's SCRIPT LOAD serve them all unchanged.
 */
typedef enum rl_script_id {
  RL_SCRIPT_ACQUIRE = 0,
  RL_SCRIPT_UNLOCK,
  RL_SCRIPT_FORCE,
  RL_SCRIPT_FENCE_MAX,
  RL_SCRIPT_RENEW,
  RL_SCRIPT_RELEASE,
  RL_SCRIPT_UNDO,
  RL_SCRIPT_RECORD,
  /* Watchdog renewal and release on close, batched by cluster node: the
   * keys are arguments (a script cannot declare keys of several slots)
   * and each is touched under pcall. Loaded on cluster nodes only. */
  RL_SCRIPT_RENEW_NODE,
  RL_SCRIPT_RELEASE_NODE,
  /* An unlock that hands the lock to a waiter of the same client in the
   * same round trip (transfer.c). Its grant reply is acquire's, so it is
   * a durable grant (master_ack.c) like an acquisition. */
  RL_SCRIPT_TRANSFER,
  RL_SCRIPT_FAMILY, /* the family's first: RL_FAM(RL_FAM_...) */
  RL_SCRIPT_COUNT = RL_SCRIPT_FAMILY + RL_FAM_SCRIPT_COUNT
} rl_script_id;

/* The rl_script_id of a family script. */
#define RL_FAM(id) ((int)RL_SCRIPT_FAMILY + (int)(id))

/* Ids from RL_SCRIPT_COUNT on are the shard forms of the scripts that
 * publish (rl_script_shard), up to RL_SCRIPT_ALL. */
#define RL_SCRIPT_ALL (2 * RL_SCRIPT_COUNT)

/* Replies of the acquire script: {1, token, count, existed} or
 * {0, holder_pttl}; a holder_pttl of RL_ACQUIRE_REPLY_LATE means the
 * request's deadline had passed on the master (nothing was granted). A
 * value of the wire protocol, not a result code. */
#define RL_ACQUIRE_REPLY_LATE (-3)
/* Replies of the unlock script. */
enum {
  RL_UNLOCK_NOT_OWNER = 0,
  RL_UNLOCK_RELEASED = 1,
  RL_UNLOCK_DECREMENTED = 2
};

/* How long a fencing counter outlives the last acquisition, in ms (also
 * written into the acquire script). */
#define RL_FENCE_TTL_MS 86400000

/*
 * Lua: reads a clocked command's last argument, arg (a Lua expression),
 * as the connection writes it (conn.c): "DEADLINE:AHEAD" or "0". Sets
 * deadline_ to the deadline in this master's microseconds (0: none) and
 * ahead_ to how far the acquiring client's wall clock is ahead of this
 * master's, or nil when not sent.
 */
#define RL_LUA_CLOCKED_ARG(arg)                                             \
  "local deadline_, ahead_ = string.match(" arg ", '^(%d+):(%-?%d+)$')\n"  \
  "if deadline_ then\n"                                                     \
  "  deadline_, ahead_ = tonumber(deadline_), tonumber(ahead_)\n"           \
  "else\n"                                                                  \
  "  deadline_ = tonumber(" arg ") or 0\n"                                  \
  "end\n"

/*
 * Lua: wall_, the acquiring client's wall clock at this moment in
 * microseconds (this master's clock now_us plus ahead_), or 0 when the
 * client sent no difference; below 2^53 - 2^32 as rl_token_floor keeps
 * the floor. A first acquisition's token is at least wall_: the floor the
 * client sends is its clock when it sent, and a command that reaches a
 * master late (a master stopped during a failover and resumed, a slow
 * network) runs after acquisitions whose floors were taken later; its
 * token must still be above theirs (test_sentinel stopped_master_token).
 * The client measures the difference against an upper bound of the
 * master's clock (conn.c), so wall_ is never above the client's real
 * clock at this moment: a token stays below the floor of any acquisition
 * sent after this one ran, as it was when the floor was only the clock at
 * sending. It is below the real clock by at most the bound's slack (the
 * round trip of the TIME it came from, and 500 ppm of its age).
 */
#define RL_LUA_CLIENT_WALL                                                  \
  "local wall_ = 0\n"                                                       \
  "if ahead_ then\n"                                                        \
  "  wall_ = now_us + ahead_\n"                                             \
  "  if wall_ > 9007194959773696 then wall_ = 9007194959773696 end\n"       \
  "end\n"

#define RL_LUA_STR2_(x) #x
#define RL_LUA_STR2(x) RL_LUA_STR2_(x)

/*
 * Lua: next_token(key, floor), the token of a first exclusive acquisition
 * of any kind: max(counter + 1, floor, wall_), the counter (key) being 0
 * where there is none (never used, expired, or lost with a master's
 * memory); stored back in the counter for RL_FENCE_TTL_MS, as a decimal
 * integer: the value goes to SET as a Lua number, which Redis writes
 * with %.17g, exact below 2^53 (Lua's own tostring would write 1.7e+15,
 * and string.format costs the server about 0.4 us a call). Needs wall_
 * (RL_LUA_CLIENT_WALL). One SET ... GET in the common case, where the
 * floor or the client's clock is above the counter: it writes that
 * candidate and reads what the counter was in one call; where the counter
 * + 1 is larger (two acquisitions within one microsecond of the client's
 * clock, a clock behind), a second SET writes that. The script is atomic,
 * so no one sees the candidate. (SET's GET option needs Redis 6.2.)
 */
#define RL_LUA_NEXT_TOKEN_FN                                                \
  "local function next_token(key, floor)\n"                                 \
  "  local f = floor\n"                                                     \
  "  if f < wall_ then f = wall_ end\n"                                     \
  "  if f < 1 then f = 1 end\n"                                             \
  "  local o = redis.call('set', key, f, 'px', "                            \
  RL_LUA_STR2(RL_FENCE_TTL_MS) ", 'get')\n"                                 \
  "  if o then\n"                                                           \
  "    o = tonumber(o) + 1\n"                                               \
  "    if o > f then\n"                                                     \
  "      f = o\n"                                                           \
  "      redis.call('set', key, f, 'px', " RL_LUA_STR2(RL_FENCE_TTL_MS) ")\n" \
  "    end\n"                                                               \
  "  end\n"                                                                 \
  "  return f\n"                                                            \
  "end\n"

/*
 * Lua: pushes this master's lease horizon to at least ms (a Lua
 * expression, an integer) from now. The horizon is the key
 * <prefix>horizon (the prefix is KEYS[1]'s part before its hash tag),
 * whose TTL is the latest expiry of any lease this master granted or
 * extended: the restart quarantine reads it on the other masters
 * (quarantine.c). PEXPIRE GT raises the TTL in one call where the new
 * expiry is later, as it is for most grants; where it is not, or the key
 * is missing, SET NX creates it with its TTL (GT counts a key without a
 * TTL as infinite, so the key is never created without one). A grant
 * pushes it once, a renewal batch once (every hold of a batch gets the
 * same lease, and no hold's TTL is shortened: an earlier push covers a
 * longer one).
 *
 * The key has no hash tag: on a Redis Cluster it would be another slot
 * than the lock's, which a script may not touch. Cluster nodes have no
 * restart records and keep the configured quarantine (quarantine.c), so
 * the cluster form of a script (rl_script_shard) leaves the push out. A
 * cluster node listed as a plain master runs the plain form, whose push
 * fails there: it runs under pcall, so the grant stands, and that
 * master's horizon is never read (INFO's redis_mode says it is not
 * standalone; quarantine.c). RL_LUA_HORIZON is one line ending in
 * RL_LUA_HORIZON_MARK, and the cluster form drops every line that ends
 * so.
 */
#define RL_LUA_HORIZON_PUSH(ms)                                             \
  "local h_ = string.match(KEYS[1], '^[^{]*') .. 'horizon' "                \
  "if redis.pcall('pexpire', h_, " ms ", 'GT') == 0 then "                  \
  "redis.pcall('set', h_, '1', 'px', " ms ", 'nx') end"
#define RL_LUA_HORIZON_MARK " --horizon\n"
#define RL_LUA_HORIZON(ms) RL_LUA_HORIZON_PUSH(ms) RL_LUA_HORIZON_MARK

/* The horizon's key after the prefix. */
#define RL_HORIZON_SUFFIX "horizon"

/* How long the restart records outlive the last client that wrote them. */
#define RL_RECORDS_TTL_MS (7 * 86400000LL)

/* The form of a script that cluster nodes run: the one that publishes
 * with SPUBLISH (a shard channel, heard on the lock's node only) where
 * the script publishes with PUBLISH (broadcast to every node), and
 * without the lease horizon's push (RL_LUA_HORIZON); the script itself
 * when it has neither. */
rl_script_id rl_script_shard(rl_script_id id);

/* The plain script whose cluster form id is (rl_script_shard's inverse);
 * id itself when it is a plain one. */
int rl_script_plain(int id);

/* 1 if a connection loads script id in its handshake: on a plain or
 * Sentinel master (cluster 0) every script but the cluster-only ones; on
 * a cluster node (cluster 1) the cluster form of each script: its shard
 * form where it publishes, else the script itself, the cluster-only ones
 * included. The set's scripts (rlock_lock_all) are not loaded on cluster
 * nodes: a cluster master refuses it (lock.c, rl_family_refused). */
int rl_script_loaded_on(int id, int cluster);

/* What a script is for replica acknowledgement (master_ack.c): 0 not
 * durable; RL_DURABLE_GRANT an acquisition of any kind (its reply's first
 * element is 1 when it granted: the reentrant lock's, and the family's
 * acquire-type replies); RL_DURABLE_RENEW a batched renewal (an array of
 * 1 renewed / 0 gone per key: renew, its node form, lease_renew);
 * RL_DURABLE_WRITE a write that must reach the replicas whatever it
 * replies (the fencing write-back, an election's leader record). A
 * cluster form (rl_script_shard) is what its plain form is. */
enum { RL_DURABLE_GRANT = 1, RL_DURABLE_RENEW, RL_DURABLE_WRITE };
int rl_script_durable(int id);

/* Any id below RL_SCRIPT_ALL. */
const char *rl_script_body(rl_script_id id);
/* 40 hex digits, computed on first use. */
const char *rl_script_sha(rl_script_id id);

#endif
