/*
 * Lua scripts, one per lock operation, as in Redisson's RedissonLock but
 * with a fencing counter beside each lock.
 *
 * Fencing tokens: a first acquisition adds one to the lock's counter or,
 * when there is no counter (never used, expired after a day unused, or
 * lost with a master's memory), starts it at the master's clock in
 * microseconds. A counter started at time T has handed out fewer tokens
 * than microseconds have passed since T (an acquisition takes far longer
 * than one), so a restarted counter always starts above every token given
 * before, as long as the master's wall clock has not stepped back; this is
 * what lets the counter carry a TTL, so that no key rlock writes lives
 * forever. Tokens stay below 2^53 (until the year 2255), so Lua's doubles
 * hold them exactly. Masters with the same history agree on the next
 * value, which lets a round with N > 1 skip the write-back.
 */
#include "scripts.h"

#include <pthread.h>
#include <string.h>

#include "sha1.h"

/* KEYS[1] lock hash, KEYS[2] fence counter.
 * ARGV[1] lease ms, ARGV[2] owner, ARGV[3] fence TTL ms.
 * A reentrant grant never shortens the lock's TTL: an attempt with a
 * shorter lease, undone or not, must not cut the holder's time. */
static const char acquire_lua[] =
    "if redis.call('exists', KEYS[1]) == 0 then\n"
    "  redis.call('hset', KEYS[1], ARGV[2], 1)\n"
    "  redis.call('pexpire', KEYS[1], ARGV[1])\n"
    "  local f = tonumber(redis.call('get', KEYS[2]) or '0')\n"
    "  if f > 0 then\n"
    "    f = f + 1\n"
    "  else\n"
    "    local t = redis.call('time')\n"
    "    f = tonumber(t[1]) * 1000000 + tonumber(t[2])\n"
    "  end\n"
    "  redis.call('set', KEYS[2], string.format('%.0f', f), 'px', ARGV[3])\n"
    "  return {1, f, 1}\n"
    "end\n"
    "if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then\n"
    "  local n = redis.call('hincrby', KEYS[1], ARGV[2], 1)\n"
    "  if redis.call('pttl', KEYS[1]) < tonumber(ARGV[1]) then\n"
    "    redis.call('pexpire', KEYS[1], ARGV[1])\n"
    "  end\n"
    "  return {1, tonumber(redis.call('get', KEYS[2]) or '0'), n}\n"
    "end\n"
    "return {0, redis.call('pttl', KEYS[1])}\n";

/* KEYS[1] lock hash. ARGV[1] lease ms, ARGV[2] owner, ARGV[3] channel.
 * Replies 0 not owner, 1 released, 2 still held (count decremented). The
 * TTL is never shortened. An unlock is never retried (one that cannot
 * reach a majority ends the hold: see release.c), so a decrement cannot
 * be applied twice. */
static const char unlock_lua[] =
    "if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then return 0 end\n"
    "local n = redis.call('hincrby', KEYS[1], ARGV[2], -1)\n"
    "if n > 0 then\n"
    "  if redis.call('pttl', KEYS[1]) < tonumber(ARGV[1]) then\n"
    "    redis.call('pexpire', KEYS[1], ARGV[1])\n"
    "  end\n"
    "  return 2\n"
    "end\n"
    "redis.call('del', KEYS[1])\n"
    "redis.call('publish', ARGV[3], '0')\n"
    "return 1\n";

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
 * Replies an array: 1 where the owner still holds the lock (its TTL is
 * now at least the lease: never shortened), 0 where it no longer does. */
static const char renew_lua[] =
    "local r = {}\n"
    "local lease = tonumber(ARGV[1])\n"
    "for i = 1, #KEYS do\n"
    "  if redis.call('hexists', KEYS[i], ARGV[i + 1]) == 1 then\n"
    "    if redis.call('pttl', KEYS[i]) < lease then\n"
    "      redis.call('pexpire', KEYS[i], lease)\n"
    "    end\n"
    "    r[i] = 1\n"
    "  else\n"
    "    r[i] = 0\n"
    "  end\n"
    "end\n"
    "return r\n";

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

/* KEYS[1] lock hash. ARGV[1] owner, ARGV[2] channel. Takes back exactly
 * one grant: by the time it lands, the same owner may hold the lock
 * through a later attempt that counted on this grant, so it decrements
 * (never sets) the count, and leaves the TTL alone. Replies as unlock. */
static const char undo_lua[] =
    "if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then return 0 end\n"
    "if redis.call('hincrby', KEYS[1], ARGV[1], -1) > 0 then return 2 end\n"
    "redis.call('del', KEYS[1])\n"
    "redis.call('publish', ARGV[2], '0')\n"
    "return 1\n";

static const char *const bodies[RL_SCRIPT_COUNT] = {
    acquire_lua, unlock_lua, force_lua, fence_max_lua, renew_lua,
    release_lua, undo_lua};

static char shas[RL_SCRIPT_COUNT][41];
static pthread_once_t shas_once = PTHREAD_ONCE_INIT;

static void compute_shas(void) {
  for (int i = 0; i < RL_SCRIPT_COUNT; i++)
    rl_sha1_hex(bodies[i], strlen(bodies[i]), shas[i]);
}

const char *rl_script_body(rl_script_id id) { return bodies[id]; }

const char *rl_script_sha(rl_script_id id) {
  pthread_once(&shas_once, compute_shas);
  return shas[id];
}
