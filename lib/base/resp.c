/* One-pass RESP formatting; see resp.h. */
#include "resp.h"

#include <string.h>

static size_t dec_len(size_t v) {
  size_t n = 1;
  while (v >= 10) {
    v /= 10;
    n++;
  }
  return n;
}

size_t rl_resp_put_u64(char *buf, uint64_t v) {
  /* Most numbers in a command are an argument's length, below 100: a
   * renewal call of a hundred locks writes two hundred of them, and the
   * loop below with its reversal cost half of the call's formatting. */
  if (v < 10) {
    buf[0] = (char)('0' + v);
    buf[1] = '\0';
    return 1;
  }
  if (v < 100) {
    buf[0] = (char)('0' + v / 10);
    buf[1] = (char)('0' + v % 10);
    buf[2] = '\0';
    return 2;
  }
  char tmp[24];
  size_t n = 0;
  do {
    tmp[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v != 0);
  for (size_t i = 0; i < n; i++) buf[i] = tmp[n - 1 - i];
  buf[n] = '\0';
  return n;
}

size_t rl_resp_put_i64(char *buf, int64_t v) {
  if (v >= 0) return rl_resp_put_u64(buf, (uint64_t)v);
  buf[0] = '-';
  /* Negated as unsigned, so that INT64_MIN has its digits too. */
  return 1 + rl_resp_put_u64(buf + 1, -(uint64_t)v);
}

/* Its NUL is overwritten by the "\r\n" that always follows. */
static char *put_dec(char *p, size_t v) { return p + rl_resp_put_u64(p, v); }

size_t rl_resp_size(int argc, const char **argv, const size_t *argvlen) {
  (void)argv;
  size_t total = 1 + dec_len((size_t)argc) + 2;
  for (int i = 0; i < argc; i++)
    total += 1 + dec_len(argvlen[i]) + 2 + argvlen[i] + 2;
  return total;
}

size_t rl_resp_write(char *buf, int argc, const char **argv,
                     const size_t *argvlen) {
  return rl_resp_write_head(buf, 0, argc, argv, argvlen);
}

size_t rl_resp_write_head(char *buf, int extra, int argc, const char **argv,
                          const size_t *argvlen) {
  char *p = buf;
  *p++ = '*';
  p = put_dec(p, (size_t)argc + (size_t)extra);
  *p++ = '\r';
  *p++ = '\n';
  for (int i = 0; i < argc; i++) p += rl_resp_put_bulk(p, argv[i], argvlen[i]);
  return (size_t)(p - buf);
}

size_t rl_resp_put_bulk(char *buf, const char *s, size_t len) {
  char *p = buf;
  *p++ = '$';
  p = put_dec(p, len);
  *p++ = '\r';
  *p++ = '\n';
  memcpy(p, s, len);
  p += len;
  *p++ = '\r';
  *p++ = '\n';
  return (size_t)(p - buf);
}
