/*
 * A program outside the tree: built by test/install_check.sh against the
 * installed library with `pkg-config --cflags --libs rlock`, it uses every
 * name of the public contract, so a missing export, a header that needs
 * private headers, or a broken rlock.pc fails the build or the run.
 *
 *   contract MASTER
 */
#define _POSIX_C_SOURCE 200809L
#include <rlock.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static int failures;
#define EXPECT(c)                                              \
  do {                                                         \
    if (!(c)) {                                                \
      fprintf(stderr, "contract: %s:%d: %s\n", __FILE__, __LINE__, #c); \
      failures++;                                              \
    }                                                          \
  } while (0)

static int async_status = 99, async_calls;
static void on_done(rlock *lock, int status, void *arg) {
  (void)lock;
  (void)arg;
  async_status = status;
  async_calls++;
}
static void on_lost(rlock *lock, uint64_t owner, int is_thread, void *arg) {
  (void)lock; (void)owner; (void)is_thread; (void)arg;
}

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  EXPECT(RLOCK_WATCHDOG == -1 && RLOCK_WAIT_FOREVER == -1 && RLOCK_OK == 0);
  int codes[] = {RLOCK_ETIMEDOUT, RLOCK_ENOTOWNER, RLOCK_ENOQUORUM,
                 RLOCK_ELOST, RLOCK_EINVAL, RLOCK_ENOMEM, RLOCK_ECLOSED,
                 RLOCK_EREDIS, RLOCK_EDEADLK, RLOCK_ELIMIT,
                 RLOCK_ECANCELED, RLOCK_ENOTFOUND};
  for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
    EXPECT(codes[i] < 0 && rlock_strerror(codes[i]) != NULL);
  rlock_options o;
  rlock_options_init(&o);
  const char *masters[] = {argv[1]};
  o.masters = masters;
  o.nmasters = 1;
  o.loop = NULL;
  o.watchdog_timeout_ms = 30000;
  o.master_timeout_ms = 500;
  o.drift_factor = 0.01;
  o.retry_delay_ms = 50;
  o.retry_jitter_ms = 50;
  o.key_prefix = "contract:";
  char why[64];
  EXPECT(rlock_open_error(why, sizeof why) == 0);
  rlock_client *c;
  EXPECT(rlock_client_open(&c, &o) == RLOCK_OK);
  rlock *l;
  EXPECT(rlock_get(c, "contract", &l) == 0);
  EXPECT(strcmp(rlock_name(l), "contract") == 0);
  rlock_set_lost_cb(l, on_lost, NULL);
  EXPECT(rlock_trylock(l, 5000, 10000) == 0);
  EXPECT(rlock_lock(l, 10000) == 0);
  EXPECT(rlock_hold_count(l) == 2);
  EXPECT(rlock_is_locked(l) == 1);
  EXPECT(rlock_is_held_by_current_thread(l) == 1);
  int64_t ms = 0;
  EXPECT(rlock_remaining_lease(l, &ms) == 0 && ms > 0);
  uint64_t token = 0;
  EXPECT(rlock_fencing_token(l, &token) == 0 && token > 0);
  EXPECT(rlock_extend(l, 20000) == 0);
  EXPECT(rlock_unlock(l) == 0 && rlock_unlock(l) == 0);
  EXPECT(rlock_thread_id() > 0);
  EXPECT(rlock_lock_async(l, 42, RLOCK_WAIT_FOREVER, RLOCK_WATCHDOG, on_done, NULL) == 0);
  for (int i = 0; i < 500 && async_calls < 1; i++) sleep_ms(10);
  EXPECT(async_status == 0);
  EXPECT(rlock_owner_fencing_token(l, 42, &token) == 0);
  EXPECT(rlock_owner_hold_count(l, 42) == 1);
  EXPECT(rlock_extend_async(l, 42, 10000, on_done, NULL) == 0);
  for (int i = 0; i < 500 && async_calls < 2; i++) sleep_ms(10);
  EXPECT(async_status == RLOCK_EINVAL); /* the watchdog extends that one */
  EXPECT(rlock_unlock_async(l, 42, on_done, NULL) == 0);
  for (int i = 0; i < 500 && async_calls < 3; i++) sleep_ms(10);
  EXPECT(async_calls == 3 && async_status == 0);
  EXPECT(rlock_force_unlock(l) == 0);
  char buf[64];
  (void)rlock_client_last_error(c, buf, sizeof buf);
  rlock_free(l);
  rlock_client_close(c);
  struct uv_loop_s *caller_loop = o.loop; /* the forward declaration */
  (void)caller_loop;
  if (failures == 0) printf("PASS: installed_contract\n");
  else printf("FAIL: installed_contract (%d checks)\n", failures);
  return failures != 0;
}
