/*
 * The semaphore's scripts: at most K permits held at once, each held by an
 * owner as a lease, so a crashed holder's permits come back by themselves
 * when its lease runs out (Redisson's RSemaphore leaks them).
 *
 * Why permits are numbered slots. With N masters, a permit must count only
 * when a majority granted it. If permits were anonymous counters, "a
 * majority granted me one" would not bound the holders: with K = 2 and
 * three masters A, B, C, owners X (granted on A, B), Y (B, C) and Z (A, C)
 * each hold a majority while no master ever counts more than two, and
 * three owners hold permits of a semaphore of two. So the semaphore is K
 * numbered slots, each an exclusive little lock: the client holds slot s
 * when a majority granted it s, two majorities always share a master, a
 * master never gives one slot to two owners, and so no slot has two
 * holders and there are never more than K. The client asks for its
 * permits with a hint of the slots it wants (the ones most masters gave it
 * last time), so that masters that chose differently converge. With one
 * master this is simply a counted semaphore.
 *
 *   KEYS[1] <prefix>{<name>}:s       hash: slot ("1".."K") -> owner;
 *                                    records, never slots as they start
 *                                    with '#': "#limit" -> K, "#refused"
 *                                    -> refusals counted, "#at:<owner>"
 *                                    -> that count at the owner's first
 *                                    grant here, "#freed" -> slots
 *                                    freed here (both counts go when
 *                                    no slot is taken)
 *   KEYS[2] <prefix>{<name>}:s:t     zset: owner -> lease expiry (master ms)
 *   KEYS[3] <prefix>{<name>}:s:fence string: fencing counter
 *   channel <prefix>{<name>}:s:ch    message: how many permits came back
 *
 * Who is told that permits came back. A refused waiter sleeps until a
 * message on the channel. A release or give-back announces the slots it
 * frees only when this master refused someone since the owner's first
 * grant here ("#refused" above its "#at:" mark, or no mark). Why: at
 * N = 3 a hold usually lives on the two masters that answered first, so
 * the third grants each waiter a slot the waiter gives back at once; when
 * every give-back was announced, it woke the waiters, which tried again at
 * once, thousands of scripts a second while the holder held. Why no
 * waiter misses its wake: a waiter refused here at count c can only gain
 * here when a slot taken at that moment is freed, and that slot's owner
 * got its mark before c and keeps it while it holds a slot (the count is
 * forgotten only when no slot is taken), so the free is announced. Slots
 * reclaimed from run-out leases are announced as before, and so is a reset.
 * Scripts of older clients take the records for slots of dead owners and
 * delete them (announcing it): their counts stay right; with a mark gone
 * the owner's free is announced, so their waiters are woken as before.
 *
 * That argument is about messages; a message wakes one waiter per client,
 * the first of its queue, so the client hands the wake on (sem_kind.c).
 * A waiter that took the permits hands it on too: the next waiter of its
 * client was refused before that grant, so the grant's release would not
 * be announced unless that waiter is refused again, behind it. And when
 * the first wants more permits than came back it is refused, and another
 * waiter of the client that wants fewer must still hear of them. A
 * refusal says how many slots this master has freed so far ("#freed"),
 * so that the refused waiter can tell a wake of new frees, which it hands
 * on, from a wake that another refused waiter handed on about the same
 * frees, which it keeps (sem_kind.c's pass_wake says why: else two
 * such waiters woke each other forever).
 *
 * One expiry per owner covers all its slots on that master: its lease is
 * renewed as one (lease_scripts.c), and every script first takes back the
 * slots of owners whose lease has run out. The expiry zset lives as long
 * as the longest lease; the slot hash at least as long, and at least
 * limit_ttl, so that the limit is remembered between uses and a client
 * that believes in another K is told (-3) instead of silently changing it.
 *
 * Tokens: an owner's first permit on a master gets a token as an exclusive
 * lock would (max(counter + 1, floor)); with K = 1 it fences exactly as a
 * lock; with K > 1 it is an acquisition id that only grows.
 */
#include "family_lua.h"
#include "family_scripts.h"

/* The refusal records in the slot hash (see the top comment). */
#define SEM_REFUSED "#refused"
#define SEM_AT "#at:"
#define SEM_FREED "#freed"

