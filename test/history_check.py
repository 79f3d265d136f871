#!/usr/bin/env python3
"""Linearizability checker for histories of rlock operations.

Test clients record every operation they make on a lock (test/history.h)
as one JSON line; this program decides whether the history could have
come from one atomic object per name behaving as the model says, each
operation taking effect at one instant between its invocation and its
completion. When it cannot, it prints the shortest failing window it
finds.

    history_check.py [--json] [--max-configs=N] FILE...   (FILE "-": stdin)

Exit status: 0 linearizable, 1 not, 2 bad input, 3 undecided (the search
would visit more than N configurations for a name, default 5,000,000).

History format: one JSON object per line (blank lines and lines starting
with '#' are skipped), in any order; several processes may append to one
file.

    {"proc": "p3", "owner": "p3/t1", "name": "acct", "kind": "mutex",
     "op": "acquire", "args": {}, "invoke_ns": 1200, "complete_ns": 1500,
     "result": "ok", "value": null, "id": "p3-17"}

  proc        the process (or thread) that made the call; free-form.
  owner       the lock owner the call acts for (default: proc). Reentrant
              counts and permits belong to an owner.
  name        the lock's name; every name is an object of its own.
  kind        mutex (reentrant lock, fair lock, one name of lock_all), rw,
              sem, latch. One name has one kind.
  op          mutex: acquire, release.
              rw:    read_acquire, read_release, write_acquire,
                     write_release.
              sem:   acquire, release (args.n permits, default 1; the
                     limit K in args.permits on at least one record).
              latch: set (args.count), count_down, await, count (a read:
                     value is the count seen, 0 when open or not set).
              mutex, rw, sem: lose, the owner's holds ending without a
                     release (its lease ran out): invoke_ns the earliest
                     it may have happened (the lease's end), complete_ns
                     when the owner was told, or null; it is ok when the
                     owner held nothing by then.
  invoke_ns, complete_ns
              times on one monotonic clock shared by all processes
              (CLOCK_MONOTONIC). complete_ns may be null for result
              "unknown" (a process that died in the call).
  result      ok: the call took effect (or, for a read, saw value);
              fail: it took no effect (refused, timed out waiting, an
              error that says nothing changed): a failed call constrains
              nothing;
              unknown: it may or may not have taken effect, at any time
              after invoke_ns (also after complete_ns: an effect may land
              late).
  value       latch set: 1 it was set, 0 it was counting already (absent:
              either); latch count: the count seen.
  id          optional label printed in reports (default: file:line).

The models (what each "ok" requires at its instant):
  mutex  one owner at a time; acquire by the holder counts up (reentrant),
         release needs the holder and counts down (never below zero).
  rw     readers share, a writer excludes every other owner; the writer
         may take the read side too (and keep it after write_release);
         both sides count per owner; a read holder without the write side
         cannot take it.
  sem    the sum of permits held is at most K; release n needs n held by
         that owner.
  latch  not set, counting (n > 0) or open (0). set: from not set or
         open to count (value 1), or nothing while counting (value 0);
         count_down: counting -> n-1, open -> open, not set refused;
         await returns ok only while the latch is open.
Not modeled: leases running out by themselves (a hold ends by its
release, or by a recorded lose), the fair lock's order, a latch's
expiry.

The search is Wing and Gong's, with Lowe's memoization: a depth-first
search over the order in which pending calls take effect, remembering
every (set of calls taken effect, model state) pair already explored, so
a configuration is never searched twice; the set is a Python integer used
as a bitset. Names are checked separately (linearizability is
compositional), and a history is cut at quiescent points (no completed
call in flight) into segments carried from one to the next as a set of
possible starts: a model state, and the unknown calls that may still
take effect. A call with result unknown has no completion: it may take
effect anywhere after its invocation, or never.

When a name fails, the report is the shortest failing prefix (cut after
a completion; calls still in flight at the cut count as unknown), found
by bisection since a prefix of a linearizable history is linearizable,
trimmed at the start to the last quiescent point before it (whatever
state the object may be in there, the rest fails from all of them), with
every call in the window, its times relative to the window's start, and
where the deepest search stopped.
"""

