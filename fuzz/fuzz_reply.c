/*
 * libFuzzer target: rlock's handling of replies from Redis. The input is
 * parsed by hiredis's own reader, as a reply off the wire would be, and
 * every reply it yields is handed to every round's reply handler (and to
 * the late-reply hook, which may send an undo) as if a master had sent it:
 * well-formed replies of every script, wrong types, nested arrays, errors
 * and garbage. The handlers must classify, never crash or leak.
 */
#include <hiredis/hiredis.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "kind.h"
#include "ops.h"
#include "round.h"
#include "scripts.h"

static rl_client *fake;

static void make_fake(void) {
  fake = calloc(1, sizeof *fake);
  rlock_options_init(&fake->opts);
  fake->nmasters = 3;
  /* Masters never started: every send fails. */
  fake->masters = calloc(3, sizeof *fake->masters);
  static rl_master_url url;
  rl_master_url_parse("127.0.0.1:1", &url, NULL);
  for (int i = 0; i < 3; i++)
    fake->masters[i] = rl_master_new(&url, uv_default_loop(), &fake->conn_cfg,
                                     i);
  uv_mutex_init(&fake->errmu);
  rl_holds_init(&fake->holds, "");
}

typedef struct {
  const rl_round_ops *ops;
  int script;
  int renew;
} target;

static void exercise(const redisReply *rep) {
  static const target ts[] = {
      {&rl_acquire_ops, RL_SCRIPT_ACQUIRE, 0}, {&rl_fence_ops, RL_SCRIPT_FENCE_MAX, 0},
      {&rl_unlock_ops, RL_SCRIPT_UNLOCK, 0},   {&rl_force_ops, RL_SCRIPT_FORCE, 0},
      {&rl_release_ops, RL_SCRIPT_RELEASE, 0}, {&rl_bool_ops, -1, 0},
      {&rl_pttl_ops, -1, 0},                   {&rl_extend_ops, RL_SCRIPT_RENEW, 0},
      {&rl_renew_ops, RL_SCRIPT_RENEW, 1},
  };
  /* The acquire layout, which the undo path reads back; the others only
   * need some arguments. */
  const char *acq[] = {NULL, "2", "rlock:{f}", "rlock:{f}:fence", "1000", "id:1", "86400000"};
  const char *ren[] = {NULL, "1", "rlock:{f}", "1000", "id:1"};
  const char *oth[] = {"EXISTS", "rlock:{f}"};
  for (size_t t = 0; t < sizeof ts / sizeof ts[0]; t++) {
    const char **argv = ts[t].renew ? ren : ts[t].script == RL_SCRIPT_ACQUIRE ? acq : oth;
    int argc = ts[t].renew ? 5 : ts[t].script == RL_SCRIPT_ACQUIRE ? 7 : 2;
    int script = argv == oth ? -1 : ts[t].script;
    size_t len[8];
    for (int i = 0; i < argc; i++) len[i] = argv[i] ? strlen(argv[i]) : 0;
    void *data = ts[t].renew ? rl_renew_batch_new(1) : NULL;
    rl_round *r = rl_round_new(fake, ts[t].ops, data, script, argc, argv, len);
    if (r == NULL) {
      free(data);
      continue;
    }
    int vote = ts[t].ops->classify(r, 0, rep);
    if (vote != RL_VOTE_YES && vote != RL_VOTE_NO && vote != RL_VOTE_FAIL) abort();
    if (ts[t].ops->late) {
      ts[t].ops->late(r, 1, rep); /* before the decision */
      r->decided = 1;
      ts[t].ops->late(r, 2, rep); /* after: a late grant is undone */
    }
    rl_round_discard(r);
  }
}

/* hiredis 0.14.1's reader allocates an array's declared element count up
 * front, so "*300000000" alone asks it for gigabytes: that is hiredis's
 * limit (later versions cap it), not rlock's, and such inputs are skipped.
 * rlock's own replies have at most 10,000 elements (a renewal batch). */
static int declares_huge_array(const uint8_t *d, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (d[i] != '*' && d[i] != '%' && d[i] != '~') continue;
    unsigned long long v = 0;
    size_t j = i + 1;
    while (j < n && d[j] >= '0' && d[j] <= '9' && v < 1000000)
      v = v * 10 + (d[j++] - '0');
    if (v > 100000) return 1;
  }
  return 0;
}

/* The lock family's acquire replies (kind.h): each kind's reader must
 * fill a slot or refuse, never crash. */
static void exercise_kinds(const redisReply *rep) {
  const rl_kind *kinds[] = {&rl_kind_lock, &rl_kind_fair, &rl_kind_read,
                            &rl_kind_write};
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
    rl_round_slot sl = {0};
    int g = kinds[k]->parse_grant(rep, &sl);
    if (g < -1 || g > 1) abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (fake == NULL) make_fake();
  if (declares_huge_array(data, size)) return 0;
  redisReader *rd = redisReaderCreate();
  if (rd == NULL) return 0;
  redisReaderFeed(rd, (const char *)data, size);
  void *reply = NULL;
  for (int k = 0; k < 8; k++) {
    if (redisReaderGetReply(rd, &reply) != REDIS_OK || reply == NULL) break;
    exercise(reply);
    exercise_kinds(reply);
    freeReplyObject(reply);
    reply = NULL;
  }
  redisReaderFree(rd);
  return 0;
}