/* Lua helpers over KEYS[1..3], after RL_LUA_CLOCK. A field of the slot
 * hash that starts with '#' is a record, never a slot (slots are "1".."K").
 * reclaim() takes back the slots of owners whose lease is not live (its
 * expiry passed, or gone with the expiry zset, whose TTL ends with the
 * last lease), with their "#at:" records, and announces how many came
 * back. count_freed(n) adds n to the count of slots freed here. scan(o)
 * returns the number of slots taken, o's slots, and the set of taken slot
 * names. drop_owner_if_empty(o) forgets o's lease and record when it has
 * no slot left here, and the refusal and free counts when no slot is
 * taken at all. woke(o) says whether freeing o's slots must be
 * announced (sem_scripts.c's top comment says why). */
#define SEM_HELPERS                                                         \
  "local function count_freed(n)\n"                                         \
  "  if n > 0 and redis.call('exists', KEYS[1]) == 1 then\n"                \
  "    redis.call('hincrby', KEYS[1], '" SEM_FREED "', n)\n"                \
  "  end\n"                                                                 \
  "end\n"                                                                   \
  "local function reclaim()\n"                                              \
  "  local all = redis.call('hgetall', KEYS[1])\n"                          \
  "  local live, n = {}, 0\n"                                               \
  "  local function alive(o)\n"                                             \
  "    if live[o] == nil then\n"                                            \
  "      live[o] = tonumber(redis.call('zscore', KEYS[2], o) or '0') > now\n" \
  "    end\n"                                                               \
  "    return live[o]\n"                                                    \
  "  end\n"                                                                 \
  "  for i = 1, #all, 2 do\n"                                               \
  "    local f = all[i]\n"                                                  \
  "    if string.byte(f, 1) ~= 35 then\n"                                   \
  "      if not alive(all[i + 1]) then\n"                                   \
  "        redis.call('hdel', KEYS[1], f)\n"                                \
  "        n = n + 1\n"                                                     \
  "      end\n"                                                             \
  "    elseif string.sub(f, 1, 4) == '" SEM_AT "' then\n"                   \
  "      if not alive(string.sub(f, 5)) then redis.call('hdel', KEYS[1], f) end\n" \
  "    end\n"                                                               \
  "  end\n"                                                                 \
  "  redis.call('zremrangebyscore', KEYS[2], '-inf', now)\n"                \
  "  count_freed(n)\n"                                                      \
  "  if n > 0 then redis.call('publish', KEYS[1] .. ':ch', n) end\n"        \
  "  return n\n"                                                            \
  "end\n"                                                                   \
  "local function scan(o)\n"                                                \
  "  local all = redis.call('hgetall', KEYS[1])\n"                          \
  "  local taken, mine, used = 0, {}, {}\n"                                 \
  "  for i = 1, #all, 2 do\n"                                               \
  "    if string.byte(all[i], 1) ~= 35 then\n"                              \
  "      taken = taken + 1\n"                                               \
  "      used[all[i]] = true\n"                                             \
  "      if all[i + 1] == o then mine[#mine + 1] = all[i] end\n"            \
  "    end\n"                                                               \
  "  end\n"                                                                 \
  "  return taken, mine, used\n"                                            \
  "end\n"                                                                   \
  "local function drop_owner_if_empty(o)\n"                                 \
  "  local taken, mine = scan(o)\n"                                         \
  "  if #mine == 0 then\n"                                                  \
  "    redis.call('hdel', KEYS[1], '" SEM_AT "' .. o)\n"                    \
  "    redis.call('zrem', KEYS[2], o)\n"                                    \
  "    if redis.call('zcard', KEYS[2]) == 0 then redis.call('del', KEYS[2]) end\n" \
  "  end\n"                                                                 \
  "  if taken == 0 then\n"                                                  \
  "    redis.call('hdel', KEYS[1], '" SEM_REFUSED "', '" SEM_FREED "')\n"   \
  "  end\n"                                                                 \
  "  return #mine\n"                                                        \
  "end\n"                                                                   \
  "local function woke(o)\n"                                                \
  "  local at = redis.call('hget', KEYS[1], '" SEM_AT "' .. o)\n"           \
  "  if not at then return true end\n"                                      \
  "  local r = redis.call('hget', KEYS[1], '" SEM_REFUSED "')\n"            \
  "  return tonumber(r or '0') > tonumber(at)\n"                            \
  "end\n"

