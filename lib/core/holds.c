/*
 * A chained hash table of held locks. It grows by doubling so that a
 * client holding a million locks still finds one in O(1). A record is one
 * small allocation: the key is the handle's, and the owner is kept as
 * numbers, so a lookup hashes the key a word at a time and compares two
 * integers instead of hashing and comparing some 55 bytes of text (the
 * watchdog looks up every lock it renews, a hundred per reply).
 */
#include "holds.h"

#include <stdlib.h>
#include <string.h>

#define M1 0x9e3779b97f4a7c15ull
#define M2 0xbf58476d1ce4e5b9ull

static uint64_t mix(uint64_t h) {
  h ^= h >> 31;
  h *= M2;
  h ^= h >> 29;
  return h;
}

static uint32_t hash_of(const char *key, size_t keylen, uint64_t owner_id,
                        int is_thread) {
  uint64_t h = (uint64_t)keylen * M1;
  size_t i = 0;
  for (; i + 8 <= keylen; i += 8) {
    uint64_t w;
    memcpy(&w, key + i, 8);
    h = (h ^ w) * M1;
    h ^= h >> 32;
  }
  uint64_t tail = 0;
  memcpy(&tail, key + i, keylen - i);
  h = (h ^ tail) * M1;
  h ^= mix(owner_id * 2 + (is_thread ? 1 : 0));
  return (uint32_t)mix(h);
}

/* Parses "<id>:<n>" or "<id>:a<n>", n in the canonical decimal form
 * rl_owner_format writes (no sign, no leading zero): anything else is no
 * owner of this client. 0 or -1. */
static int parse_owner(const rl_holds *t, const char *o, size_t len,
                       uint64_t *id, int *is_thread) {
  size_t idlen = t->idlen;
  if (len < idlen + 2 || memcmp(o, t->id, idlen) != 0 || o[idlen] != ':')
    return -1;
  const char *p = o + idlen + 1, *end = o + len;
  *is_thread = *p != 'a';
  if (!*is_thread) p++;
  if (p == end || end - p > 20 || (*p == '0' && end - p > 1)) return -1;
  uint64_t v = 0;
  for (; p < end; p++) {
    if (*p < '0' || *p > '9') return -1;
    uint64_t d = (uint64_t)(*p - '0');
    if (v > (UINT64_MAX - d) / 10) return -1;
    v = v * 10 + d;
  }
  *id = v;
  return 0;
}

/* The owner field after an id of idlen characters. */
static size_t owner_format(const char *id, size_t idlen, uint64_t owner_id,
                           int owner_is_thread, char *buf) {
  size_t n = idlen;
  memcpy(buf, id, n);
  buf[n++] = ':';
  if (!owner_is_thread) buf[n++] = 'a';
  char tmp[20];
  int d = 0;
  do {
    tmp[d++] = (char)('0' + owner_id % 10);
    owner_id /= 10;
  } while (owner_id != 0);
  while (d > 0) buf[n++] = tmp[--d];
  buf[n] = '\0';
  return n;
}

size_t rl_owner_format(const char *id, uint64_t owner_id, int owner_is_thread,
                       char *buf) {
  return owner_format(id, strlen(id), owner_id, owner_is_thread, buf);
}

size_t rl_holds_owner(const rl_holds *t, const rl_hold *h, char *buf) {
  return owner_format(t->id, t->idlen, h->owner_id, h->owner_is_thread, buf);
}

int rl_holds_init(rl_holds *t, const char *id) {
  size_t n = strnlen(id, sizeof t->id - 1);
  memcpy(t->id, id, n);
  t->id[n] = '\0';
  t->idlen = n;
  t->nbuckets = 64;
  t->count = 0;
  t->buckets = calloc(t->nbuckets, sizeof *t->buckets);
  return t->buckets ? 0 : -1;
}

