#!/bin/sh
# Layering check (ARCHITECTURE.md, section 2): a mechanism folder (pubsub/,
# watchdog/) calls the lock layer only through callbacks it is given, so no
# file in it may include the lock layer's headers, lock.h or client.h,
# directly or through another header of the tree.
#
#   check_layers.sh SOURCE_ROOT FOLDER
#
# Prints each offending chain and exits 1, or prints one line and exits 0.
set -u
root=$1
folder=$2
forbidden="lock.h client.h"
dirs="$root/$folder $root/lib $root/watchdog $root/pubsub $root/include"

# Finds a quoted include's file in the tree, as the build's include path
# would (the includer's folder first).
find_header() {
  [ -f "$1/$2" ] && { echo "$1/$2"; return; }
  for d in $dirs; do
    [ -f "$d/$2" ] && { echo "$d/$2"; return; }
  done
}

status=0
seen=""
# Walks the quoted includes of $1; $2 is the chain so far.
walk() {
  case " $seen " in *" $1 "*) return ;; esac
  seen="$seen $1"
  for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$1"); do
    name=${inc##*/}
    for f in $forbidden; do
      if [ "$name" = "$f" ]; then
        echo "$2 -> $inc"
        status=1
      fi
    done
    h=$(find_header "$(dirname "$1")" "$inc")
    [ -n "$h" ] && walk "$h" "$2 -> $inc"
  done
}

for file in "$root/$folder"/*.c "$root/$folder"/*.h; do
  [ -f "$file" ] || continue
  seen=""
  walk "$file" "$folder/${file##*/}"
done
if [ $status -ne 0 ]; then
  echo "FAIL: $folder/ reaches the lock layer's headers ($forbidden)"
  exit 1
fi
echo "PASS: no file under $folder/ includes $forbidden"