#define SEM_PRELUDE RL_LUA_CLOCK RL_LUA_FMT RL_LUA_KEEP SEM_HELPERS

/* The common first grant, before the helpers are defined: a quiet
 * semaphore (its slot hash absent or holding only this K's limit record,
 * no lease zset), where reclaim() and scan() would find nothing and no
 * refusal is counted. The same grant as the full path (hinted slots
 * first, then the lowest; the owner's "#at:" mark is 0), in one HSET. The
 * lease is recorded first and given its TTL by pcall: a refused PEXPIRE
 * (an ACL user without it) deletes the zset it just created and fails
 * with that error before the slot hash is touched. Slot names are small
 * integers (K below 10^9 here), which tostring writes as fmt() does. */
#define SEM_FIRST_GRANT                                                     \
  "local h_ = redis.call('hgetall', KEYS[1])\n"                             \
  "if lease >= 1 and n >= 1 and n <= k and k < 1e9 and\n"                    \
  "   k == math.floor(k) and (#h_ == 0 or (#h_ == 2 and\n"                   \
  "   h_[1] == '" RL_SEM_LIMIT_FIELD "' and tonumber(h_[2]) == k)) and\n"    \
  "   redis.call('exists', KEYS[2]) == 0 then\n"                             \
  "  local got, used = {}, {}\n"                                             \
  "  for i = 7, #ARGV - 1 do\n"                                              \
  "    local s = tonumber(ARGV[i])\n"                                        \
  "    if #got < n and s and s >= 1 and s <= k and s == math.floor(s) then\n" \
  "      s = tostring(s)\n"                                                  \
  "      if not used[s] then used[s] = true; got[#got + 1] = s end\n"        \
  "    end\n"                                                                \
  "  end\n"                                                                  \
  "  local s = 1\n"                                                          \
  "  while #got < n do\n"                                                    \
  "    local name = tostring(s)\n"                                           \
  "    if not used[name] then used[name] = true; got[#got + 1] = name end\n" \
  "    s = s + 1\n"                                                          \
  "  end\n"                                                                  \
  "  redis.call('zadd', KEYS[2], now + lease, owner)\n"                      \
  "  local e = redis.pcall('pexpire', KEYS[2], lease)\n"                     \
  "  if type(e) == 'table' and e.err then\n"                                 \
  "    redis.call('del', KEYS[2])\n"                                         \
  "    return e\n"                                                           \
  "  end\n"                                                                  \
  "  local hold_ms = math.ceil(math.max(lease, limit_ttl))\n"                \
  "  local a = {'hset', KEYS[1], '" RL_SEM_LIMIT_FIELD "', k,\n"             \
  "             '" SEM_AT "' .. owner, '0'}\n"                               \
  "  for i = 1, #got do a[#a + 1] = got[i]; a[#a + 1] = owner end\n"         \
  "  redis.call(unpack(a))\n"                                                \
  "  if #h_ == 0 or redis.call('pttl', KEYS[1]) < hold_ms then\n"            \
  "    redis.call('pexpire', KEYS[1], hold_ms)\n"                            \
  "  end\n"                                                                  \
  RL_LUA_HORIZON("lease")                                                    \
  "  local r = {1, next_token(KEYS[3], floor), n, k - n}\n"                  \
  "  for i = 1, #got do r[#r + 1] = tonumber(got[i]) end\n"                  \
  "  return r\n"                                                             \
  "end\n"

/* The common release, before the helpers are defined: the owner is the
 * only lease holder, its lease live, every slot taken is its own and
 * every one goes, and the hash has no record but the limit, the refusal
 * and free counts and the owner's mark. Then the full path would free the
 * slots, forget the owner and both counts, and delete the lease zset:
 * here one HDEL and one DEL do it, and the free is announced under the
 * same rule (woke()). */
