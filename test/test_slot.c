/*
 * Unit tests of lib/slot: the CRC16 against its bitwise definition, the
 * hash tag rules of the Redis Cluster specification, and the slot of
 * every key whose CLUSTER KEYSLOT a real cluster answered
 * (test/topology_replies.c: hash tags, empty tags, nested braces, NUL and
 * 0xff bytes, every single byte, and pseudo-random keys).
 */
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "slot.h"
#include "topology_fixture.h"

/* CRC16-XMODEM one bit at a time, straight from its definition. */
static uint16_t crc16_bitwise(const unsigned char *p, size_t len) {
  uint16_t crc = 0;
  for (size_t i = 0; i < len; i++) {
    crc ^= (uint16_t)(p[i] << 8);
    for (int b = 0; b < 8; b++)
      crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ 0x1021)
                           : (uint16_t)(crc << 1);
  }
  return crc;
}

static void crc16_check_value(void) {
  RT_CHECK_EQ_INT(rl_crc16("123456789", 9), 0x31C3);
  RT_CHECK_EQ_INT(rl_crc16("", 0), 0);
  RT_CHECK_EQ_INT(rl_crc16(NULL, 0), 0);
}

/* Every input of two bytes, and longer ones from a fixed generator. */
static void crc16_matches_definition(void) {
  unsigned char buf[64];
  int bad = 0;
  for (int a = 0; a < 256; a++)
    for (int b = 0; b < 256; b++) {
      buf[0] = (unsigned char)a;
      buf[1] = (unsigned char)b;
      bad += rl_crc16(buf, 2) != crc16_bitwise(buf, 2);
      bad += rl_crc16(buf, 1) != crc16_bitwise(buf, 1);
    }
  uint32_t x = 1;
  for (int n = 0; n < 20000; n++) {
    size_t len = n % sizeof buf;
    for (size_t i = 0; i < len; i++) {
      x = x * 1664525u + 1013904223u;
      buf[i] = (unsigned char)(x >> 24);
    }
    bad += rl_crc16(buf, len) != crc16_bitwise(buf, len);
  }
  RT_CHECK_EQ_INT(bad, 0);
}

/* The tag each key hashes, as the specification's examples and its
 * reference code say. */
static void hash_tags(void) {
  static const struct {
    const char *key, *tag;
  } cases[] = {
      {"{user1000}.following", "user1000"},
      {"{user1000}.followers", "user1000"},
      {"foo{}{bar}", "foo{}{bar}"}, /* the first tag is empty: whole key */
      {"foo{{bar}}zap", "{bar"},
      {"foo{bar}{zap}", "bar"},
      {"{}", "{}"},
      {"{", "{"},
      {"}", "}"},
      {"}{a}", "a"},
      {"{a", "{a"},
      {"a}{", "a}{"},
      {"rlock:{lock-1}:fence", "lock-1"},
      {"", ""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    size_t n;
    const char *t = rl_slot_tag(cases[i].key, strlen(cases[i].key), &n);
    RT_CHECK(n == strlen(cases[i].tag) && memcmp(t, cases[i].tag, n) == 0);
    RT_CHECK_EQ_INT(rl_slot_of_str(cases[i].key),
                    rl_crc16(cases[i].tag, strlen(cases[i].tag)) % RL_SLOTS);
  }
  /* A lock's keys and channel share its slot. */
  RT_CHECK_EQ_INT(rl_slot_of_str("rlock:{a}"), rl_slot_of_str("rlock:{a}:fence"));
  RT_CHECK_EQ_INT(rl_slot_of_str("rlock:{a}"), rl_slot_of_str("rlock:{a}:ch"));
  /* A NUL is a byte like any other: "{a\0b}" hashes "a\0b". */
  RT_CHECK_EQ_INT(rl_slot_of("{a\0b}c", 6), rl_crc16("a\0b", 3) % RL_SLOTS);
}

/* CLUSTER KEYSLOT of a real cluster, for every captured key. */
static void matches_cluster_keyslot(void) {
  int bad = 0;
  RT_CHECK(rt_nkeyslots >= 600);
  for (size_t i = 0; i < rt_nkeyslots; i++) {
    const rt_keyslot_case *c = &rt_keyslots[i];
    if (rl_slot_of(c->key, c->len) != c->slot && bad++ < 5)
      fprintf(stderr, "  case %zu: %d, CLUSTER KEYSLOT said %d\n", i,
              rl_slot_of(c->key, c->len), c->slot);
  }
  RT_CHECK_EQ_INT(bad, 0);
  /* Known answers among them: "123456789" is 0x31C3 & 16383. */
  int found = 0;
  for (size_t i = 0; i < rt_nkeyslots; i++)
    if (rt_keyslots[i].len == 9 && memcmp(rt_keyslots[i].key, "123456789", 9) == 0)
      found = rt_keyslots[i].slot == (0x31C3 & 16383);
  RT_CHECK(found);
}

int main(int argc, char **argv) {
  static const rt_test tests[] = {
      {"crc16_check_value", crc16_check_value},
      {"crc16_matches_definition", crc16_matches_definition},
      {"hash_tags", hash_tags},
      {"matches_cluster_keyslot", matches_cluster_keyslot},
  };
  return rt_main(argc, argv, tests, sizeof tests / sizeof tests[0]);
}
