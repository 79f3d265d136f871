/*
 * Scripts shared by several kinds: batched renewal of leases kept in a
 * sorted set, and batched liveness touches of waiters.
 *
 * Why shared. A read hold (rw_scripts.c) and an owner's semaphore permits
 * (sem_scripts.c) have the same shape: a zset member -> expiry in the
 * master's ms, beside a hash that must live as long. A fair-lock waiter
 * and a waiting writer have one shape too: a zset member -> alive-until,
 * beside the zset that says whether it is still queued. One script per
 * shape lets the watchdog renew read holds of many locks and permits of
 * many semaphores in one call per master, as it does for locks, and lets
 * a client keep all its waiters alive in one call instead of one attempt
 * per waiter.
 */
#include "family_lua.h"

/*
 * KEYS: pairs (expiry zset, companion hash). ARGV[1] lease ms, [2..] the
 * owner of each pair. For each pair, if the owner's lease there has not
 * run out, it becomes at least now + lease (never shorter), and both keys
 * live at least as long. Replies a string of one character per pair, as
 * the lock's renew script does (scripts.c): '1' renewed, '0' the owner no
 * longer holds there (its lease ran out or was released). A batch that
 * renewed any pushes the master's lease horizon once (scripts.h,
 * RL_LUA_HORIZON).
 */
const char rl_fam_lease_renew_lua[] =
    RL_LUA_CLOCK RL_LUA_FMT RL_LUA_RAISE
    "local lease = tonumber(ARGV[1])\n"
    "local r = {}\n"
    "for i = 1, #KEYS / 2 do\n"
    "  local z, h, o = KEYS[2 * i - 1], KEYS[2 * i], ARGV[i + 1]\n"
    "  local s = tonumber(redis.call('zscore', z, o) or '0')\n"
    "  if s > now then\n"
    "    local e = now + lease\n"
    "    if s > e then e = s end\n"
    "    redis.call('zadd', z, fmt(e), o)\n"
    "    raise(z, e - now)\n"
    "    raise(h, e - now)\n"
    "    r[i] = '1'\n"
    "  else\n"
    "    r[i] = '0'\n"
    "  end\n"
    "end\n"
    "local s_ = table.concat(r)\n"
    "if string.find(s_, '1', 1, true) then " RL_LUA_HORIZON_PUSH("lease")
    " end" RL_LUA_HORIZON_MARK
    "return s_\n";

/*
 * KEYS: pairs (alive zset, membership zset): (:qt, :q) for a fair-lock
 * waiter, (:wq, :wq) for a waiting writer. ARGV[1] alive_ms, [2..] the
 * waiter of each pair. For each pair, if the waiter is still a member, its
 * alive-until becomes now + alive_ms and both keys live at least that
 * long. Replies an array: 1 touched, 0 no longer queued (it was skipped
 * as dead, or left): the waiter must attempt again to queue anew.
 */
const char rl_fam_waiter_touch_lua[] =
    RL_LUA_CLOCK RL_LUA_FMT RL_LUA_RAISE
    "local alive = tonumber(ARGV[1])\n"
    "local r = {}\n"
    "for i = 1, #KEYS / 2 do\n"
    "  local a, m, o = KEYS[2 * i - 1], KEYS[2 * i], ARGV[i + 1]\n"
    "  if redis.call('zscore', m, o) then\n"
    "    redis.call('zadd', a, fmt(now + alive), o)\n"
    "    raise(a, alive)\n"
    "    raise(m, alive)\n"
    "    r[i] = 1\n"
    "  else\n"
    "    r[i] = 0\n"
    "  end\n"
    "end\n"
    "return r\n";