#define SEM_LAST_RELEASE                                                    \
  "local h_ = redis.call('hgetall', KEYS[1])\n"                             \
  "local z_ = redis.call('zrange', KEYS[2], 0, 1, 'withscores')\n"          \
  "if z_[1] == owner and z_[3] == nil and tonumber(z_[2]) > now then\n"     \
  "  local mine, at, refused, ok = {}, nil, nil, true\n"                    \
  "  local mark = '" SEM_AT "' .. owner\n"                                  \
  "  for i = 1, #h_, 2 do\n"                                                \
  "    local f = h_[i]\n"                                                   \
  "    if string.byte(f, 1) ~= 35 then\n"                                   \
  "      if h_[i + 1] == owner then mine[f] = true else ok = false end\n"   \
  "    elseif f == mark then at = h_[i + 1]\n"                              \
  "    elseif f == '" SEM_REFUSED "' then refused = h_[i + 1]\n"            \
  "    elseif f ~= '" RL_SEM_LIMIT_FIELD "' and f ~= '" SEM_FREED "' then\n" \
  "      ok = false\n"                                                      \
  "    end\n"                                                               \
  "  end\n"                                                                 \
  "  local r, d = {0, 0}, {'hdel', KEYS[1]}\n"                              \
  "  for i = 2, #ARGV do\n"                                                 \
  "    if mine[ARGV[i]] then\n"                                             \
  "      mine[ARGV[i]] = nil\n"                                             \
  "      d[#d + 1] = ARGV[i]\n"                                             \
  "      r[#r + 1] = 1\n"                                                   \
  "    else\n"                                                              \
  "      r[#r + 1] = 0\n"                                                   \
  "    end\n"                                                               \
  "  end\n"                                                                 \
  "  if ok and #d > 2 and next(mine) == nil then\n"                         \
  "    local freed = #d - 2\n"                                              \
  "    d[#d + 1] = mark\n"                                                  \
  "    d[#d + 1] = '" SEM_REFUSED "'\n"                                     \
  "    d[#d + 1] = '" SEM_FREED "'\n"                                       \
  "    redis.call(unpack(d))\n"                                             \
  "    redis.call('del', KEYS[2])\n"                                        \
  "    if not at or tonumber(refused or '0') > tonumber(at) then\n"         \
  "      redis.call('publish', KEYS[1] .. ':ch', freed)\n"                  \
  "    end\n"                                                               \
  "    r[1] = freed\n"                                                      \
  "    return r\n"                                                          \
  "  end\n"                                                                 \
  "end\n"

/*
 * ARGV[1] lease ms, [2] owner, [3] fencing floor, [4] K (the caller's
 * limit), [5] n permits wanted, [6] limit_ttl ms (how long the limit is
 * remembered without use), [7..#ARGV-1] hint: slots wanted first, if
 * free, [#ARGV] deadline (master us, 0 none): last, as in the lock's
 * acquire, because each connection appends it as it writes the command
 * (round.h). The fencing counter keeps RL_FENCE_TTL_MS (family_lua.h).
 *
 * Grants n more slots to the owner when n are free (the hint's free slots
 * first, then the lowest free ones), all or none; the owner's lease
 * becomes at least now + lease. Replies:
 *   {1, token, held, free, slot...}  granted: token 0 when the owner
 *                              already held slots here (it keeps its
 *                              token); held = the owner's slots here now;
 *                              free = slots still free; then the slots
 *                              granted;
 *   {0, wait_ms, free, held, freed}
 *                              not enough free: wait_ms until the
 *                              earliest other lease runs out (-1 if
 *                              none); freed = slots freed here so far
 *                              (the top comment says why);
 *   {-3, limit}                the semaphore's limit is another K:
 *                              nothing changed;
 *   {-4, K}                    n < 1 or n > K: never grantable;
 *   {-1, now_us}               the deadline had passed: nothing changed.
 *
 * Redis does not roll a script back when a command in it fails (an ACL
 * user without +pexpire, say), so each key gets its TTL before anything
 * is written to it: a key that does not exist yet is PEXPIREd first (a
 * no-op that fails that check before anything is written), and the
 * owner's lease is recorded before its slots.
 */
