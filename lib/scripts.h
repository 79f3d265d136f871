/*
 * The Lua scripts rlock runs on each master, and their EVALSHA names. Each
 * script is atomic on one master; a quorum round runs the same script on
 * every master. Key and argument layouts are documented beside each body
 * in scripts.c.
 */
#ifndef RL_SCRIPTS_H
#define RL_SCRIPTS_H

typedef enum rl_script_id {
  RL_SCRIPT_ACQUIRE = 0,
  RL_SCRIPT_UNLOCK,
  RL_SCRIPT_FORCE,
  RL_SCRIPT_FENCE_MAX,
  RL_SCRIPT_RENEW,
  RL_SCRIPT_RELEASE,
  RL_SCRIPT_UNDO,
  RL_SCRIPT_RECORD,
  RL_SCRIPT_COUNT
} rl_script_id;

/* Replies of the acquire script: {1, token, count, existed} or
 * {0, holder_pttl}; a holder_pttl of RL_ACQUIRE_LATE means the request's
 * deadline had passed on the master (nothing was granted). */
#define RL_ACQUIRE_LATE (-3)
/* Replies of the unlock script. */
enum {
  RL_UNLOCK_NOT_OWNER = 0,
  RL_UNLOCK_RELEASED = 1,
  RL_UNLOCK_DECREMENTED = 2
};

/* How long a fencing counter outlives the last acquisition, in ms (also
 * written into the acquire script). */
#define RL_FENCE_TTL_MS 86400000

/* How long the restart records outlive the last client that wrote them. */
#define RL_RECORDS_TTL_MS (7 * 86400000LL)

/* The form of a script that cluster nodes run: the one that publishes
 * with SPUBLISH (a shard channel) where the script publishes; the script
 * itself when it publishes nothing. */
rl_script_id rl_script_shard(rl_script_id id);

const char *rl_script_body(rl_script_id id);
/* 40 hex digits, computed on first use. */
const char *rl_script_sha(rl_script_id id);

#endif
