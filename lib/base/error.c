/* Error names, as uv_strerror does for libuv: static, never NULL. The
 * table is RLOCK_ERRNO_MAP in rlock.h. */
#include "rlock.h"

#define RL_XX_CASE(name, code, text) \
  case RLOCK_##name:                 \
    return text;

const char *rlock_strerror(int err) {
  switch (err) {
    case RLOCK_OK: return "success";
    RLOCK_ERRNO_MAP(RL_XX_CASE)
    default: return "unknown error";
  }
}