import json
import sys

INF = float("inf")
SHOW_MAX = 40       # a longer window is shown around where the search stopped


class BadInput(Exception):
    pass


class TooLarge(Exception):
    """The search visited more configurations than allowed (--max-configs):
    the answer is unknown, not no."""


# Configurations one name's check may visit. Realistic histories need
# far fewer (a 2000-call one with 12 processes, some thousands); a model
# that lets most concurrent calls commute, failing late, can need 2^(calls
# in flight) per step, and this bounds the time such a case takes.
MAX_CONFIGS = [5000000]


class Op:
    __slots__ = ("proc", "owner", "name", "kind", "op", "args",
                 "call", "ret", "result", "value", "label", "n", "orig")

    def __repr__(self):
        return "Op(%s %s %s)" % (self.label, self.owner, self.op)


# ---------------------------------------------------------------- models
#
# A state is hashable. step(state, op) returns the new state, or None when
# op cannot take effect in state (for an ok call).

def _bump(counts, owner, delta):
    """counts: sorted tuple of (owner, n); returns it with n += delta, or
    None if n would go below zero."""
    d = dict(counts)
    n = d.get(owner, 0) + delta
    if n < 0:
        return None
    if n:
        d[owner] = n
    else:
        d.pop(owner, None)
    return tuple(sorted(d.items()))


def _held(counts, owner):
    for o, n in counts:
        if o == owner:
            return n
    return 0


class MutexModel:
    ops = ("acquire", "release", "lose")
    init = (None, 0)

    def step(self, s, op):
        owner, n = s
        if op.op == "lose":
            return (None, 0) if owner == op.owner else s
        if op.op == "acquire":
            if owner is None:
                return (op.owner, 1)
            return (owner, n + 1) if owner == op.owner else None
        if owner != op.owner:
            return None
        return (None, 0) if n == 1 else (owner, n - 1)

    def show(self, s):
        return "free" if s[0] is None else "held by %s x%d" % s


class RwModel:
    ops = ("read_acquire", "read_release", "write_acquire", "write_release",
           "lose")
    # (readers: ((owner, n), ...), writer owner, writer count)
    init = ((), None, 0)

    def step(self, s, op):
        readers, w, wn = s
        o = op.owner
        if op.op == "lose":
            readers = tuple(r for r in readers if r[0] != o)
            return (readers, None, 0) if w == o else (readers, w, wn)
        if op.op == "read_acquire":
            if w is not None and w != o:
                return None
            return (_bump(readers, o, 1), w, wn)
        if op.op == "read_release":
            r = _bump(readers, o, -1)
            return None if r is None else (r, w, wn)
        if op.op == "write_acquire":
            if w is not None:
                return (readers, w, wn + 1) if w == o else None
            return ((), o, 1) if not readers else None
        if w != o:
            return None
        return (readers, None, 0) if wn == 1 else (readers, w, wn - 1)

    def show(self, s):
        readers, w, wn = s
        parts = []
        if w is not None:
            parts.append("writer %s x%d" % (w, wn))
        if readers:
            parts.append("readers " + ", ".join("%s x%d" % r for r in readers))
        return "; ".join(parts) or "free"


class SemModel:
    ops = ("acquire", "release", "lose")
    init = ()

    def __init__(self, k):
        self.k = k

    def step(self, s, op):
        if op.op == "acquire":
            if sum(n for _, n in s) + op.n > self.k:
                return None
            return _bump(s, op.owner, op.n)
        if op.op == "lose":
            return tuple(h for h in s if h[0] != op.owner)
        return _bump(s, op.owner, -op.n)

    def show(self, s):
        used = sum(n for _, n in s)
        return "%d/%d permits held%s" % (
            used, self.k,
            (": " + ", ".join("%s x%d" % h for h in s)) if s else "")


