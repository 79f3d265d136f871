/*
 * A chained hash table of held locks. It grows by doubling so that a
 * client holding a hundred thousand locks still finds one in O(1); each
 * record is one allocation holding its key and owner strings.
 */
#include "holds.h"

#include <stdlib.h>
#include <string.h>

static uint32_t fnv1a(const char *a, size_t alen, const char *b,
                      size_t blen) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < alen; i++) h = (h ^ (unsigned char)a[i]) * 16777619u;
  h = (h ^ 0xff) * 16777619u;
  for (size_t i = 0; i < blen; i++) h = (h ^ (unsigned char)b[i]) * 16777619u;
  return h;
}

int rl_holds_init(rl_holds *t) {
  t->nbuckets = 64;
  t->count = 0;
  t->buckets = calloc(t->nbuckets, sizeof *t->buckets);
  return t->buckets ? 0 : -1;
}

void rl_holds_free(rl_holds *t) {
  for (size_t i = 0; i < t->nbuckets; i++) {
    rl_hold *h = t->buckets[i];
    while (h) {
      rl_hold *next = h->hnext;
      free(h);
      h = next;
    }
  }
  free(t->buckets);
  t->buckets = NULL;
  t->count = 0;
}

rl_hold *rl_holds_find(rl_holds *t, const char *key, size_t keylen,
                       const char *owner, size_t ownerlen) {
  uint32_t hash = fnv1a(key, keylen, owner, ownerlen);
  for (rl_hold *h = t->buckets[hash & (t->nbuckets - 1)]; h; h = h->hnext)
    if (h->hash == hash && h->keylen == keylen && h->ownerlen == ownerlen &&
        memcmp(h->key, key, keylen) == 0 &&
        memcmp(h->owner, owner, ownerlen) == 0)
      return h;
  return NULL;
}

static void grow(rl_holds *t) {
  size_t n = t->nbuckets * 2;
  rl_hold **b = calloc(n, sizeof *b);
  if (b == NULL) return; /* longer chains, still correct */
  for (size_t i = 0; i < t->nbuckets; i++) {
    rl_hold *h = t->buckets[i];
    while (h) {
      rl_hold *next = h->hnext;
      h->hnext = b[h->hash & (n - 1)];
      b[h->hash & (n - 1)] = h;
      h = next;
    }
  }
  free(t->buckets);
  t->buckets = b;
  t->nbuckets = n;
}

rl_hold *rl_holds_add(rl_holds *t, const char *key, size_t keylen,
                      const char *owner, size_t ownerlen) {
  rl_hold *h = calloc(1, sizeof *h + keylen + ownerlen + 2);
  if (h == NULL) return NULL;
  h->key = (char *)(h + 1);
  memcpy(h->key, key, keylen);
  h->keylen = keylen;
  h->owner = h->key + keylen + 1;
  memcpy(h->owner, owner, ownerlen);
  h->ownerlen = ownerlen;
  h->hash = fnv1a(key, keylen, owner, ownerlen);
  if (t->count + 1 > t->nbuckets) grow(t);
  rl_hold **b = &t->buckets[h->hash & (t->nbuckets - 1)];
  h->hnext = *b;
  *b = h;
  t->count++;
  return h;
}

void rl_holds_remove(rl_holds *t, rl_hold *h) {
  rl_hold **p = &t->buckets[h->hash & (t->nbuckets - 1)];
  while (*p && *p != h) p = &(*p)->hnext;
  if (*p) {
    *p = h->hnext;
    t->count--;
  }
  free(h);
}
