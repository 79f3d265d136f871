set terminal pngcairo size 1200,500 font ",10" noenhanced
set output "bench/results/report.png"
set multiplot layout 1,2 title "rlock vs raw hiredis (2 cores, 23 GiB, Linux 6.18.44-fc-v669, v=7.0.15, masters on loopback)"
set title "lock+unlock latency distribution"
set xlabel "µs"; set ylabel "fraction of pairs"; set logscale x; set key bottom right
plot "bench/results/latency.dat" index 0 with linespoints title "rlock N=1", "bench/results/latency.dat" index 1 with linespoints title "raw_hiredis_evalsha_x2 N=1", "bench/results/latency.dat" index 2 with linespoints title "rlock N=5", "bench/results/latency.dat" index 3 with linespoints title "raw_hiredis_evalsha_x2 N=5"
unset logscale x
set title "throughput by concurrency, N=1"
set xlabel "threads / requests in flight"; set ylabel "lock+unlock pairs/s"; set logscale x 2; set key top left
plot "bench/results/throughput.dat" index 0 with linespoints title "raw hiredis, threads", \
     "bench/results/throughput.dat" index 1 with linespoints title "rlock blocking, threads", \
     "bench/results/throughput.dat" index 2 with linespoints title "rlock async, in flight"
unset multiplot