class LatchModel:
    ops = ("set", "count_down", "await", "count")
    init = None            # not set; 0 open; n > 0 counting

    def step(self, s, op):
        if op.op == "set":
            counting = s is not None and s > 0
            if op.value is None:
                return s if counting else op.n
            if op.value:
                return None if counting else op.n
            return s if counting else None
        if op.op == "count_down":
            if s is None:
                return None
            return s - 1 if s > 0 else 0
        if op.op == "await":
            return s if s == 0 else None
        # count: a read
        return s if (s or 0) == op.value else None

    def show(self, s):
        if s is None:
            return "not set"
        return "open" if s == 0 else "counting %d" % s


# ---------------------------------------------------------------- input

def parse(lines, source="-"):
    ops = []
    for lineno, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        where = "%s:%d" % (source, lineno)
        try:
            r = json.loads(line)
        except ValueError as e:
            raise BadInput("%s: not JSON: %s" % (where, e))
        o = Op()
        try:
            o.proc = str(r["proc"])
            o.owner = str(r.get("owner") or r["proc"])
            o.name = str(r["name"])
            o.kind = r["kind"]
            o.op = r["op"]
            o.args = r.get("args") or {}
            o.call = int(r["invoke_ns"])
            c = r.get("complete_ns")
            o.result = r["result"]
        except (KeyError, TypeError, ValueError) as e:
            raise BadInput("%s: bad record (%s)" % (where, e))
        if o.kind not in KINDS:
            raise BadInput("%s: unknown kind %r" % (where, o.kind))
        if o.op not in KINDS[o.kind].ops:
            raise BadInput("%s: kind %s has no op %r" % (where, o.kind, o.op))
        if o.result not in ("ok", "fail", "unknown"):
            raise BadInput("%s: unknown result %r" % (where, o.result))
        if c is None and o.result != "unknown":
            raise BadInput("%s: complete_ns missing" % where)
        o.ret = INF if o.result == "unknown" else int(c)
        if o.ret < o.call:
            raise BadInput("%s: completes before it is invoked" % where)
        o.value = r.get("value")
        o.n = int(o.args.get("n", o.args.get("count", 1)))
        if o.n < 0 or (o.kind == "latch" and o.op == "set" and o.n < 1):
            raise BadInput("%s: bad count %d" % (where, o.n))
        if o.kind == "latch" and o.op == "count" and o.value is None:
            raise BadInput("%s: latch count without value" % where)
        o.label = str(r.get("id") or where)
        o.orig = o
        # complete_ns kept for the report even when the effect may land
        # later than it
        o.args = dict(o.args, _complete_ns=c)
        ops.append(o)
    return ops


KINDS = {"mutex": MutexModel, "rw": RwModel, "sem": SemModel,
         "latch": LatchModel}


def model_for(kind, ops):
    if kind == "sem":
        ks = {int(o.args["permits"]) for o in ops if "permits" in o.args}
        if len(ks) != 1:
            raise BadInput("semaphore %s: args.permits must be given, and "
                           "the same everywhere (found %s)"
                           % (ops[0].name, sorted(ks) or "none"))
        return SemModel(ks.pop())
    return KINDS[kind]()


def split_by_name(ops):
    names = {}
    for o in ops:
        names.setdefault(o.name, []).append(o)
    for name, group in names.items():
        kinds = {o.kind for o in group}
        if len(kinds) != 1:
            raise BadInput("name %s used as %s" % (name, sorted(kinds)))
    return names


# ---------------------------------------------------------------- search

def relevant(ops):
    """The calls the search places: failed calls and reads that may not
    have happened constrain nothing."""
    out = []
    for o in ops:
        if o.result == "fail":
            continue
        if o.result == "unknown" and o.op in ("await", "count"):
            continue
        out.append(o)
    return out


class Node:
    __slots__ = ("op", "bit", "is_call", "match", "prev", "next")


class Deepest:
    """Where the search got furthest: how many calls had taken effect,
    in which state, and the completed call it could not place."""

    def __init__(self):
        self.depth = -1
        self.state = None
        self.blocked = None
        self.order = []


