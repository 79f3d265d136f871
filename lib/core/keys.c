/* The keys of a name (keys.h). */
#include "keys.h"

#include <string.h>

/* The suffixes are the ones the kinds give rl_lock_alloc (lib/lock's
 * kind.c, fair.c, rwlock.c; lib/family's sem.c, latch.c, which append
 * ":fence" and their own extra keys); test_unit checks that they agree. */
const rl_key_shape rl_key_shapes[RL_KEY_COUNT] = {
    [RL_KEY_LOCK] = {"", "hash", "lock", RL_KEY_HOLDS},
    [RL_KEY_LOCK_FENCE] = {":fence", "string", "lock", RL_KEY_FENCE},
    [RL_KEY_FAIR_QUEUE] = {":q", "zset", "fair", RL_KEY_WITH},
    [RL_KEY_FAIR_TIMES] = {":qt", "zset", "fair", RL_KEY_WITH},
    [RL_KEY_RW_WRITE] = {":w", "hash", "read-write", RL_KEY_HOLDS},
    [RL_KEY_RW_FENCE] = {":w:fence", "string", "read-write", RL_KEY_FENCE},
    [RL_KEY_RW_READ] = {":r", "zset", "read-write", RL_KEY_HOLDS},
    [RL_KEY_RW_READ_COUNT] = {":rc", "hash", "read-write", RL_KEY_WITH},
    [RL_KEY_RW_WAITING] = {":wq", "zset", "read-write", RL_KEY_WITH},
    [RL_KEY_SEM] = {":s", NULL, "semaphore", RL_KEY_OBJECT},
    [RL_KEY_SEM_FENCE] = {":s:fence", "string", "semaphore", RL_KEY_FENCE},
    [RL_KEY_SEM_LEASES] = {":s:t", NULL, "semaphore", RL_KEY_OBJECT},
    [RL_KEY_LATCH] = {":l", NULL, "latch", RL_KEY_OBJECT},
    [RL_KEY_LATCH_FENCE] = {":l:fence", "string", "latch", RL_KEY_FENCE},
    [RL_KEY_LATCH_DONE] = {":l:d", NULL, "latch", RL_KEY_OBJECT},
};

size_t rl_key_base(char *out, const char *prefix, size_t plen,
                   const char *name, size_t nlen) {
  memcpy(out, prefix, plen);
  out[plen] = '{';
  memcpy(out + plen + 1, name, nlen);
  out[plen + 1 + nlen] = '}';
  return plen + nlen + 2;
}

int rl_key_of(char *buf, size_t size, const char *prefix, const char *name,
              int id) {
  if (id < 0 || id >= RL_KEY_COUNT || rl_prefix_check(prefix) != 0 ||
      rl_name_check(name) != 0)
    return RLOCK_EINVAL;
  const char *suffix = rl_key_shapes[id].suffix;
  size_t plen = strlen(prefix), nlen = strlen(name), slen = strlen(suffix);
  if (plen + nlen + 2 + slen >= size) return RLOCK_EINVAL;
  size_t n = rl_key_base(buf, prefix, plen, name, nlen);
  memcpy(buf + n, suffix, slen + 1);
  return (int)(n + slen);
}

const rl_key_shape *rl_key_shape_of(const char *key, size_t len,
                                    const char *type) {
  const char *open = memchr(key, '{', len);
  if (open == NULL) return NULL;
  const char *close = memchr(open, '}', len - (size_t)(open - key));
  if (close == NULL || close == open + 1) return NULL; /* no name */
  const char *suffix = close + 1;
  size_t slen = len - (size_t)(suffix - key);
  for (int i = 0; i < RL_KEY_COUNT; i++) {
    const rl_key_shape *s = &rl_key_shapes[i];
    if (strlen(s->suffix) != slen || memcmp(s->suffix, suffix, slen) != 0)
      continue;
    if (type != NULL && s->type != NULL && strcmp(type, s->type) != 0)
      return NULL;
    return s;
  }
  return NULL;
}