const char rl_fam_sem_acquire_lua[] =
    RL_LUA_CLOCK RL_LUA_DEADLINE("ARGV[#ARGV]") RL_LUA_NEXT_TOKEN
    "local lease, owner = tonumber(ARGV[1]), ARGV[2]\n"
    "local floor, k, n = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])\n"
    "local limit_ttl = tonumber(ARGV[6])\n"
    SEM_FIRST_GRANT
    RL_LUA_FMT RL_LUA_KEEP SEM_HELPERS RL_LUA_ACL_PROBE
    "local cur = redis.call('hget', KEYS[1], '" RL_SEM_LIMIT_FIELD "')\n"
    "if cur and tonumber(cur) ~= k then return {-3, tonumber(cur)} end\n"
    "if n < 1 or n > k then return {-4, k} end\n"
    "reclaim()\n"
    "local taken, mine, used = scan(owner)\n"
    "if k - taken < n then\n"
    "  redis.call('hincrby', KEYS[1], '" SEM_REFUSED "', 1)\n"
    "  local wait = -1\n"
    "  local all = redis.call('zrange', KEYS[2], 0, -1, 'withscores')\n"
    "  for i = 1, #all, 2 do\n"
    "    if all[i] ~= owner then wait = tonumber(all[i + 1]) - now; break end\n"
    "  end\n"
    "  local freed = redis.call('hget', KEYS[1], '" SEM_FREED "')\n"
    "  return {0, wait, k - taken, #mine, tonumber(freed or '0')}\n"
    "end\n"
    "local got = {}\n"
    "for i = 7, #ARGV - 1 do\n"
    "  local s = tonumber(ARGV[i])\n"
    "  if #got < n and s and s >= 1 and s <= k and s == math.floor(s) then\n"
    "    s = fmt(s)\n"
    "    if not used[s] then used[s] = true; got[#got + 1] = s end\n"
    "  end\n"
    "end\n"
    "local s = 1\n"
    "while #got < n do\n"
    "  local name = fmt(s)\n"
    "  if not used[name] then used[name] = true; got[#got + 1] = name end\n"
    "  s = s + 1\n"
    "end\n"
    "local e = now + lease\n"
    "local old = tonumber(redis.call('zscore', KEYS[2], owner) or '0')\n"
    "if old > e then e = old end\n"
    "local hold_ms = math.max(e - now, limit_ttl)\n"
    "if redis.call('exists', KEYS[2]) == 0 then\n"
    "  redis.call('pexpire', KEYS[2], math.ceil(e - now))\n"
    "end\n"
    "redis.call('zadd', KEYS[2], fmt(e), owner)\n"
    "keep(KEYS[2], e - now)\n"
    "if redis.call('exists', KEYS[1]) == 0 then\n"
    "  redis.call('pexpire', KEYS[1], math.ceil(hold_ms))\n"
    "end\n"
    "for i = 1, #got do redis.call('hset', KEYS[1], got[i], owner) end\n"
    "redis.call('hset', KEYS[1], '" RL_SEM_LIMIT_FIELD "', fmt(k))\n"
    "if #mine == 0 then\n"
    "  redis.call('hset', KEYS[1], '" SEM_AT "' .. owner,\n"
    "             redis.call('hget', KEYS[1], '" SEM_REFUSED "') or '0')\n"
    "end\n"
    "keep(KEYS[1], hold_ms)\n"
    RL_LUA_HORIZON("math.ceil(e - now)")
    "local token = 0\n"
    "if #mine == 0 then token = next_token(KEYS[3], floor) end\n"
    "local r = {1, token, #mine + n, k - taken - n}\n"
    "for i = 1, #got do r[#r + 1] = tonumber(got[i]) end\n"
    "return r\n";

/*
 * ARGV[1] owner, [2..] the slots to give back. Frees each listed slot that
 * is the owner's here and leaves the others alone (a slot granted by a
 * majority need not be the owner's on every master, and one may have run
 * out with its lease here): so releasing is idempotent, and a release that
 * reached some masters may be sent again. The lease is left alone (the
 * owner's other slots keep it) and goes with the owner's last slot.
 * Replies {freed, held, f_1, ..., f_m}: how many were freed (announced
 * on the channel), the owner's slots left here, and per listed slot 1 if
 * it was the owner's and is now free, else 0. Over-release is the
 * client's to refuse: it knows which slots it holds (sem.c).
 */
