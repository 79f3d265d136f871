#!/usr/bin/env python3
"""Turns the JSON lines of scripts/bench into a Markdown report and the
data and script for its gnuplot chart. Ratios compare figures measured in
the same run, so that a noisy, shared machine affects both sides alike."""
import json
import sys


def main(res, md_path, outdir, machine):
    rows = [json.loads(l) for l in open(res) if l.startswith("{")]
    lat = {(r["masters"], r["impl"]): r for r in rows if r["bench"] == "latency" and "impl" in r}
    cdf = [r for r in rows if r["bench"] == "latency_cdf"]
    tp = [r for r in rows if r["bench"] == "throughput"]
    wd = [r for r in rows if r["bench"] == "watchdog"]
    ct = [r for r in rows if r["bench"] == "contention"]
    raw1 = lat.get((1, "raw_hiredis_evalsha_x2"), {}).get("p50_us")
    lib1 = lat.get((1, "rlock"), {}).get("p50_us")
    lib5 = lat.get((5, "rlock"), {}).get("p50_us")

    def tput(impl, mode, n, c):
        for r in tp:
            if (r["impl"], r["mode"], r["masters"], r["concurrency"]) == (impl, mode, n, c):
                return r["pairs_per_s"]
        return None

    L = [f"Machine: {machine}.", "", "Command: `scripts/bench`", ""]
    L += ["| figure | rlock | baseline (same run) | ratio | target |", "|---|---|---|---|---|"]

    def row(name, a, b, unit, target, ratio=None):
        if a is None or b is None:
            return
        ratio = a / b if ratio is None else ratio
        L.append(f"| {name} | {a:,.1f} {unit} | {b:,.1f} {unit} | {ratio:.2f} | {target} |")

    row("lock+unlock p50, N=1", lib1, raw1, "µs", "≤ 1.25 × raw")
    if lib5 and lib1:
        L.append(f"| lock+unlock p50, N=5 | {lib5:,.1f} µs | N=1: {lib1:,.1f} µs | {lib5/lib1:.2f} | ≤ 1.5 × N=1 |")
    for n in (1, 5):
        p99a = lat.get((n, "rlock"), {}).get("p99_us")
        p99b = lat.get((n, "raw_hiredis_evalsha_x2"), {}).get("p99_us")
        row(f"lock+unlock p99, N={n}", p99a, p99b, "µs", "")
    for n in (1, 5):
        for c in (1, 4, 16, 64):
            row(f"blocking, {c} threads, N={n}", tput("rlock", "threads", n, c),
                tput("raw_hiredis", "threads", n, c), "pairs/s",
                "≥ 1.5 × raw" if (n, c) == (1, 16) else "")
        for c in (1, 16, 64, 256):
            row(f"async, {c} in flight, N={n}", tput("rlock", "async", n, c),
                tput("raw_hiredis", "threads", n, 16), "pairs/s",
                "≥ 2 × raw (16 thr)" if (n, c) == (1, 256) else "")
    for r in wd:
        L.append(f"| watchdog, {r['locks']:,} locks, timeout {r['watchdog_timeout_ms']} ms | "
                 f"{r['cpu_share_of_core']*100:.1f}% of a core, {r['renew_calls_per_period']:.0f} calls/period | "
                 f"locks/50 = {r['locks']/50:.0f} calls | {r['locks_per_call']:.0f} locks/call | ≤ 10% core, ≤ locks/50 |")
        if "bytes_per_lock" in r:
            L.append(f"| memory per held lock | {r['bytes_per_lock']:.0f} B | | | |")
    for r in ct:
        L.append("| contention " + ", ".join(f"{k}={v}" for k, v in r.items() if k != "bench") + " | | | | |")
    open(md_path, "w").write("\n".join(L) + "\n")

    with open(f"{outdir}/latency.dat", "w") as f:
        for r in cdf:
            f.write(f"# {r['impl']} N={r['masters']}\n")
            for p, us in r["points"]:
                f.write(f"{us} {p}\n")
            f.write("\n\n")
    with open(f"{outdir}/throughput.dat", "w") as f:
        for impl, mode in (("raw_hiredis", "threads"), ("rlock", "threads"), ("rlock", "async")):
            f.write(f"# {impl} {mode} N=1\n")
            for r in sorted((r for r in tp if r["impl"] == impl and r["mode"] == mode and r["masters"] == 1),
                            key=lambda r: r["concurrency"]):
                f.write(f"{r['concurrency']} {r['pairs_per_s']}\n")
            f.write("\n\n")
    names = [f"{r['impl']} N={r['masters']}" for r in cdf]
    with open(f"{outdir}/report.gp", "w") as f:
        f.write(f"""set terminal pngcairo size 1200,500 font ",10" noenhanced
set output "{outdir}/report.png"
set multiplot layout 1,2 title "rlock vs raw hiredis ({machine})"
set title "lock+unlock latency distribution"
set xlabel "µs"; set ylabel "fraction of pairs"; set logscale x; set key bottom right
plot """ + ", ".join(f'"{outdir}/latency.dat" index {i} with linespoints title "{n}"' for i, n in enumerate(names)) + f"""
unset logscale x
set title "throughput by concurrency, N=1"
set xlabel "threads / requests in flight"; set ylabel "lock+unlock pairs/s"; set logscale x 2; set key top left
plot "{outdir}/throughput.dat" index 0 with linespoints title "raw hiredis, threads", \\
     "{outdir}/throughput.dat" index 1 with linespoints title "rlock blocking, threads", \\
     "{outdir}/throughput.dat" index 2 with linespoints title "rlock async, in flight"
unset multiplot
""")


if __name__ == "__main__":
    main(*sys.argv[1:5])
