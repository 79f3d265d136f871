/*
 * Fencing write-back (fence.c), shared by every kind of acquisition.
 * Loop thread only.
 */
#ifndef RL_FENCE_H
#define RL_FENCE_H

#include <stdint.h>

#include "client.h"
#include "round.h"

/* A fence_max round that raises the counter fence to the token (ops and
 * data as rl_round_new's), or NULL when out of memory. */
rl_round *rl_fence_round(rl_client *c, const rl_round_ops *ops, void *data,
                         const char *fence, size_t fencelen, uint64_t token);

/* Raises master i's fencing counter (the key fence) to the token,
 * expecting no answer: it lands after the acquire sent there before. */
void rl_fence_one(rl_client *c, const char *fence, size_t fencelen,
                  uint64_t token, int i);

/* A fence_max round's reading of a reply: an integer is a yes. */
int rl_fence_classify(rl_round *r, int i, const redisReply *rep);

/* What an attempt that won says of one fencing counter. */
typedef struct rl_fence_in {
  const char *fence; /* the counter's key */
  size_t fencelen;
  uint64_t token;    /* the token to hand out */
  int quorum;        /* the won round's */
  /* Per master: the token its grant reported, -1 where it granted none
   * (RL_MAX_MASTERS entries, c->nmasters used). */
  const int64_t *stored;
  uint64_t counted;  /* the masters whose grant counts for a majority */
  /* The masters whose reply is still to come: instead of a fence_max
   * now, catchup[i] gets catchup_bit, and the caller's late hook decides
   * from the late reply (NULL catchup: none such, every master told). */
  uint64_t later;
  uint8_t *catchup;
  uint8_t catchup_bit;
} rl_fence_in;

/*
 * The write-back of a first acquisition's token (fence.c says when which).
 * 0: the token may be handed out now (one master, or a majority of
 * servers stores it already; the others were told). 1: *out is a round
 * of fence_max over every master (ops, data), which the caller sends and
 * whose majority hands the token out. -1: out of memory.
 */
int rl_fence_write_back(rl_client *c, const rl_fence_in *in,
                        const rl_round_ops *ops, void *data, rl_round **out);

#endif