const char rl_fam_sem_release_lua[] =
    RL_LUA_CLOCK
    "local owner = ARGV[1]\n"
    SEM_LAST_RELEASE
    RL_LUA_FMT RL_LUA_KEEP SEM_HELPERS
    "reclaim()\n"
    "local announce = woke(owner)\n"
    "local r = {0, 0}\n"
    "local freed = 0\n"
    "for i = 2, #ARGV do\n"
    "  local f = 0\n"
    "  if redis.call('hget', KEYS[1], ARGV[i]) == owner then\n"
    "    redis.call('hdel', KEYS[1], ARGV[i])\n"
    "    freed = freed + 1\n"
    "    f = 1\n"
    "  end\n"
    "  r[#r + 1] = f\n"
    "end\n"
    "r[1] = freed\n"
    "count_freed(freed)\n"
    "r[2] = drop_owner_if_empty(owner)\n"
    "if freed > 0 and announce then redis.call('publish', KEYS[1] .. ':ch', freed) end\n"
    "return r\n";

/*
 * ARGV[1] owner, [2..] slots to keep. Frees every slot of the owner here
 * but the listed ones, and its lease when none is left. It takes back a
 * grant whose slots the client never learnt (the master had not answered
 * when the attempt was given up: this lands right behind it), keeping
 * what the client holds there; with no slot listed it gives back all the
 * owner's permits (close, a lost hold). Replies {freed, held}.
 */
const char rl_fam_sem_drop_lua[] =
    SEM_PRELUDE
    "local owner, freed = ARGV[1], 0\n"
    "local announce = woke(owner)\n"
    "local keep_ = {}\n"
    "for i = 2, #ARGV do keep_[ARGV[i]] = true end\n"
    "local _, mine = scan(owner)\n"
    "for i = 1, #mine do\n"
    "  if not keep_[mine[i]] then\n"
    "    redis.call('hdel', KEYS[1], mine[i])\n"
    "    freed = freed + 1\n"
    "  end\n"
    "end\n"
    "count_freed(freed)\n"
    "local left = drop_owner_if_empty(owner)\n"
    "if freed > 0 and announce then redis.call('publish', KEYS[1] .. ':ch', freed) end\n"
    "return {freed, left}\n";

/*
 * ARGV[1] owner (may be empty). Reads only. Replies {limit (-1 when there
 * is no limit record), free slots (-1 without a limit), taken slots, the
 * owner's live slots, ms until the earliest lease runs out (-1 if none)}.
 * Expired leases count as free.
 */
const char rl_fam_sem_available_lua[] =
    RL_LUA_CLOCK
    "local all = redis.call('hgetall', KEYS[1])\n"
    "local limit, taken, mine, live = -1, 0, 0, {}\n"
    "for i = 1, #all, 2 do\n"
    "  if all[i] == '" RL_SEM_LIMIT_FIELD "' then\n"
    "    limit = tonumber(all[i + 1])\n"
    "  elseif string.byte(all[i], 1) ~= 35 then\n"
    "    local o = all[i + 1]\n"
    "    if live[o] == nil then\n"
    "      live[o] = tonumber(redis.call('zscore', KEYS[2], o) or '0') > now\n"
    "    end\n"
    "    if live[o] then\n"
    "      taken = taken + 1\n"
    "      if o == ARGV[1] then mine = mine + 1 end\n"
    "    end\n"
    "  end\n"
    "end\n"
    "local first = -1\n"
    "local e = redis.call('zrangebyscore', KEYS[2], '(' .. string.format('%.0f', now),\n"
    "                     '+inf', 'withscores', 'limit', 0, 1)\n"
    "if e[2] then first = tonumber(e[2]) - now end\n"
    "local free = -1\n"
    "if limit >= 0 then free = limit - taken end\n"
    "return {limit, free, taken, mine, first}\n";

/* No arguments. Deletes the semaphore: every permit and the limit record
 * (an operator's reset, e.g. to change K). Replies 1 if it existed. */
const char rl_fam_sem_force_lua[] =
    "if redis.call('del', KEYS[1], KEYS[2]) == 0 then return 0 end\n"
    "redis.call('publish', KEYS[1] .. ':ch', 'reset')\n"
    "return 1\n";
