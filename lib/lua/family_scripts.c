/*
 * The family's script table: bodies by id, their SHA1 names (computed once,
 * on first use, from any thread) and short names for logs and tests. The
 * bodies live with their kind, one file each; this file only lists them,
 * so that adding a script is one enum entry in family_scripts.h and one
 * row here.
 */
#include "family_scripts.h"

#include <pthread.h>
#include <string.h>

#include "family_lua.h"
#include "sha1.h"

typedef struct fam_script {
  const char *name;
  const char *body;
} fam_script;

static const fam_script table[RL_FAM_SCRIPT_COUNT] = {
    [RL_FAM_FAIR_ACQUIRE] = {"fair_acquire", rl_fam_fair_acquire_lua},
    [RL_FAM_FAIR_UNLOCK] = {"fair_unlock", rl_fam_fair_unlock_lua},
    [RL_FAM_FAIR_FORCE] = {"fair_force", rl_fam_fair_force_lua},
    [RL_FAM_FAIR_LEAVE] = {"fair_leave", rl_fam_fair_leave_lua},
    [RL_FAM_FAIR_UNDO] = {"fair_undo", rl_fam_fair_undo_lua},
    [RL_FAM_RW_READ_ACQUIRE] = {"rw_read_acquire", rl_fam_rw_read_acquire_lua},
    [RL_FAM_RW_READ_UNLOCK] = {"rw_read_unlock", rl_fam_rw_read_unlock_lua},
    [RL_FAM_RW_WRITE_ACQUIRE] = {"rw_write_acquire",
                                 rl_fam_rw_write_acquire_lua},
    [RL_FAM_RW_WRITE_UNLOCK] = {"rw_write_unlock", rl_fam_rw_write_unlock_lua},
    [RL_FAM_RW_WRITE_UNDO] = {"rw_write_undo", rl_fam_rw_write_undo_lua},
    [RL_FAM_RW_WRITE_LEAVE] = {"rw_write_leave", rl_fam_rw_write_leave_lua},
    [RL_FAM_RW_FORCE] = {"rw_force", rl_fam_rw_force_lua},
    [RL_FAM_RW_QUERY] = {"rw_query", rl_fam_rw_query_lua},
    [RL_FAM_SEM_ACQUIRE] = {"sem_acquire", rl_fam_sem_acquire_lua},
    [RL_FAM_SEM_RELEASE] = {"sem_release", rl_fam_sem_release_lua},
    [RL_FAM_SEM_DROP] = {"sem_drop", rl_fam_sem_drop_lua},
    [RL_FAM_SEM_AVAILABLE] = {"sem_available", rl_fam_sem_available_lua},
    [RL_FAM_SEM_FORCE] = {"sem_force", rl_fam_sem_force_lua},
    [RL_FAM_LATCH_SET] = {"latch_set", rl_fam_latch_set_lua},
    [RL_FAM_LATCH_COUNT_DOWN] = {"latch_count_down",
                                 rl_fam_latch_count_down_lua},
    [RL_FAM_LATCH_COUNT] = {"latch_count", rl_fam_latch_count_lua},
    [RL_FAM_LATCH_FORCE] = {"latch_force", rl_fam_latch_force_lua},
    [RL_FAM_MULTI_ACQUIRE] = {"multi_acquire", rl_fam_multi_acquire_lua},
    [RL_FAM_MULTI_UNLOCK] = {"multi_unlock", rl_fam_multi_unlock_lua},
    [RL_FAM_MULTI_UNDO] = {"multi_undo", rl_fam_multi_undo_lua},
    [RL_FAM_MULTI_ACQUIRE_XSLOT] = {"multi_acquire_xslot",
                                    rl_fam_multi_acquire_xslot_lua},
    [RL_FAM_MULTI_UNLOCK_XSLOT] = {"multi_unlock_xslot",
                                   rl_fam_multi_unlock_xslot_lua},
    [RL_FAM_MULTI_UNDO_XSLOT] = {"multi_undo_xslot",
                                 rl_fam_multi_undo_xslot_lua},
    [RL_FAM_LEASE_RENEW] = {"lease_renew", rl_fam_lease_renew_lua},
    [RL_FAM_WAITER_TOUCH] = {"waiter_touch", rl_fam_waiter_touch_lua},
    [RL_FAM_ELECT_PROCLAIM] = {"elect_proclaim", rl_fam_elect_proclaim_lua},
    [RL_FAM_ELECT_READ] = {"elect_read", rl_fam_elect_read_lua},
    [RL_FAM_ELECT_NOTIFY] = {"elect_notify", rl_fam_elect_notify_lua},
    [RL_FAM_ELECT_STATUS] = {"elect_status", rl_fam_elect_status_lua},
};

static char shas[RL_FAM_SCRIPT_COUNT][41];
static pthread_once_t shas_once = PTHREAD_ONCE_INIT;

static void compute_shas(void) {
  for (int i = 0; i < RL_FAM_SCRIPT_COUNT; i++)
    rl_sha1_hex(table[i].body, strlen(table[i].body), shas[i]);
}

const char *rl_fam_script_body(rl_fam_script_id id) { return table[id].body; }

const char *rl_fam_script_name(rl_fam_script_id id) { return table[id].name; }

const char *rl_fam_script_sha(rl_fam_script_id id) {
  pthread_once(&shas_once, compute_shas);
  return shas[id];
}