void rl_holds_free(rl_holds *t) {
  for (size_t i = 0; i < t->nbuckets && t->buckets != NULL; i++) {
    rl_hold *h = t->buckets[i];
    while (h) {
      rl_hold *next = h->hnext;
      if (h->pins > 0)
        h->removed = 1; /* its batch frees it */
      else
        free(h);
      h = next;
    }
  }
  free(t->buckets);
  t->buckets = NULL;
  t->count = 0;
}

static uint32_t hash_rec(const rl_hold *h) {
  return hash_of(h->key, h->keylen, h->owner_id, h->owner_is_thread);
}

rl_hold *rl_holds_find_id(rl_holds *t, const char *key, size_t keylen,
                          uint64_t owner_id, int owner_is_thread) {
  uint32_t hash = hash_of(key, keylen, owner_id, owner_is_thread);
  for (rl_hold *h = t->buckets[hash & (t->nbuckets - 1)]; h; h = h->hnext)
    if (h->owner_id == owner_id &&
        h->owner_is_thread == (owner_is_thread != 0) && h->keylen == keylen &&
        memcmp(h->key, key, keylen) == 0)
      return h;
  return NULL;
}

rl_hold *rl_holds_find(rl_holds *t, const char *key, size_t keylen,
                       const char *owner, size_t ownerlen) {
  uint64_t id;
  int is_thread;
  if (parse_owner(t, owner, ownerlen, &id, &is_thread) != 0) return NULL;
  return rl_holds_find_id(t, key, keylen, id, is_thread);
}

static void grow(rl_holds *t) {
  size_t n = t->nbuckets * 2;
  rl_hold **b = calloc(n, sizeof *b);
  if (b == NULL) return; /* longer chains, still correct */
  for (size_t i = 0; i < t->nbuckets; i++) {
    rl_hold *h = t->buckets[i];
    while (h) {
      rl_hold *next = h->hnext;
      uint32_t hash = hash_rec(h);
      h->hnext = b[hash & (n - 1)];
      b[hash & (n - 1)] = h;
      h = next;
    }
  }
  free(t->buckets);
  t->buckets = b;
  t->nbuckets = n;
}

rl_hold *rl_holds_add(rl_holds *t, const char *key, size_t keylen,
                      const char *owner, size_t ownerlen) {
  uint64_t id;
  int is_thread;
  if (keylen > RL_HOLDS_KEY_MAX ||
      parse_owner(t, owner, ownerlen, &id, &is_thread) != 0)
    return NULL;
  /* calloc, not rl_zalloc: from the thread's cache a hold took the place
   * of a freed command or reply, scattered among them. With a million
   * held (bench_watchdog) that cost 17-21 bytes of RSS per hold and made
   * the watchdog's renewal calls 30-50% slower (62-75 us per call of 98
   * locks against 38-48), its walk over the holds missing the cache. */
  rl_hold *h = calloc(1, sizeof *h);
  if (h == NULL) return NULL;
  h->key = key;
  h->keylen = (uint16_t)keylen;
  h->owner_id = id;
  h->owner_is_thread = (uint16_t)(is_thread != 0);
  if (t->count + 1 > t->nbuckets) grow(t);
  rl_hold **b = &t->buckets[hash_rec(h) & (t->nbuckets - 1)];
  h->hnext = *b;
  *b = h;
  t->count++;
  return h;
}

void rl_holds_remove(rl_holds *t, rl_hold *h) {
  /* One marked removed is out of the table already, and its key may be
   * gone: it is not hashed again. */
  rl_hold **p =
      h->removed ? NULL : &t->buckets[hash_rec(h) & (t->nbuckets - 1)];
  while (p && *p && *p != h) p = &(*p)->hnext;
  if (p && *p) {
    *p = h->hnext;
    t->count--;
  }
  h->hnext = NULL;
  if (h->pins > 0)
    h->removed = 1;
  else
    free(h);
}

void rl_holds_unpin(rl_hold *h) {
  if (--h->pins == 0 && h->removed) free(h);
}
