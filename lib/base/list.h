/*
 * Intrusive doubly-linked lists. Every queue rlock keeps (requests waiting
 * for the loop, commands waiting for a reply, operations in flight) embeds
 * one of these nodes in its element, so that adding and removing cost no
 * allocation and removal needs no search.
 */
#ifndef RL_LIST_H
#define RL_LIST_H

#include <stddef.h>

typedef struct rl_list {
  struct rl_list *next, *prev;
} rl_list;

#define rl_container_of(ptr, type, member) \
  ((type *)((char *)(ptr) - offsetof(type, member)))

static inline void rl_list_init(rl_list *h) { h->next = h->prev = h; }
static inline int rl_list_empty(const rl_list *h) { return h->next == h; }
/* A node that is in no list points at itself (after rl_list_init). */
static inline int rl_list_linked(const rl_list *n) { return n->next != n; }

static inline void rl_list_push_back(rl_list *h, rl_list *n) {
  n->prev = h->prev;
  n->next = h;
  h->prev->next = n;
  h->prev = n;
}

static inline void rl_list_remove(rl_list *n) {
  n->prev->next = n->next;
  n->next->prev = n->prev;
  n->next = n->prev = n;
}

static inline rl_list *rl_list_pop_front(rl_list *h) {
  rl_list *n = h->next;
  if (n == h) return NULL;
  rl_list_remove(n);
  return n;
}

/* Moves every element of src to the end of dst; src ends empty. */
static inline void rl_list_splice(rl_list *dst, rl_list *src) {
  if (rl_list_empty(src)) return;
  src->next->prev = dst->prev;
  dst->prev->next = src->next;
  src->prev->next = dst;
  dst->prev = src->prev;
  rl_list_init(src);
}

#endif