def search(model, seg, starts, budget, collect=False, deepest=None):
    """Wing-Gong search over the calls of seg (already filtered) from
    every start of starts: (model state, unknown calls of earlier segments
    that have not taken effect yet). Returns (ok, ends). With collect,
    explores every way and returns as ends every such pair in which all
    completed calls have taken effect (for the next segment); otherwise
    stops at the first success."""
    finals = set()
    for state, pending in starts:
        ops = list(pending) + seg
        events = []
        for i, o in enumerate(ops):
            events.append((o.call, 0, i))
            if o.ret != INF:
                events.append((o.ret, 1, i))
        # at equal times a call comes first: the two overlap
        events.sort()
        required = sum(1 for o in ops if o.ret != INF)
        unknown = [(1 << i, o) for i, o in enumerate(ops) if o.ret == INF]
        head = Node()
        head.prev = None
        head.next = None
        nodes = {}
        last = head
        for t, kind, i in events:
            n = Node()
            n.op = ops[i]
            n.bit = 1 << i
            n.is_call = kind == 0
            n.match = None
            n.prev = last
            n.next = None
            last.next = n
            last = n
            if kind == 0:
                nodes[i] = n
            else:
                nodes[i].match = n
        seen = set()
        stack = []
        lin = 0
        left = required
        entry = head.next
        arrived = True
        while True:
            if arrived and left == 0:
                if not collect:
                    return True, {(state, ())}
                finals.add((state, tuple(o for bit, o in unknown
                                         if not lin & bit)))
            arrived = False
            if entry is not None and entry.is_call:
                new = model.step(state, entry.op)
                if new is not None:
                    key = (lin | entry.bit, new)
                    if key not in seen:
                        seen.add(key)
                        budget[0] -= 1
                        if budget[0] < 0:
                            raise TooLarge()
                        stack.append((entry, state))
                        state = new
                        lin |= entry.bit
                        if entry.match is not None:
                            left -= 1
                        _lift(entry)
                        entry = head.next
                        arrived = True
                        continue
                entry = entry.next
                continue
            # the end of the list, or a completion whose call has not
            # taken effect: a dead end
            if entry is not None and deepest is not None and \
                    len(stack) > deepest.depth:
                deepest.depth = len(stack)
                deepest.state = state
                deepest.blocked = entry.op
                deepest.order = [e.op for e, _ in stack]
            if not stack:
                break
            entry, state = stack.pop()
            lin ^= entry.bit
            if entry.match is not None:
                left += 1
            _unlift(entry)
            entry = entry.next
    return bool(finals), finals


def _lift(n):
    n.prev.next = n.next
    if n.next is not None:
        n.next.prev = n.prev
    m = n.match
    if m is not None:
        m.prev.next = m.next
        if m.next is not None:
            m.next.prev = m.prev


def _unlift(n):
    m = n.match
    if m is not None:
        m.prev.next = m
        if m.next is not None:
            m.next.prev = m
    n.prev.next = n
    if n.next is not None:
        n.next.prev = n


def segments(ops):
    """Splits ops (sorted by call) at quiescent points: a segment ends
    where no completed call is in flight. An unknown call is in flight
    for ever; it is carried from segment to segment until it takes
    effect (search's starts)."""
    segs = []
    cur = []
    horizon = -INF
    for o in ops:
        if cur and o.call > horizon:
            segs.append(cur)
            cur = []
        cur.append(o)
        if o.ret != INF:
            horizon = max(horizon, o.ret)
    if cur:
        segs.append(cur)
    return segs


# Beyond this many possible (state, pending unknown calls) pairs at a
# quiescent point, segments are joined instead: each pair is a search of
# its own, and unknown calls that never took effect can multiply them.
MAX_STARTS = 64


def check_ops(model, ops):
    """Linearizable from the model's initial state? Returns (ok, index of
    the failing segment or None, the starts it was searched from, the
    segments)."""
    ops = sorted(relevant(ops), key=lambda o: (o.call, o.ret))
    segs = segments(ops)
    budget = [MAX_CONFIGS[0]]
    starts = {(model.init, ())}
    k = 0
    while k < len(segs):
        last = k == len(segs) - 1
        ok, finals = search(model, segs[k], starts, budget, collect=not last)
        if not ok:
            return False, k, starts, segs
        if len(finals) > MAX_STARTS:
            segs[k:k + 2] = [segs[k] + segs[k + 1]]
            continue
        starts = finals
        k += 1
    return True, None, starts, segs


