#!/usr/bin/env bash
# Runs the examples against a server of their own and checks that
# each does what its comment says (exit status 0; the fencing example
# exits 1 if the storage accepted the stale write). One PASS/FAIL line each.
#   examples_check.sh BUILD_DIR
set -uo pipefail
build=$1
# The server program as the harness takes it (rt_server_program), and its
# client: $RLOCK_TEST_SERVER (valkey-server: valkey-cli), else Redis.
server=${RLOCK_TEST_SERVER:-redis-server}
case "$server" in *-server) cli=${server%-server}-cli ;; *) cli=redis-cli ;; esac
tmp=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill -9 $pid 2>/dev/null; rm -rf "$tmp"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$server" --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$tmp" --logfile "$tmp/redis.log" &
pid=$!
for _ in $(seq 100); do "$cli" -p "$port" ping >/dev/null 2>&1 && break; sleep 0.05; done
failed=0
check() {
  local name=$1; shift
  if timeout 60 "$@" >"$tmp/$name.out" 2>&1; then
    echo "PASS: example_$name"
  else
    echo "FAIL: example_$name (exit $?)"; cat "$tmp/$name.out"; failed=1
  fi
}
check workers "$build/examples/workers" 2 "127.0.0.1:$port"
check async_loop "$build/examples/async_loop" "127.0.0.1:$port"
check fencing "$build/examples/fencing" "127.0.0.1:$port"
check election "$build/examples/election" 3 "127.0.0.1:$port"
# The C++ example is built only where a C++ compiler is.
[ -x "$build/examples/cpp_mutex" ] && check cpp_mutex "$build/examples/cpp_mutex" "127.0.0.1:$port"
exit $failed
