set terminal pngcairo size 1200,500 font ",10" noenhanced
set output "bench/results/report.png"
set multiplot layout 1,2 title "rlock against raw floors measured in the same run (commit 81120fe, shared 2-core machine)"
set title "one lock+unlock pair, one thread (median round)"
set xlabel "µs"; set ylabel "fraction of pairs"; set logscale x; set key bottom right
plot "bench/results/latency.dat" index 0 with linespoints dashtype 2 title "raw floor N=1", "bench/results/latency.dat" index 1 with linespoints title "rlock N=1", "bench/results/latency.dat" index 2 with linespoints dashtype 2 title "raw floor N=3", "bench/results/latency.dat" index 3 with linespoints title "rlock N=3", "bench/results/latency.dat" index 4 with linespoints dashtype 2 title "raw floor N=5", "bench/results/latency.dat" index 5 with linespoints title "rlock N=5"
unset logscale x
set title "pairs per second, N=1 (medians)"
set xlabel "threads / requests in flight"; set ylabel "lock+unlock pairs/s"; set logscale x 2; set key below
plot "bench/results/throughput.dat" index 0 with linespoints dashtype 2 title "raw hiredis, threads with own connections", \
     "bench/results/throughput.dat" index 1 with linespoints title "rlock blocking, threads", \
     "bench/results/throughput.dat" index 2 with linespoints title "rlock async, in flight", \
     "bench/results/throughput.dat" index 3 with lines dashtype 3 title "pipelined ceiling of the master"
unset multiplot
