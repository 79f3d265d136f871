/*
 * The Lua scripts of the lock family (fair lock, read-write lock,
 * semaphore with leased permits, count-down latch, several locks at once),
 * and their EVALSHA names, by id. Each script is atomic on one master; a
 * quorum round runs the same script on every master. The key layouts and
 * the argument and reply layouts are documented beside each body, in one
 * file per kind (fair_scripts.c, rw_scripts.c, sem_scripts.c,
 * latch_scripts.c, multi_scripts.c, lease_scripts.c, election_scripts.c); docs/architecture.md
 * describes the data model of each kind.
 *
 * These ids number the family's scripts; scripts.h numbers them after the
 * reentrant lock's, in the one table that loads every script.
 */
#ifndef RL_FAMILY_SCRIPTS_H
#define RL_FAMILY_SCRIPTS_H

typedef enum rl_fam_script_id {
  /* Fair lock (fair_scripts.c). Keys: hash, fence, queue, alive. */
  RL_FAM_FAIR_ACQUIRE = 0,
  RL_FAM_FAIR_UNLOCK,
  RL_FAM_FAIR_FORCE,
  RL_FAM_FAIR_LEAVE,
  RL_FAM_FAIR_UNDO,
  /* Read-write lock (rw_scripts.c). Keys: writer, readers, read counts,
   * waiting writers, fence. */
  RL_FAM_RW_READ_ACQUIRE,
  RL_FAM_RW_READ_UNLOCK, /* also the read side's undo */
  RL_FAM_RW_WRITE_ACQUIRE,
  RL_FAM_RW_WRITE_UNLOCK,
  RL_FAM_RW_WRITE_UNDO,
  RL_FAM_RW_WRITE_LEAVE,
  RL_FAM_RW_FORCE,
  RL_FAM_RW_QUERY,
  /* Semaphore (sem_scripts.c). Keys: slots, expiries, fence. */
  RL_FAM_SEM_ACQUIRE,
  RL_FAM_SEM_RELEASE,
  RL_FAM_SEM_DROP,       /* every permit of an owner but those listed */
  RL_FAM_SEM_AVAILABLE,
  RL_FAM_SEM_FORCE,
  /* Count-down latch (latch_scripts.c). Keys: latch, count-down ids. */
  RL_FAM_LATCH_SET,
  RL_FAM_LATCH_COUNT_DOWN,
  RL_FAM_LATCH_COUNT,
  RL_FAM_LATCH_FORCE,
  /* Several reentrant locks at once (multi_scripts.c). The _XSLOT twins
   * carry the Redis 7.0 shebang that lets one script touch keys of
   * several Cluster slots held by one node. */
  RL_FAM_MULTI_ACQUIRE,
  RL_FAM_MULTI_UNLOCK,
  RL_FAM_MULTI_UNDO,
  RL_FAM_MULTI_ACQUIRE_XSLOT,
  RL_FAM_MULTI_UNLOCK_XSLOT,
  RL_FAM_MULTI_UNDO_XSLOT,
  /* Shared by several kinds (lease_scripts.c). */
  RL_FAM_LEASE_RENEW,  /* read holds and semaphore permits */
  RL_FAM_WAITER_TOUCH, /* fair-lock waiters and waiting writers */
  /* Elections (election_scripts.c). Keys: the fair lock's hash (and its
   * queue, for status). */
  RL_FAM_ELECT_PROCLAIM,
  RL_FAM_ELECT_READ,
  RL_FAM_ELECT_NOTIFY,
  RL_FAM_ELECT_STATUS,
  RL_FAM_SCRIPT_COUNT
} rl_fam_script_id;

/*
 * The first element of every acquire-type reply (fair, read, write,
 * semaphore, several locks), as the scripts send it: values of the wire
 * protocol, not result codes. The engines decode them into public codes
 * (LATE into a failed vote, DEADLK into RLOCK_EDEADLK, MISMATCH into
 * RLOCK_ECONFLICT, BADARG into RLOCK_EINVAL). A refusal other than
 * RL_FAM_REPLY_BUSY changes nothing on the master.
 */
enum {
  RL_FAM_REPLY_GRANTED = 1,   /* {1, token, count, ...}: see each kind */
  RL_FAM_REPLY_BUSY = 0,      /* {0, wait_ms, ...}: try again later */
  RL_FAM_REPLY_LATE = -1,     /* {-1, now_us}: the deadline had passed */
  RL_FAM_REPLY_DEADLK = -2,   /* {-2}: a read holder asked to write */
  RL_FAM_REPLY_MISMATCH = -3, /* {-3, limit}: the semaphore has another
                                 limit */
  RL_FAM_REPLY_BADARG = -4    /* {-4, ...}: an argument no master could
                                 grant */
};

/* Replies of the unlock-type scripts (fair, read, write, several locks),
 * the same as the reentrant lock's. */
enum {
  RL_FAM_NOT_OWNER = 0,
  RL_FAM_RELEASED = 1,
  RL_FAM_DECREMENTED = 2
};

/* The first element of the latch scripts' replies. */
enum {
  RL_LATCH_MISSING = 0,  /* count_down and count: no such latch */
  RL_LATCH_COUNTING = 1, /* count_down: counted; count: above zero */
  RL_LATCH_OPENED = 2,   /* count_down: this call reached zero;
                            count: at zero (open) */
  RL_LATCH_DONE = 3,     /* count_down: it was already at zero */
  RL_LATCH_REPEATED = 4  /* count_down: this id was already counted */
};

/* The semaphore's limit lives in its slot hash under this field, which
 * can be neither a slot number nor an owner. */
#define RL_SEM_LIMIT_FIELD "#limit"

/* An election's leader record: three fields of its fair lock's hash
 * (election_scripts.c), the leader's token, value and owner field. A
 * field of a lock's hash that begins with '#' is such a record, never an
 * owner (an owner field begins with the client's hex id): whatever lists
 * a lock's holders leaves them out. */
#define RL_ELECT_TOKEN_FIELD "#t"
#define RL_ELECT_VALUE_FIELD "#v"
#define RL_ELECT_OWNER_FIELD "#o"
#define RL_RECORD_FIELD_MARK '#'

/* The first line of a script that may touch keys of several Cluster
 * slots on one node (Redis 7.0 and later). */
#define RL_LUA_XSLOT_SHEBANG "#!lua flags=allow-cross-slot-keys\n"

const char *rl_fam_script_body(rl_fam_script_id id);
/* 40 hex digits, computed on first use. */
const char *rl_fam_script_sha(rl_fam_script_id id);
/* A short name for logs and tests, e.g. "fair_acquire". */
const char *rl_fam_script_name(rl_fam_script_id id);

#endif
