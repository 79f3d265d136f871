#!/usr/bin/env python3
"""Turns the JSON lines of scripts/bench into bench/results/report.md and
the data and gnuplot script of its chart.

Every rlock figure is put beside its floor from the same run (raw hiredis
in a process of its own, the parallel floor for N > 1, the pipelined
ceiling for the async API), as medians over the rounds each program ran,
with the ratio and the target it is judged against. The load the
machine was under is reported with the figures, because the machine is
shared.

    bench_report.py RESULTS.jsonl OUTDIR
"""
import json
import statistics
import sys


def load(path):
    rows, run = [], 0
    for line in open(path):
        if not line.startswith("{"):
            continue
        r = json.loads(line)
        if r["bench"] == "load":
            run += 1
        r["_run"] = run  # which program printed it
        rows.append(r)
    return rows


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def us(x):
    if x is None:
        return "–"
    return f"{x:,.0f} µs" if x >= 100 else f"{x:.1f} µs"


def rate(x):
    return "–" if x is None else f"{x:,.0f} pairs/s"


def rounds(xs, fmt):
    xs = [x for x in xs if x is not None]
    if len(xs) < 2:
        return ""
    return f" (rounds {fmt(min(xs))} – {fmt(max(xs))})"


class Report:
    def __init__(self, rows):
        self.rows = rows
        self.meta = next((r for r in rows if r["bench"] == "meta"), {})
        self.lines = []

    def pick(self, bench, **kw):
        return [r for r in self.rows if r["bench"] == bench
                and all(r.get(k) == v for k, v in kw.items())]

    # --- figures --------------------------------------------------------

    def latency(self, n, impl, field):
        return [r[field] for r in self.pick("latency", impl=impl, masters=n)]

    def tput(self, impl, mode, n, c):
        return [r["pairs_per_s"] for r in self.pick("throughput", impl=impl, mode=mode,
                                                     masters=n, concurrency=c)]

    def ceilings(self):
        """The ceiling of each run of bench_ceiling: the best of its shapes."""
        by_run = {}
        for r in self.pick("ceiling"):
            by_run.setdefault(r["_run"], []).append(r["pairs_per_s"])
        return [max(v) for v in by_run.values()]

    def contention(self, cls, **kw):
        """Hand-off p50s of one class ("cross" or "same") over the runs."""
        return [r[f"{cls}_p50_us"] for r in self.pick("contention", impl="rlock", **kw)
                if r[f"{cls}_n"] > 0]

    def handoff_floor(self, between, field="handoff_p50_us"):
        return [r[field] for r in self.pick("handoff", impl="floor", between=between)]

    # --- the table of targets -------------------------------------------

    def targets(self):
        L = self.lines
        L += ["## Judged against the targets", "",
              "Medians over the rounds of this run, with the rounds' range in brackets; "
              "the floor of each row was measured in the same run, in a process with no "
              "rlock code. The ratio is of the medians.", "",
              "| figure | rlock | floor, same run | ratio | target | met |",
              "|---|---|---|---|---|---|"]

        def cell(xs, fmt):
            xs = [x for x in xs if x is not None]
            if not xs:
                return "–"
            if len(xs) < 2:
                return fmt(med(xs))
            bare = lambda x: fmt(x).split(" ")[0]  # the number without its unit
            return f"{fmt(med(xs))} [{bare(min(xs))} – {bare(max(xs))}]"

        def row(name, a, b, fmt, floor_name, target, test):
            """a, b: rlock's and the floor's values over the rounds; test(ratio,
            rlock median) says whether the target is met."""
            ma, mb = med(a), med(b)
            ratio = ma / mb if ma is not None and mb else None
            ok = None if test is None or ma is None else test(ratio, ma)
            rs = "–" if ratio is None else f"{ratio:.2f}"
            met = "–" if ok is None else ("yes" if ok else "**no**")
            L.append(f"| {name} | {cell(a, fmt)} | {floor_name}: {cell(b, fmt)} | {rs} | "
                     f"{target} | {met} |")

        for n in (1, 3, 5):
            fl = "raw hiredis, own process" if n == 1 else "raw hiredis to all masters at once"
            lim = 1.25 if n == 1 else 1.15
            row(f"lock+unlock p50, one thread, N = {n}", self.latency(n, "rlock", "p50_us"),
                self.latency(n, "floor", "p50_us"), us, fl, f"≤ {lim}x",
                lambda r, a, lim=lim: r is not None and r <= lim)
            row(f"lock+unlock p99, one thread, N = {n}", self.latency(n, "rlock", "p99_us"),
                self.latency(n, "floor", "p99_us"), us, fl,
                "≤ 2x" if n > 1 else "(none for N = 1)",
                (lambda r, a: r is not None and r <= 2) if n > 1 else None)
        row("16 blocking threads, N = 1", self.tput("rlock", "threads", 1, 16),
            self.tput("floor", "threads", 1, 16), rate,
            "raw hiredis, 16 threads x own connection", "≥ 1.3x",
            lambda r, a: r is not None and r >= 1.3)
        row("async, 256 in flight, N = 1", self.tput("rlock", "async", 1, 256),
            self.ceilings(), rate,
            "pipelined ceiling (best of redis-benchmark calls/2 and raw pipelined pairs)",
            "≥ 0.8x", lambda r, a: r is not None and r >= 0.8)
        row("hand-off p50 between processes, N = 1",
            self.contention("cross", masters=1, procs=2, threads=1, strategy="pubsub"),
            self.handoff_floor("processes"), us,
            "raw unlock + message + acquire, 2 processes", "≤ 200 µs",
            lambda r, a: a <= 200)
        row("hand-off p50 between threads of one client, N = 1",
            self.contention("same", masters=1, procs=1, threads=2, strategy="pubsub"),
            self.handoff_floor("threads"), us,
            "raw unlock + message + acquire, 2 threads", "≤ 100 µs",
            lambda r, a: a <= 100)
        for w in self.pick("watchdog"):
            per = w["rss_bytes_per_handle"] + w["rss_bytes_per_hold"]
            L.append(f"| memory per held watchdog lock, {w['locks']:,} held | "
                     f"{per:,.0f} B (handle {w['rss_bytes_per_handle']:,.0f} + hold "
                     f"{w['rss_bytes_per_hold']:,.0f}, RSS) | – | – | ≤ 300 B | "
                     f"{'yes' if per <= 300 else '**no**'} |")
            cpu = w["loop_cpu_share_of_core"] * 100
            L.append(f"| loop thread CPU, {w['locks']:,} held, timeout "
                     f"{w['watchdog_timeout_ms'] / 1000:g} s | {cpu:.1f}% of a core | – | – | "
                     f"≤ 5% | {'yes' if cpu <= 5 else '**no**'} |")
        L.append("")

    # --- every figure ---------------------------------------------------

    def details(self):
        L = self.lines
        L += ["## Every figure", "", "### Latency of one lock+unlock pair, one thread", "",
              "| N | rlock p50 | floor p50 | ratio | rlock p99 | floor p99 | ratio | "
              "floor p50 at a majority | PING p50 |", "|---|---|---|---|---|---|---|---|---|"]
        for n in (1, 3, 5):
            lp, fp = self.latency(n, "rlock", "p50_us"), self.latency(n, "floor", "p50_us")
            l9, f9 = self.latency(n, "rlock", "p99_us"), self.latency(n, "floor", "p99_us")
            q = med(self.latency(n, "floor", "quorum_p50_us"))
            ping = med([r["p50_us"] for r in self.pick("ping")
                        if any(x["_run"] == r["_run"] and x.get("masters") == n
                               for x in self.pick("latency"))])
            if not lp:
                continue
            L.append(f"| {n} | {us(med(lp))}{rounds(lp, us)} | {us(med(fp))}{rounds(fp, us)} | "
                     f"{med(lp) / med(fp):.2f} | {us(med(l9))} | {us(med(f9))} | "
                     f"{med(l9) / med(f9):.2f} | {us(q)} | {us(ping)} |")
        L += ["", "The floor for N > 1 writes both scripts' commands to every master at "
              "once and reads every reply; \"at a majority\" is the same floor stopped "
              "at the deciding reply, for reference.", "",
              "### Pairs per second", "",
              "| N | concurrency | rlock | floor or ceiling | ratio |", "|---|---|---|---|---|"]
        for n in (1, 5):
            for c in (1, 4, 16, 64):
                a, b = self.tput("rlock", "threads", n, c), self.tput("floor", "threads", n, c)
                if a and b:
                    thr = "thread" if c == 1 else "threads"
                    L.append(f"| {n} | {c} blocking {thr} | {rate(med(a))} | raw hiredis, "
                             f"{c} {thr}: {rate(med(b))} | {med(a) / med(b):.2f} |")
            for c in (1, 16, 64, 256):
                a = self.tput("rlock", "async", n, c)
                ce = med(self.ceilings())
                if a:
                    rest = (f"pipelined ceiling: {rate(ce)} | {med(a) / ce:.2f}"
                            if n == 1 and ce else "– | –")
                    L.append(f"| {n} | async, {c} in flight | {rate(med(a))} | {rest} |")
        mux = self.pick("floor_mux")
        if mux:
            L += ["", "Many blocking threads over one connection, raw hiredis with no rlock "
                  "(bench_floor_mux): \"conns\" gives each thread its own connection (the "
                  "floor above); \"mux\" shares one through an I/O thread (rlock's shape), "
                  "\"leader\" through leader/follower, \"direct\" lets callers write "
                  "themselves and one read for all. Medians over rounds; the ratio is the "
                  "median of each round's ratio to conns of the same round, its range in "
                  "brackets. CPU and context switches are the client process's.", "",
                  "| threads | shape | pairs/s | ratio to conns | rounds ≥ 1.3x | "
                  "client CPU per pair | context switches per pair | server CPU per pair | "
                  "commands per write |", "|---|---|---|---|---|---|---|---|---|"]
            for m in self.pick("floor_mux", shape="summary"):
                for k in ("conns", "mux", "leader", "direct"):
                    xs = [r["pairs_per_s"] for r in mux
                          if r["shape"] == k and r["threads"] == m["threads"]
                          and r["_run"] == m["_run"]]
                    ratio = ("1" if k == "conns" else
                             f"{m[f'{k}_ratio_median']:.2f} [{m[f'{k}_ratio_min']:.2f} – "
                             f"{m[f'{k}_ratio_max']:.2f}]")
                    hits = "–" if k == "conns" else f"{m[f'{k}_rounds_at_target']} of {m['rounds']}"
                    srv = m.get(f"{k}_server_cpu_us_per_pair")
                    L.append(f"| {m['threads']} | {k} | {rate(med(xs))}{rounds(xs, rate)} | "
                             f"{ratio} | {hits} | {us(m[f'{k}_cpu_us_per_pair'])} | "
                             f"{m[f'{k}_csw_per_pair']:.1f} | {us(srv)} | "
                             f"{m[f'{k}_cmds_per_write']:.1f} |")
        L += ["", "The pipelined ceiling of one master, per run of bench_ceiling:", "",
              "| measured by | shape | calls/s | pairs/s |", "|---|---|---|---|"]
        for r in self.pick("ceiling"):
            if r["impl"] == "redis-benchmark":
                L.append(f"| redis-benchmark, acquire script | -c {r['clients']} -P {r['pipeline']} "
                         f"-r 16384 | {r['calls_per_s']:,.0f} | {r['pairs_per_s']:,.0f} (calls/2) |")
            else:
                L.append(f"| raw hiredis, acquire + unlock pipelined | {r['threads']} x "
                         f"{r['depth']} pairs in flight | – | {r['pairs_per_s']:,.0f} |")
        L += ["", "### Hand-off under contention (pub/sub unless said)", "",
              "| N | shape | hold / gap ms | acquisitions/s | between processes p50 / p99 | "
              "between threads of a client p50 / p99 | free acquisitions |",
              "|---|---|---|---|---|---|---|"]
        for r in self.pick("contention"):
            cross = (f"{us(r['cross_p50_us'])} / {us(r['cross_p99_us'])} ({r['cross_n']})"
                     if r["cross_n"] else "–")
            same = (f"{us(r['same_p50_us'])} / {us(r['same_p99_us'])} ({r['same_n']})"
                    if r["same_n"] else "–")
            L.append(f"| {r['masters']} | {r['procs']} proc x {r['threads']} thr, {r['strategy']} | "
                     f"{r['hold_ms']} / {r['gap_ms']} | {r['acq_per_sec']:,.0f} | {cross} | {same} | "
                     f"{r['free_acquisitions']} |")
        for r in self.pick("handoff"):
            what = {"processes": "2 processes", "threads": "2 threads",
                    "threads_direct": "2 threads, waiter woken by a condition variable "
                                      "after the unlock reply (no message)",
                    "threads_relay": "2 threads, one round trip: the holder's unlock and "
                                     "the waiter's acquire written together, the waiter "
                                     "woken by a condition variable (rlock's hand-off "
                                     "within a client)",
                    "processes_hop": "2 processes, plus the waiting side's one thread hop "
                                     "(message and acquire on one thread, the waiter "
                                     "woken on another)"}[r["between"]]
            L.append(f"| 1 | raw floor: {what} | {r['hold_ms']} / – | – | "
                     f"{us(r['handoff_p50_us'])} / {us(r['handoff_p99_us'])} ({r['handoffs']}) | | |")
        L += ["", "Counts of hand-offs in parentheses. A hand-off is timed from just before "
              "the release to the acquisition by a worker that was already waiting; an "
              "acquisition of a free lock is not one.", ""]
        for w in self.pick("watchdog"):
            L += [f"### {w['locks']:,} held watchdog locks, timeout {w['watchdog_timeout_ms']:,} ms", "",
                  f"- taken in {w['acquire_s']} s; held {w['locks_held']:,}, lost {w['locks_lost']}, "
                  f"renewal failures {w['renewal_failures']}",
                  f"- loop thread: {w['loop_cpu_ms_per_period']:,.0f} ms CPU per {w['period_ms'] / 1000:g} s "
                  f"period = {w['loop_cpu_share_of_core'] * 100:.1f}% of a core (whole process "
                  f"{w['process_cpu_share_of_core'] * 100:.1f}%), over {w['periods']:.2f} periods",
                  f"- renewal script calls per period on the master: {w['renew_calls_per_period']:,.0f} "
                  f"({w['locks_per_call']:.1f} locks per call); renewals per period "
                  f"(rlock's metric): {w['renewals_per_period']:,}",
                  f"- client memory per lock: handle {w['rss_bytes_per_handle']:,.0f} B RSS "
                  f"({w['heap_bytes_per_handle']:,.0f} B heap), hold {w['rss_bytes_per_hold']:,.0f} B "
                  f"RSS ({w['heap_bytes_per_hold']:,.0f} B heap, mallinfo2)",
                  f"- master memory per lock (two keys): {w['master_bytes_per_lock']:,.0f} B", ""]
        wk = self.pick("wakeup")
        if wk:
            L += ["### What a wake-up costs on this machine (bench_wakeup)", "",
                  "| mechanism | CPUs | sleeping for | p50 | p99 |", "|---|---|---|---|---|"]
            for r in wk:
                L.append(f"| {r['mechanism']} | {r['cpus']} | {r['gap_us']} µs | "
                         f"{us(r['p50_us'])} | {us(r['p99_us'])} |")
            L.append("")

    def physics(self):
        """What the floors themselves do: the measured costs that bound the
        targets on this machine, as sentences computed from this run."""
        L = self.lines
        wk = {(r["mechanism"], r["cpus"], r["gap_us"]): r["p50_us"] for r in self.pick("wakeup")}
        f1 = med(self.latency(1, "floor", "p50_us"))
        ping = med([r["p50_us"] for r in self.pick("ping")])
        cs, co = wk.get(("condvar_thread", "same", 1000)), wk.get(("condvar_thread", "other", 1000))
        es, eo = wk.get(("eventfd_epoll_thread", "same", 1000)), wk.get(("eventfd_epoll_thread", "other", 1000))
        L += ["## What the floors themselves cost on this machine", ""]
        if f1 and cs and co and es and eo:
            budget = 0.25 * f1
            one_cpu, two_cpus = 2 * (es + cs), 2 * (eo + co)
            L.append(
                f"- One pair at N = 1: the raw floor is {us(f1)} (two script round trips; a bare "
                f"PING takes {us(ping)}). The target allows {us(budget)} more per pair. A blocking "
                f"rlock call wakes the loop thread (eventfd + epoll: {us(es)} on the same CPU, "
                f"{us(eo)} from the other CPU) and is woken with its result (condition variable: "
                f"{us(cs)} / {us(co)}), so a pair pays four wake-ups: {us(one_cpu)} when they stay "
                f"on one CPU, {us(two_cpus)} when each crosses CPUs. "
                + ("Even on one CPU that is more than the budget: the target needs a path "
                   "without these thread crossings (or a spin that hides them)."
                   if one_cpu > budget else
                   "On one CPU that fits the budget; across CPUs it does not, so the target "
                   "needs a path that avoids cross-CPU wake-ups (or the crossings altogether)."))
        h_thr, h_dir = med(self.handoff_floor("threads")), med(self.handoff_floor("threads_direct"))
        h_rel = med(self.handoff_floor("threads_relay"))
        h_proc = med(self.handoff_floor("processes"))
        if h_thr:
            L.append(
                f"- Hand-off between threads of one client: the raw floor with the pub/sub "
                f"message (unlock, message, acquire) is {us(h_thr)}, "
                + ("above" if h_thr > 100 else "within")
                + " the 100 µs target"
                + (f"; waking the waiter with a condition variable as soon as the unlock's reply "
                   f"is in (no message) measured {us(h_dir)} raw" if h_dir else "")
                + (f", which a cross-CPU wake-up ({us(co)}) explains" if h_dir and co and h_dir > h_thr else "")
                + (f"; in one round trip (the holder's unlock and the waiter's acquire written "
                   f"together, then the condition variable) it is {us(h_rel)}, "
                   + ("above" if h_rel > 100 else "within") + " the target" if h_rel else "")
                + ".")
        for m in self.pick("floor_mux", shape="summary", threads=16):
            L.append(
                f"- 16 blocking threads over one shared connection, raw hiredis with no rlock "
                f"(bench_floor_mux, {m['rounds']} rounds): an I/O thread that writes and reads "
                f"for them all, rlock's shape, reaches {m['mux_ratio']:.2f}x the pairs/s of 16 "
                f"threads with a connection each ({rate(m['conns_pairs_per_s'])}); "
                f"leader/follower {m['leader_ratio']:.2f}x, callers writing themselves "
                f"{m['direct_ratio']:.2f}x (ratios of the medians). Rounds whose own ratio "
                f"reached the 1.3x target: " + ", ".join(
                    f"{k} {m[f'{k}_rounds_at_target']}" for k in ("mux", "leader", "direct"))
                + f" of {m['rounds']}. "
                + (f"The shared connection takes the server's CPU per pair from "
                   f"{us(m['conns_server_cpu_us_per_pair'])} to "
                   f"{us(m['mux_server_cpu_us_per_pair'])} ({m['mux_cmds_per_write']:.1f} "
                   f"commands per write); the client process spends "
                   f"{us(m['mux_cpu_us_per_pair'])} of CPU per pair against "
                   f"{us(m['conns_cpu_us_per_pair'])} and switches context "
                   f"{m['mux_csw_per_pair']:.1f} times per pair against "
                   f"{m['conns_csw_per_pair']:.1f}, each call sleeping until the I/O thread "
                   f"wakes it." if "mux_server_cpu_us_per_pair" in m else ""))
        h_hop = med(self.handoff_floor("processes_hop"))
        if h_proc:
            L.append(f"- Hand-off between processes: the raw floor is {us(h_proc)}, against a "
                     f"target of 200 µs"
                     + (f"; the same floor with the one thread hop that a client whose "
                        f"messages and replies are read by a loop thread adds on the waiting "
                        f"side (it wakes the waiting thread) is {us(h_hop)}"
                        + (", above the target" if h_hop > 200 else "") if h_hop else "")
                     + ".")
        L.append("")

    def load_section(self):
        L = self.lines
        loads = self.pick("load")
        if not loads:
            return
        busy = [r["cpu_busy"] for r in loads]
        la = [r["loadavg_1m"] for r in loads]
        L += ["## Load on the machine while measuring", "",
              f"The machine is shared with other people's builds and tests. Before each "
              f"program the CPUs were {min(busy) * 100:.0f}–{max(busy) * 100:.0f}% busy "
              f"(median {med(busy) * 100:.0f}%) with our masters idle, which is other people's "
              f"work; the 1-minute load average, which also counts this benchmark's own "
              f"threads, was {min(la):.2f}–{max(la):.2f} (median {med(la):.2f}).", "",
              "| before | load average 1 min | CPUs busy over 1 s |", "|---|---|---|"]
        for r in loads:
            L.append(f"| {r['before']} | {r['loadavg_1m']} | {r['cpu_busy'] * 100:.0f}% |")
        L.append("")

    def server_cost(self):
        """bench_server_cost: the server CPU each kind's scripts take per
        operation, as a ratio to the minimal Redisson-style pair of the same
        run; the median and the range over its runs."""
        rows = self.pick("server_cost")
        if not rows:
            return
        L = self.lines
        runs = {}
        for r in rows:
            # A group's operations are judged against the minimal ops
            # measured just before them (older results have no group).
            runs.setdefault((r["_run"], r["run"], r.get("group", "")), {})[r["op"]] = r["cpu_us"]
        # (label, ops summed, the minimal ops it is judged against, target)
        figs = [("lock+unlock", ["lock.acquire", "lock.unlock"], ["minimal.acquire", "minimal.release"], 1.3),
                ("hand-off (transfer) vs a pair", ["lock.transfer"], ["minimal.acquire", "minimal.release"], 1.6),
                ("fair lock+unlock", ["fair.acquire", "fair.unlock"], ["minimal.acquire", "minimal.release"], 1.6),
                ("read lock+unlock", ["read.acquire", "read.unlock"], ["minimal.acquire", "minimal.release"], 1.6),
                ("write lock+unlock", ["write.acquire", "write.unlock"], ["minimal.acquire", "minimal.release"], 1.6),
                ("semaphore acquire+release", ["sem.acquire", "sem.release"], ["minimal.acquire", "minimal.release"], 1.6),
                ("latch set+count_down", ["latch.set", "latch.count_down"], ["minimal.acquire", "minimal.release"], 1.6),
                ("2 locks at once, vs 2 pairs", ["multi2.acquire", "multi2.unlock"], ["minimal.acquire", "minimal.release"] * 2, 1.6),
                ("renewal of 100 holds", ["lock.renew_x100"], ["minimal.pexpire_x100"], 1.3),
                ("renewal of 100 read holds", ["read.renew_x100"], ["minimal.pexpire_x100"], 1.6)]
        L += ["## Server CPU per operation (bench_server_cost)", "",
              "Server CPU (INFO cpu, user + sys) per operation, against a minimal "
              "Redisson-style pair or 100 bare PEXPIREs in one script measured just before; "
              "median [range] over runs.", "",
              "| figure | rlock | minimal | ratio | target | met |", "|---|---|---|---|---|---|"]
        for name, ops, base, target in figs:
            a = [sum(v[o] for o in ops) for v in runs.values() if all(o in v for o in ops + base)]
            b = [sum(v[o] for o in base) for v in runs.values() if all(o in v for o in ops + base)]
            if not a:
                continue
            q = [x / y for x, y in zip(a, b)]
            L.append(f"| {name} | {med(a):.2f} µs | {med(b):.2f} µs | {med(q):.2f} "
                     f"[{min(q):.2f} - {max(q):.2f}] | <= {target}x | {'yes' if med(q) <= target else 'no'} |")
        L.append("")

    def write(self, path):
        m = self.meta
        self.lines = ["# rlock benchmark report", "",
                      f"Commit {m.get('commit', '?')}, measured {m.get('date', '?')} with "
                      f"`{m.get('command', 'scripts/bench')}` on {m.get('machine', '?')}. "
                      "Figures from a shared machine: see the load below.", ""]
        self.targets()
        self.server_cost()
        self.physics()
        self.details()
        self.load_section()
        open(path, "w").write("\n".join(self.lines) + "\n")

    # --- the chart ------------------------------------------------------

    def chart(self, outdir):
        names = []
        with open(f"{outdir}/latency.dat", "w") as f:
            for n in (1, 3, 5):
                for impl in ("floor", "rlock"):
                    rs = self.pick("latency", impl=impl, masters=n)
                    if not rs:
                        continue
                    m = med([r["p50_us"] for r in rs])
                    r = min(rs, key=lambda r: abs(r["p50_us"] - m))  # the median round
                    f.write(f"# {impl} N={n}\n")
                    for p, v in r["points"]:
                        f.write(f"{v} {p}\n")
                    f.write("\n\n")
                    names.append(f"{'raw floor' if impl == 'floor' else 'rlock'} N={n}")
        ce = med(self.ceilings())
        with open(f"{outdir}/throughput.dat", "w") as f:
            for impl, mode, cs in (("floor", "threads", (1, 4, 16, 64)),
                                   ("rlock", "threads", (1, 4, 16, 64)),
                                   ("rlock", "async", (1, 16, 64, 256))):
                f.write(f"# {impl} {mode} N=1\n")
                for c in cs:
                    v = med(self.tput(impl, mode, 1, c))
                    if v is not None:
                        f.write(f"{c} {v}\n")
                f.write("\n\n")
            f.write("# ceiling\n")
            for c in (1, 256):
                f.write(f"{c} {ce or 0}\n")
        with open(f"{outdir}/report.gp", "w") as f:
            f.write(f"""set terminal pngcairo size 1200,500 font ",10" noenhanced
set output "{outdir}/report.png"
set multiplot layout 1,2 title "rlock against raw floors measured in the same run (commit {self.meta.get('commit', '?')}, shared 2-core machine)"
set title "one lock+unlock pair, one thread (median round)"
set xlabel "µs"; set ylabel "fraction of pairs"; set logscale x; set key bottom right
plot """ + ", ".join(f'"{outdir}/latency.dat" index {i} with linespoints '
                     f'{"dashtype 2 " if n.startswith("raw") else ""}title "{n}"'
                     for i, n in enumerate(names)) + f"""
unset logscale x
set title "pairs per second, N=1 (medians)"
set xlabel "threads / requests in flight"; set ylabel "lock+unlock pairs/s"; set logscale x 2; set key below
plot "{outdir}/throughput.dat" index 0 with linespoints dashtype 2 title "raw hiredis, threads with own connections", \\
     "{outdir}/throughput.dat" index 1 with linespoints title "rlock blocking, threads", \\
     "{outdir}/throughput.dat" index 2 with linespoints title "rlock async, in flight", \\
     "{outdir}/throughput.dat" index 3 with lines dashtype 3 title "pipelined ceiling of the master"
unset multiplot
""")


def main(res, outdir):
    r = Report(load(res))
    r.write(f"{outdir}/report.md")
    r.chart(outdir)


if __name__ == "__main__":
    main(*sys.argv[1:3])
