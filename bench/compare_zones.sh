#!/usr/bin/env bash
# Side-by-side timing of `cropkit zones` and the Python peer
# (../shared/bench/peers/peer_zones.py: scikit-learn KMeans n_init=10 +
# rasterio sieve/shapes) on the peers' 100, 1,000 and 10,000 ha fields, k = 5,
# whole processes under /usr/bin/time -v, in the same run.
#
#   bench/compare_zones.sh            # REPS=5 DATA=/tmp/peers-data/tile
#   CROPKIT=/path/to/cropkit REPS=3 bench/compare_zones.sh
#
# Inputs come from peers/make_inputs.py (see the peers README). The scenes
# carry no acquisition date, so cropkit gets one with --date. Prints one
# line per field size: median wall seconds and max RSS of each side and the
# speed-up; per-run numbers go to $OUT/runs.tsv.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${DATA:-/tmp/peers-data/tile}
PEERS=${PEERS:-$(cd .. && pwd)/shared/bench/peers}
REPS=${REPS:-5}
OUT=${OUT:-$(mktemp -d /tmp/compare-zones.XXXXXX)}
PY=${PY:-/usr/bin/python3}
if [[ -z "${CROPKIT:-}" ]]; then
	CROPKIT=$OUT/cropkit
	go build -o "$CROPKIT" ./cmd/cropkit
fi
[[ -f $DATA/B04.tif ]] || { echo "no scene in $DATA: run $PEERS/make_inputs.py" >&2; exit 1; }

# measure NAME CMD...: one run; appends "name wall_s rss_kb cpu_s" to runs.tsv (cpu: user +
# system, which a machine busy with other work inflates less than wall time).
measure() {
	local name=$1; shift
	/usr/bin/time -v -o "$OUT/time.txt" "$@" >"$OUT/stdout.txt" 2>"$OUT/stderr.txt" || {
		cat "$OUT/stderr.txt" >&2; exit 1; }
	local wall rss
	wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$OUT/time.txt")
	rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$OUT/time.txt")
	cpu=$(awk -F': ' '/User time|System time/ {s += $2} END {print s}' "$OUT/time.txt")
	printf '%s\t%s\t%s\t%s\n' "$name" "$wall" "$rss" "$cpu" >>"$OUT/runs.tsv"
}

median() { sort -n | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

: >"$OUT/runs.tsv"
printf '%-10s %12s %12s %12s %12s %8s %10s %10s %8s\n' field peer_s peer_MB cropkit_s cropkit_MB speedup peer_cpu cropkit_cpu cpu_ratio
for size in 100 1000 10000; do
	field=$DATA/field_${size}ha.geojson
	# One warm-up run each (page cache), then REPS alternating runs.
	measure warmup "$PY" "$PEERS/peer_zones.py" "$DATA" "$field" 5 -o "$OUT/peer"
	measure warmup "$CROPKIT" zones --scene "$DATA" --date 2024-06-01 --fields "$field" --zones 5 --out "$OUT/cropkit_${size}.geojson"
	for _ in $(seq "$REPS"); do
		measure "peer_$size" "$PY" "$PEERS/peer_zones.py" "$DATA" "$field" 5 -o "$OUT/peer"
		measure "cropkit_$size" "$CROPKIT" zones --scene "$DATA" --date 2024-06-01 --fields "$field" --zones 5 --out "$OUT/cropkit_${size}.geojson"
	done
	pw=$(awk -v n="peer_$size" '$1==n {print $2}' "$OUT/runs.tsv" | median)
	pm=$(awk -v n="peer_$size" '$1==n {print $3/1024}' "$OUT/runs.tsv" | median)
	cw=$(awk -v n="cropkit_$size" '$1==n {print $2}' "$OUT/runs.tsv" | median)
	cm=$(awk -v n="cropkit_$size" '$1==n {print $3/1024}' "$OUT/runs.tsv" | median)
	pc=$(awk -v n="peer_$size" '$1==n {print $4}' "$OUT/runs.tsv" | median)
	cc=$(awk -v n="cropkit_$size" '$1==n {print $4}' "$OUT/runs.tsv" | median)
	printf '%-10s %12.2f %12.0f %12.2f %12.0f %7.1fx %10.2f %10.2f %7.1fx\n' "${size}ha" "$pw" "$pm" "$cw" "$cm" \
		"$(awk -v a="$pw" -v b="$cw" 'BEGIN {print a/b}')" "$pc" "$cc" "$(awk -v a="$pc" -v b="$cc" 'BEGIN {print a/b}')"
done
echo "runs: $OUT/runs.tsv" >&2
