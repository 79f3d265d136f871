/*
 * Key slots for Redis Cluster routing, written from the specification's
 * description rather than copied from Redis's crc16.c. The checksum takes
 * a nibble at a time from a table of 16 entries: entry i is i times the
 * polynomial 0x1021 (carry-less), small enough to check by eye, and a
 * unit test checks it against the bitwise definition and against the
 * slots a real cluster reports (CLUSTER KEYSLOT).
 */
#include "slot.h"

#include <string.h>

static const uint16_t crc16_nibble[16] = {
    0x0000, 0x1021, 0x2042, 0x3063, 0x4084, 0x50a5, 0x60c6, 0x70e7,
    0x8108, 0x9129, 0xa14a, 0xb16b, 0xc18c, 0xd1ad, 0xe1ce, 0xf1ef,
};

uint16_t rl_crc16(const void *buf, size_t len) {
  const unsigned char *p = buf;
  uint16_t crc = 0;
  for (size_t i = 0; i < len; i++) {
    crc = (uint16_t)(crc << 4) ^ crc16_nibble[(crc >> 12) ^ (p[i] >> 4)];
    crc = (uint16_t)(crc << 4) ^ crc16_nibble[(crc >> 12) ^ (p[i] & 0x0f)];
  }
  return crc;
}

const char *rl_slot_tag(const void *key, size_t len, size_t *taglen) {
  const char *k = key;
  const char *open = len ? memchr(k, '{', len) : NULL;
  if (open != NULL) {
    const char *start = open + 1;
    size_t rest = len - (size_t)(start - k);
    const char *close = rest ? memchr(start, '}', rest) : NULL;
    /* "{}" is no tag: the whole key is hashed, as Redis does. */
    if (close != NULL && close > start) {
      *taglen = (size_t)(close - start);
      return start;
    }
  }
  *taglen = len;
  return k;
}

int rl_slot_of(const void *key, size_t len) {
  size_t n;
  const char *tag = rl_slot_tag(key, len, &n);
  return rl_crc16(tag, n) & (RL_SLOTS - 1);
}

int rl_slot_of_str(const char *key) { return rl_slot_of(key, strlen(key)); }
