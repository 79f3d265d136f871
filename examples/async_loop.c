/*
 * The async API on the caller's own libuv loop: no thread is created; every
 * callback runs inside uv_run. Ten tasks, each with its own owner id, take
 * the same lock in turn (waiting for it with pub/sub), hold it for a timer's
 * length, and release it; then the client is closed and uv_run returns.
 *
 *   async_loop MASTER [MASTER...]
 */
#include <inttypes.h>
#include <rlock.h>
#include <stdio.h>
#include <uv.h>

#define TASKS 10

typedef struct task {
  uint64_t owner;
  rlock *lock;
  uv_timer_t hold;
} task;

static rlock_client *client;
static int finished;

static void on_unlocked(rlock *lock, int status, void *arg) {
  task *t = arg;
  (void)lock;
  printf("task %" PRIu64 " released: %s\n", t->owner, rlock_strerror(status));
  uv_close((uv_handle_t *)&t->hold, NULL);
  if (++finished == TASKS) rlock_client_close(client); /* on the loop */
}

static void on_held_enough(uv_timer_t *timer) {
  task *t = timer->data;
  rlock_unlock_async(t->lock, t->owner, on_unlocked, t);
}

static void on_locked(rlock *lock, int status, void *arg) {
  task *t = arg;
  if (status != RLOCK_OK) {
    printf("task %" PRIu64 ": %s\n", t->owner, rlock_strerror(status));
    uv_close((uv_handle_t *)&t->hold, NULL);
    if (++finished == TASKS) rlock_client_close(client);
    return;
  }
  uint64_t token = 0;
  rlock_owner_fencing_token(lock, t->owner, &token); /* on the loop: at once */
  printf("task %" PRIu64 " holds the lock, token %" PRIu64 "\n", t->owner,
         token);
  uv_timer_start(&t->hold, on_held_enough, 20, 0);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s MASTER [MASTER...]\n", argv[0]);
    return 2;
  }
  uv_loop_t loop;
  uv_loop_init(&loop);
  rlock_options o;
  rlock_options_init(&o);
  o.masters = (const char *const *)&argv[1];
  o.nmasters = (size_t)(argc - 1);
  o.loop = &loop;
  int rc = rlock_client_open(&client, &o);
  if (rc != 0) {
    fprintf(stderr, "async_loop: %s\n", rlock_strerror(rc));
    return 1;
  }
  static task tasks[TASKS];
  for (int i = 0; i < TASKS; i++) {
    tasks[i].owner = (uint64_t)i + 1;
    rlock_get(client, "async-example", &tasks[i].lock);
    uv_timer_init(&loop, &tasks[i].hold);
    tasks[i].hold.data = &tasks[i];
    rlock_lock_async(tasks[i].lock, tasks[i].owner, 10000, 5000, on_locked,
                     &tasks[i]);
  }
  uv_run(&loop, UV_RUN_DEFAULT); /* returns once the client has closed */
  for (int i = 0; i < TASKS; i++) rlock_free(tasks[i].lock);
  uv_loop_close(&loop);
  return finished == TASKS ? 0 : 1;
}
