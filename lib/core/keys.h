/*
 * The Redis keys of a name: PREFIX{NAME}SUFFIX, one suffix per key a kind
 * keeps (rlock.h's lock family). The braces make NAME the hash tag, so
 * that every key of a name lives in one Cluster slot; neither a prefix nor
 * a name may hold a brace (rl_prefix_check, rl_name_check), so the first
 * '{' of a key opens its name and the next '}' closes it.
 *
 * The table of shapes says, for each key the library writes, its suffix,
 * its Redis type, the kind it belongs to and what it is for; programs that
 * read keys (the rlock tool's status and scan) find them here rather than
 * spelling them again.
 */
#ifndef RL_KEYS_H
#define RL_KEYS_H

#include <stddef.h>

#include "options.h"

/* The keys of a name, an index into rl_key_shapes. */
enum {
  RL_KEY_LOCK = 0,     /* the lock's hash (and the fair lock's) */
  RL_KEY_LOCK_FENCE,   /* its fencing counter */
  RL_KEY_FAIR_QUEUE,   /* the fair lock's queue: owner -> ticket */
  RL_KEY_FAIR_TIMES,   /* its waiters' liveness: owner -> ms */
  RL_KEY_RW_WRITE,     /* the read-write lock's write hold */
  RL_KEY_RW_FENCE,     /* its fencing counter */
  RL_KEY_RW_READ,      /* its read holds: owner -> lease end */
  RL_KEY_RW_READ_COUNT, /* the read holds' counts */
  RL_KEY_RW_WAITING,   /* the waiting writers: owner -> ms */
  RL_KEY_SEM,          /* the semaphore's slots and limit */
  RL_KEY_SEM_FENCE,    /* its fencing counter */
  RL_KEY_SEM_LEASES,   /* its permits' lease ends */
  RL_KEY_LATCH,        /* the latch's count and generation */
  RL_KEY_LATCH_FENCE,  /* a latch handle's fencing key (unused) */
  RL_KEY_LATCH_DONE,   /* the ids that counted down */
  RL_KEY_COUNT
};

/* What a key is for. */
enum {
  RL_KEY_HOLDS = 1, /* holds of a lock: a lock of its own, for a count */
  RL_KEY_WITH,      /* goes with a lock (a queue, counts), not one */
  RL_KEY_OBJECT,    /* a semaphore's or a latch's */
  RL_KEY_FENCE      /* a fencing counter */
};

typedef struct rl_key_shape {
  const char *suffix; /* after PREFIX{NAME} */
  const char *type;   /* as TYPE names it; NULL: any */
  const char *kind;   /* "lock", "fair", "read-write", "semaphore", "latch" */
  int role;           /* RL_KEY_HOLDS ... */
} rl_key_shape;

extern const rl_key_shape rl_key_shapes[RL_KEY_COUNT];

/* The longest key of a valid prefix and name, with its NUL. */
#define RL_KEY_MAX (RL_PREFIX_MAX + RL_NAME_MAX + 2 + 16)

/* Writes PREFIX{NAME} to out, which has room for it (plen + nlen + 2
 * bytes; no NUL). Returns the bytes written. */
size_t rl_key_base(char *out, const char *prefix, size_t plen,
                   const char *name, size_t nlen);

/* The key id of name (NUL-terminated) under prefix, into buf. Its length,
 * or RLOCK_EINVAL for a bad prefix, name or id, or a buf too small. */
int rl_key_of(char *buf, size_t size, const char *prefix, const char *name,
              int id);

/* The shape of key (len bytes, binary) by its suffix, and by its type
 * unless type is NULL: NULL when it is not a key of the library. */
const rl_key_shape *rl_key_shape_of(const char *key, size_t len,
                                    const char *type);

#endif
