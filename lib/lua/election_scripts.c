/*
 * The election's scripts: leadership is a fair lock's hold, and the
 * leader's value and fencing token are two more fields of that lock's
 * hash.
 *
 * Why it looks like this. The leader record must live exactly as long as
 * the leadership: a leader that resigns, is released at close, or dies
 * (its lease runs out) must take its record with it, with nothing to
 * renew and nothing left behind. Fields of the lock's own hash do that:
 * every script of the lock deletes the whole key when the last hold ends,
 * the watchdog's renewal extends the whole key, and its expiry ends both
 * at once. The field names begin with '#', which no owner field does (an
 * owner is "<client-id>:<thread>" with a hex client id), so no script of
 * the lock mistakes them for a holder; they are written only while the
 * owner's field is there, so the hash never holds them alone.
 *
 *   KEYS[1] <prefix>{<name>}       hash: owner -> count (the fair lock),
 *                                  '#t' the leader's token, '#v' its
 *                                  value, '#o' its owner field
 *   KEYS[2] <prefix>{<name>}:q     zset: waiting campaigners -> ticket
 *                                  (the fair lock's queue; read by status)
 *   channel <prefix>{<name>}:e:ch  message: a token ("0" after a resign)
 *
 * An observer is woken by the channel and reads the record again (the
 * message says only that something changed); a leader that dies sends
 * nothing, and its record goes when its lease runs out, which the
 * observer's timer at that expiry finds.
 */
#include "family_lua.h"

/*
 * ARGV[1] owner field, [2] token, [3] value. Writes the record where the
 * owner holds the lock, and tells the observers. Replies 1 written, 0 the
 * owner does not hold the lock here (nothing changed).
 */
const char rl_fam_elect_proclaim_lua[] =
    "if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then return 0 end\n"
    "redis.call('hset', KEYS[1], '#t', ARGV[2], '#v', ARGV[3],\n"
    "           '#o', ARGV[1])\n"
    "redis.call('publish', KEYS[1] .. ':e:ch', ARGV[2])\n"
    "return 1\n";

/*
 * No arguments. The record as this master has it: {token, pttl, value}
 * when a leader's record is there (pttl the lock's remaining lease), else
 * {0, pttl} (pttl -2 when no one holds the lock: a campaigner that won it
 * and has not written its record yet leaves a positive one).
 */
const char rl_fam_elect_read_lua[] =
    "local r = redis.call('hmget', KEYS[1], '#t', '#v', '#o')\n"
    "local p = redis.call('pttl', KEYS[1])\n"
    "if not r[1] or not r[3] or\n"
    "   redis.call('hexists', KEYS[1], r[3]) == 0 then\n"
    "  return {0, p}\n"
    "end\n"
    "return {tonumber(r[1]), p, r[2]}\n";

/*
 * ARGV[1] message. Tells the observers that the leader changed (a resign
 * or a loss the leader saw). Replies 1.
 */
const char rl_fam_elect_notify_lua[] =
    "redis.call('publish', KEYS[1] .. ':e:ch', ARGV[1])\n"
    "return 1\n";

/*
 * No arguments. For rlock status: {token, pttl, value, owner} as read
 * (token 0 and empty strings without a record), then the waiting
 * campaigners in queue order, each as owner and ticket.
 */
const char rl_fam_elect_status_lua[] =
    "local r = redis.call('hmget', KEYS[1], '#t', '#v', '#o')\n"
    "local out = {tonumber(r[1] or '0'), redis.call('pttl', KEYS[1]),\n"
    "             r[2] or '', r[3] or ''}\n"
    "local q = redis.call('zrange', KEYS[2], 0, -1, 'withscores')\n"
    "for i = 1, #q do out[#out + 1] = q[i] end\n"
    "return out\n";
