/*
 * Redis Cluster's key slot, after the specification's reference code
 * (https://redis.io/docs/reference/cluster-spec/, "Key distribution model"
 * and its appendix) and src/cluster.c's keyHashSlot. Bitwise rather than
 * table-driven: a test helper should be easy to check by eye.
 */
#include "keyslot.h"

#include <string.h>

uint16_t rt_crc16(const void *buf, size_t len) {
  const unsigned char *p = buf;
  uint16_t crc = 0;
  for (size_t i = 0; i < len; i++) {
    crc ^= (uint16_t)(p[i] << 8);
    for (int bit = 0; bit < 8; bit++)
      crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ 0x1021)
                           : (uint16_t)(crc << 1);
  }
  return crc;
}

int rt_key_slot(const void *key, size_t len) {
  const char *k = key;
  const char *open = memchr(k, '{', len);
  if (open) {
    size_t start = (size_t)(open - k) + 1;
    const char *close = memchr(k + start, '}', len - start);
    /* An empty tag, "{}", does not count: the whole key is hashed. */
    if (close && close > k + start)
      return rt_crc16(k + start, (size_t)(close - (k + start))) & 0x3FFF;
  }
  return rt_crc16(k, len) & 0x3FFF;
}

int rt_key_slot_str(const char *key) { return rt_key_slot(key, strlen(key)); }
