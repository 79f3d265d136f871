#!/bin/sh
# Mechanisms below the lock layer call upward only through callbacks they
# are given: no file under watchdog/ includes a header of lib/ (lock.h,
# client.h or any other), only its own and libuv's. Run by meson as the
# 'layering' test; $1 is the source root.
set -eu
root="$1"
bad=0
for f in "$root"/watchdog/*.c "$root"/watchdog/*.h; do
  for inc in $(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f"); do
    if [ ! -f "$root/watchdog/$inc" ]; then
      echo "layering: $f includes \"$inc\", which is not in watchdog/" >&2
      bad=1
    fi
  done
done
# One case, in the runner's format (scripts/summarize.py counts them).
if [ "$bad" -eq 0 ]; then
  echo "PASS: watchdog_includes_only_its_own_headers"
  echo "1 passed, 0 failed"
else
  echo "FAIL: watchdog_includes_only_its_own_headers (see stderr)"
  echo "0 passed, 1 failed"
fi
exit "$bad"
