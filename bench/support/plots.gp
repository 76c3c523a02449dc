# The plots of docs/benchmarks.md, one per call (bench/support/report plots):
#   gnuplot -e "plot_name='names'; data='names.dat'; out='bench-names.png'" plots.gp
# Each .dat file has a comment line, a header line naming its columns, then rows.
set terminal pngcairo size 960,540 font "DejaVu Sans,11" noenhanced
set output out
set datafile missing "-"
set key autotitle columnheader
set grid ytics
set border 3
set tics nomirror

if (plot_name eq "names") {
  set title "Names mode: p50 latency per profile and verb (log scale; lower is better)"
  set ylabel "p50 (ms)"
  set logscale y
  set autoscale y
  set style data histograms
  set style histogram clustered gap 1
  set style fill solid 0.85 border -1
  set boxwidth 0.9
  set xtics rotate by -25 scale 0
  # Below the plot: inside, it covers the first bars.
  set key below horizontal
  plot data using 2:xtic(1) lc rgb "#1f77b4", '' using 3 lc rgb "#6baed6", \
       '' using 4 lc rgb "#d62728"
}

if (plot_name eq "full") {
  set title "Full mode (nodes in the request body): p50 latency against node count (log scales)"
  set xlabel "nodes in the request"
  set ylabel "p50 (ms)"
  set logscale xy
  set autoscale xfix
  set offsets graph 0.15, graph 0.15, 0, 0
  set autoscale y
  set key top left
  plot data using 1:2:xtic(1) with linespoints lw 2 pt 7 ps 1.4 lc rgb "#1f77b4", \
       '' using 1:3 with linespoints lw 2 pt 5 ps 1.4 lc rgb "#d62728", \
       '' using 1:4 with points pt 9 ps 1.8 lc rgb "#6baed6", \
       '' using 1:5 with points pt 11 ps 1.8 lc rgb "#ff9896"
}

if (plot_name eq "throughput") {
  set title "Pods bound per second by kube-scheduler (higher is better)"
  set ylabel "pods/s"
  set yrange [0:*]
  set style data histograms
  set style histogram clustered gap 1
  set style fill solid 0.85 border -1
  set boxwidth 0.9
  set xtics scale 0
  set key below horizontal
  stats data using 2 nooutput
  columns = STATS_columns
  plot for [i=2:columns] data using i:xtic(1)
}