def cut(ops, t):
    """The history as it stood at time t: calls invoked by t, those not
    completed by then as unknown."""
    out = []
    for o in ops:
        if o.call > t:
            continue
        if o.ret > t and o.result == "ok":
            c = Op()
            for f in Op.__slots__:
                setattr(c, f, getattr(o, f))
            c.result = "unknown"
            c.ret = INF
            out.append(c)
        else:
            out.append(o)
    return out


def minimal_window(model, ops):
    """The shortest failing prefix (by bisection over completion times),
    trimmed to its last quiescent point. Returns a dict for the report."""
    times = sorted({o.ret for o in relevant(ops) if o.ret != INF})
    lo, hi = 0, len(times) - 1      # prefix at times[hi] fails
    while lo < hi:
        mid = (lo + hi) // 2
        if check_ops(model, cut(ops, times[mid]))[0]:
            lo = mid + 1
        else:
            hi = mid
    end = times[hi] if times else INF
    prefix = cut(ops, end)
    ok, k, starts, segs = check_ops(model, prefix)
    assert not ok
    window = segs[k]
    deepest = Deepest()
    search(model, window, starts, [MAX_CONFIGS[0]], deepest=deepest)
    # the window's calls as recorded, with the fails and reads left out of
    # the search shown too: they may explain what happened; unknown calls
    # from before it that may still take effect are listed with the states
    shown = [o.orig for o in window]
    t0 = min(o.call for o in window)
    # and the calls in flight at its start that completed after its end
    # (they are carried in as unknown)
    shown += list({id(o.orig): o.orig for _, pend in starts for o in pend
                   if o.orig.result == "ok"}.values())
    states = {(st, tuple(o.orig for o in pend)) for st, pend in starts}
    extra = [o for o in ops if o.result == "fail" or
             (o.result == "unknown" and o.op in ("await", "count"))]
    shown += [o for o in extra if t0 <= o.call <= end]
    shown.sort(key=lambda o: (o.call, o.ret))
    if deepest.blocked is not None:
        deepest.blocked = deepest.blocked.orig
        deepest.order = [o.orig for o in deepest.order]
    return {"end_ns": end, "start_ns": t0, "ops": shown,
            "states": states, "deepest": deepest}


# ---------------------------------------------------------------- report

def check_name(name, group):
    model = model_for(group[0].kind, group)
    try:
        ok = check_ops(model, group)[0]
    except TooLarge:
        return {"name": name, "kind": group[0].kind, "ok": None,
                "ops": len(group)}
    if ok:
        return {"name": name, "kind": group[0].kind, "ok": True,
                "ops": len(group)}
    try:
        w = minimal_window(model, group)
    except TooLarge:
        # not linearizable, but the window could not be narrowed
        return {"name": name, "kind": group[0].kind, "ok": False,
                "ops": len(group), "window": None, "window_ids": [],
                "blocked": None}
    d = w["deepest"]
    return {"name": name, "kind": group[0].kind, "ok": False,
            "ops": len(group), "model": model, "window": w,
            "window_ids": [o.label for o in w["ops"]],
            "blocked": d.blocked.label if d.blocked else None}


def fmt_time(t, t0):
    if t == INF:
        return "        -"
    return "%+9.3f" % ((t - t0) / 1e6)


