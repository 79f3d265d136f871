/*
 * Fencing a write to storage. A lock alone cannot stop a holder that was
 * paused past its lease (GC, SIGSTOP, swap) from writing after another
 * holder took over; the fencing token can, if the storage checks it. Here
 * the "storage" is a Redis string guarded by a Lua script that accepts a
 * write only with a token at least as high as the highest it has seen.
 *
 * The program takes the lock with a short lease, pretends to stall past
 * it, lets a second client take the lock and write, and then tries its own
 * late write: the storage rejects it.
 *
 *   fencing MASTER   (host:port)
 */
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <rlock.h>
#include <stdio.h>
#include <unistd.h>

/* KEYS[1] data, KEYS[2] highest token; ARGV[1] token, ARGV[2] value. */
static const char fenced_set[] =
    "local t = tonumber(ARGV[1])\n"
    "if t < tonumber(redis.call('get', KEYS[2]) or '0') then return 0 end\n"
    "redis.call('set', KEYS[2], ARGV[1])\n"
    "redis.call('set', KEYS[1], ARGV[2])\n"
    "return 1\n";

static int store(redisContext *db, uint64_t token, const char *value) {
  redisReply *r = redisCommand(db, "EVAL %s 2 fenced:data fenced:token %" PRIu64 " %s",
                               fenced_set, token, value);
  int ok = r != NULL && r->type == REDIS_REPLY_INTEGER && r->integer == 1;
  if (r) freeReplyObject(r);
  return ok;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s HOST:PORT\n", argv[0]);
    return 2;
  }
  char host[64];
  int port;
  if (sscanf(argv[1], "%63[^:]:%d", host, &port) != 2) return 2;
  redisContext *db = redisConnect(host, port);
  if (db == NULL || db->err) return 1;
  redisReply *r = redisCommand(db, "DEL fenced:data fenced:token");
  if (r) freeReplyObject(r);

  rlock_options o;
  rlock_options_init(&o);
  const char *m[] = {argv[1]};
  o.masters = m;
  o.nmasters = 1;
  rlock_client *a, *b;
  rlock *la, *lb;
  if (rlock_client_open(&a, &o) || rlock_client_open(&b, &o) ||
      rlock_get(a, "fenced", &la) || rlock_get(b, "fenced", &lb))
    return 1;

  uint64_t ta = 0, tb = 0;
  if (rlock_trylock(la, 5000, 300) != RLOCK_OK) return 1; /* 300 ms lease */
  rlock_fencing_token(la, &ta);
  printf("A holds the lock with token %" PRIu64 ", then stalls...\n", ta);
  usleep(500 * 1000); /* past its lease: the lock expires */

  if (rlock_trylock(lb, 5000, 5000) != RLOCK_OK) return 1;
  rlock_fencing_token(lb, &tb);
  printf("B holds the lock with token %" PRIu64 " and writes: %s\n", tb,
         store(db, tb, "from-B") ? "accepted" : "rejected");
  rlock_unlock(lb);

  int late = store(db, ta, "from-A");
  printf("A wakes up and writes with token %" PRIu64 ": %s\n", ta,
         late ? "accepted (unsafe!)" : "rejected by the storage");
  printf("A's unlock: %s\n", rlock_strerror(rlock_unlock(la)));

  rlock_free(la);
  rlock_free(lb);
  rlock_client_close(a);
  rlock_client_close(b);
  redisFree(db);
  return late ? 1 : 0;
}
