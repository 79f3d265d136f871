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

static char *put_dec(char *p, size_t v) {
  char tmp[24];
  int n = 0;
  do {
    tmp[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v != 0);
  while (n > 0) *p++ = tmp[--n];
  return p;
}

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
  for (int i = 0; i < argc; i++) {
    *p++ = '$';
    p = put_dec(p, argvlen[i]);
    *p++ = '\r';
    *p++ = '\n';
    memcpy(p, argv[i], argvlen[i]);
    p += argvlen[i];
    *p++ = '\r';
    *p++ = '\n';
  }
  return (size_t)(p - buf);
}
