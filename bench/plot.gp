# bench/plot.gp: the charts of bench/RESULTS.md, from bench/out (all.sh).
# gnuplot -e "out='bench/out'" bench/plot.gp
set terminal pngcairo size 1000,500 font "sans,11"
set datafile separator whitespace

# Task cost: the agentbox steps stacked, against the two references.
system(sprintf("awk '/^floor /{f=$3} /^cli /{c=$3} /^api2 /{a=$3} /^step /{s[$2]=$4} END { \
print \"floor\", f, 0, 0, 0, 0, 0, 0; \
print \"engine,2-lifecycles\", a, 0, 0, 0, 0, 0, 0; \
print \"docker-CLI\", c, 0, 0, 0, 0, 0, 0; \
print \"agentbox\", 0, s[\"ab-alloc\"], s[\"ab-seed\"], s[\"ab-profile\"], \
s[\"ab-validate\"], s[\"ab-run\"], s[\"ab-clean\"] }' %s/task.txt > %s/task.dat", out, out))
set output "bench/task-cost.png"
set title "One task with the agent true (median seconds)"
set style data histograms
set style histogram rowstacked
set style fill solid 0.8 border -1
set boxwidth 0.6
set ylabel "seconds"
set key outside right
plot sprintf("%s/task.dat", out) using 2:xtic(1) title "whole", \
	'' using 3 title "ab-alloc", '' using 4 title "ab-seed", \
	'' using 5 title "ab-profile", '' using 6 title "ab-validate", \
	'' using 7 title "ab-run", '' using 8 title "ab-clean"

# Seeding time against repository size, both ways.
system(sprintf("awk '$1 ~ /^[0-9]+$/ {print $1, $2, $5}' %s/seed.txt > %s/seed.dat", out, out))
set output "bench/seed-scaling.png"
set title "Seeding N files (median seconds)"
set style data linespoints
set xrange [500:200000]
set logscale xy
set xlabel "files"
set ylabel "seconds"
set key inside top left
plot sprintf("%s/seed.dat", out) using 1:2 title "ab-seed", \
	'' using 1:3 title "git archive | docker cp, docker cp of a bare clone"