def report(res, out):
    if res["ok"]:
        print("%s %s: linearizable (%d calls)" % (res["kind"], res["name"],
                                                   res["ops"]), file=out)
        return
    if res["ok"] is None:
        print("%s %s: UNDECIDED (%d calls): more than %d configurations "
              "to search (--max-configs)" % (res["kind"], res["name"],
                                             res["ops"], MAX_CONFIGS[0]),
              file=out)
        return
    if res["window"] is None:
        print("%s %s: NOT linearizable (%d calls); the window is too costly "
              "to narrow (--max-configs)" % (res["kind"], res["name"],
                                             res["ops"]), file=out)
        return
    m = res["model"]
    w = res["window"]
    t0 = w["start_ns"]
    print("%s %s: NOT linearizable (%d calls)" % (res["kind"], res["name"],
                                                   res["ops"]), file=out)
    print("  failing window: %d calls, %.3f ms, starting at %d ns"
          % (len(w["ops"]), (w["end_ns"] - t0) / 1e6, t0), file=out)
    starts = sorted(m.show(st) + (
        "" if not pend else " (%s may still take effect)"
        % ", ".join(o.label for o in pend)) for st, pend in w["states"])
    more = len(starts) - 6
    print("  the object could be, at its start: %s%s" % (
        " | ".join(starts[:6]),
        " | ... %d more" % more if more > 0 else ""), file=out)
    print("  (times in ms from the window's start; complete '-': "
          "unknown, may land any time)", file=out)
    d = w["deepest"]
    shown = w["ops"]
    if len(shown) > SHOW_MAX and d.blocked is not None:
        # too many to read: the calls around where the search stopped,
        # the last ones taken effect and those still pending then
        done = {id(o) for o in d.order}
        recent = d.order[-SHOW_MAX // 3:]
        # when the recent ones completed (an acquire that waited long was
        # invoked long before it took effect)
        t_lo = min([o.ret for o in recent if o.ret != INF] +
                   [d.blocked.call])
        recent = {id(o) for o in recent}
        shown = [o for o in shown if id(o) in recent or
                 (o.call <= d.blocked.ret and
                  (o.ret >= t_lo if id(o) in done or o.result == "fail"
                   else True))]
        print("  showing %d of them, around where the search stopped"
              % len(shown), file=out)
    print("     invoke   complete  result   owner            op", file=out)
    for o in shown:
        c = o.args.get("_complete_ns")
        shown_ret = o.ret if o.ret != INF else (c if c is not None else INF)
        args = {k: v for k, v in o.args.items() if not k.startswith("_")}
        print("  %s %s  %-7s  %-15s  %s%s%s  [%s]" % (
            fmt_time(o.call, t0), fmt_time(shown_ret, t0), o.result,
            o.owner, o.op, (" " + json.dumps(args)) if args else "",
            (" = %s" % o.value) if o.value is not None else "", o.label),
            file=out)
    if d.blocked is not None:
        print("  the search got furthest with %d calls of the window taken "
              "effect (last: %s), object %s;" % (
                  d.depth, ("..., " if len(d.order) > 10 else "") +
                  (", ".join(o.label for o in d.order[-10:]) or "none"),
                  m.show(d.state)), file=out)
        print("  then %s (%s %s, completed at %s ms) could not take effect"
              % (d.blocked.label, d.blocked.owner, d.blocked.op,
                 fmt_time(d.blocked.ret, t0).strip()), file=out)


def check_history(ops):
    names = split_by_name(ops)
    return [check_name(n, names[n]) for n in sorted(names)]


def main(argv):
    as_json = False
    files = []
    for a in argv[1:]:
        if a == "--json":
            as_json = True
        elif a.startswith("--max-configs="):
            MAX_CONFIGS[0] = int(a.split("=", 1)[1])
        elif a in ("-h", "--help"):
            print(__doc__)
            return 0
        else:
            files.append(a)
    if not files:
        print("usage: history_check.py [--json] [--max-configs=N] FILE...",
              file=sys.stderr)
        return 2
    ops = []
    try:
        for f in files:
            if f == "-":
                ops += parse(sys.stdin, "-")
            else:
                with open(f) as fh:
                    ops += parse(fh, f)
        results = check_history(ops)
    except BadInput as e:
        print("history_check: %s" % e, file=sys.stderr)
        return 2
    if as_json:
        print(json.dumps([{k: r[k] for k in
                           ("name", "kind", "ok", "ops", "window_ids",
                            "blocked") if k in r} for r in results]))
    else:
        for r in results:
            report(r, sys.stdout)
    if any(r["ok"] is False for r in results):
        return 1
    return 3 if any(r["ok"] is None for r in results) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
