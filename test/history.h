/*
 * Recording calls for the history checker (test/history_check.py, whose
 * top comment describes the format and the models).
 *
 * A test takes rt_hist_now() before a call and after it, and appends one
 * record per call with rt_hist_append(). Every record is one JSON line
 * written with a single write() on a file opened with O_APPEND, so any
 * number of threads and processes may share one file: records never
 * interleave (they are kept well under a page). The times are
 * CLOCK_MONOTONIC, the same clock in every process of the machine.
 *
 *   int fd = rt_hist_open("/tmp/run.jsonl");
 *   int64_t t0 = rt_hist_now();
 *   int rc = rlock_lock(lock, ...);
 *   rt_hist_rec r = {.proc = "p1", .name = "acct", .kind = "mutex",
 *                    .op = "acquire", .invoke_ns = t0,
 *                    .complete_ns = rt_hist_now(),
 *                    .result = rc == 0 ? "ok" : "fail"};
 *   rt_hist_append(fd, &r);
 *
 * A call whose outcome is not known (it timed out, or the connection
 * dropped after sending) is recorded with result "unknown": the checker
 * lets it take effect at any time after its invocation, or never.
 */
#ifndef RT_HISTORY_H
#define RT_HISTORY_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct rt_hist_rec {
  const char *proc;   /* the process or thread making the call */
  const char *owner;  /* the lock owner it acts for; NULL: proc */
  const char *name;   /* the lock's name */
  const char *kind;   /* "mutex", "rw", "sem", "latch" */
  const char *op;     /* "acquire", "read_release", "count_down", ... */
  const char *args;   /* a JSON object ("{\"n\":2,\"permits\":3}"), or NULL */
  int64_t invoke_ns;
  int64_t complete_ns; /* < 0: the call never returned (result unknown) */
  const char *result; /* "ok", "fail", "unknown" */
  int has_value;      /* value: latch set's 1/0, latch count's count */
  int64_t value;
  const char *id;     /* a label for reports, or NULL */
} rt_hist_rec;

/* Nanoseconds on CLOCK_MONOTONIC. */
static inline int64_t rt_hist_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Opens (creates) a history file for appending; -1 and errno on error. */
static inline int rt_hist_open(const char *path) {
  return open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

/* Appends s as a JSON string (quoted, escaped) at *p, within end. */
static inline void rt_hist_str_(char **p, char *end, const char *s) {
  char *q = *p;
  if (q < end)
    *q++ = '"';
  for (; s && *s && q + 7 < end; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') {
      *q++ = '\\';
      *q++ = (char)c;
    } else if (c < 0x20) {
      q += snprintf(q, (size_t)(end - q), "\\u%04x", c);
    } else {
      *q++ = (char)c;
    }
  }
  if (s && *s)
    q = end; /* did not fit: the caller sees the record too long */
  if (q < end)
    *q++ = '"';
  *p = q;
}

/*
 * Appends one record to fd, in one write(). 0, or -1 and errno (EINVAL:
 * a required field missing or the record too long; a short write is an
 * error too, since it would leave a torn line).
 */
static inline int rt_hist_append(int fd, const rt_hist_rec *r) {
  char buf[2048];
  char *p = buf, *end = buf + sizeof buf - 2;
  if (!r->proc || !r->name || !r->kind || !r->op || !r->result) {
    errno = EINVAL;
    return -1;
  }
  const char *keys[] = {"proc", "owner", "name", "kind", "op", "result",
                        "id"};
  const char *vals[] = {r->proc, r->owner, r->name, r->kind, r->op,
                        r->result, r->id};
  *p++ = '{';
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    if (!vals[i])
      continue;
    p += snprintf(p, (size_t)(end - p), "%s\"%s\":", p == buf + 1 ? "" : ",",
                  keys[i]);
    if (p >= end)
      break;
    rt_hist_str_(&p, end, vals[i]);
  }
  if (p < end)
    p += snprintf(p, (size_t)(end - p), ",\"args\":%s,\"invoke_ns\":%lld",
                  r->args ? r->args : "{}", (long long)r->invoke_ns);
  if (p < end) {
    if (r->complete_ns >= 0)
      p += snprintf(p, (size_t)(end - p), ",\"complete_ns\":%lld",
                    (long long)r->complete_ns);
    else
      p += snprintf(p, (size_t)(end - p), ",\"complete_ns\":null");
  }
  if (p < end && r->has_value)
    p += snprintf(p, (size_t)(end - p), ",\"value\":%lld",
                  (long long)r->value);
  if (p >= end) {
    errno = EINVAL;
    return -1;
  }
  *p++ = '}';
  *p++ = '\n';
  size_t len = (size_t)(p - buf);
  ssize_t n;
  do
    n = write(fd, buf, len);
  while (n < 0 && errno == EINTR);
  if (n < 0)
    return -1;
  if ((size_t)n != len) {
    errno = EIO;
    return -1;
  }
  return 0;
}

#endif
