#!/usr/bin/env bash
# Side-by-side run of `cropkit index` and the practitioner's pipeline
# (../shared/bench/peers/peer_stats.py: rasterio + numpy) on the same inputs:
# a full 10980² Sentinel-2-like tile with 1,000 scattered fields, indices
# ndvi, ndre, ndwi, evi. Prints wall time, CPU time and peak RSS of both, the
# speed-up, and checks that both computed the same statistics.
#
#   bench/compare_stats.sh            # DATA=/tmp/peers-data PEERS=../shared/bench/peers
#   REPS=3 bench/compare_stats.sh     # median of 3 runs each, alternating
#
# The inputs come from the peers' make_inputs.py (see its README).
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${DATA:-/tmp/peers-data}
PEERS=${PEERS:-$(cd .. && pwd)/shared/bench/peers}
REPS=${REPS:-1}
D=$DATA/tile
FIELDS=$D/fields_scattered.geojson
PY=/usr/bin/python3
# Both tools write their outputs under OUT, on tmpfs when there is one: on this VM's ext4, creating
# files right after many were deleted costs the kernel far more than the work itself, which would
# measure the disk's inode allocator rather than either tool.
TMPROOT=/tmp
[ -d /dev/shm ] && [ -w /dev/shm ] && TMPROOT=/dev/shm
OUT=$(mktemp -d "$TMPROOT/compare_stats.XXXXXX")
trap 'rm -rf "$OUT"' EXIT

[ -f "$FIELDS" ] || { echo "missing $FIELDS: build the inputs with $PEERS/make_inputs.py" >&2; exit 2; }
CROPKIT=${CROPKIT:-$OUT/cropkit}
if [ ! -x "$CROPKIT" ]; then
  go build -o "$CROPKIT" ./cmd/cropkit
fi

# run NAME CMD...: one timed run, appends "wall_s rss_mb cpu_s" to $OUT/NAME.times
run() {
  local name=$1; shift
  # Move the previous run's output aside rather than deleting it just before a timed run.
  [ -e "$OUT/$name-out" ] && mv "$OUT/$name-out" "$OUT/old-$name-$RANDOM"
  /usr/bin/time -v "$@" >"$OUT/$name.stdout" 2>"$OUT/$name.stderr" || { cat "$OUT/$name.stderr" >&2; exit 1; }
  awk -F': ' '
    /Elapsed \(wall clock\)/ { n = split($2, p, ":"); w = 0; for (i = 1; i <= n; i++) w = w * 60 + p[i] }
    /Maximum resident set size/ { rss = $2 / 1024 }
    /User time/ { u = $2 } /System time/ { s = $2 }
    END { printf "%.2f %.0f %.2f\n", w, rss, u + s }' "$OUT/$name.stderr" >>"$OUT/$name.times"
}

for _ in $(seq "$REPS"); do
  run peer "$PY" "$PEERS/peer_stats.py" "$D" "$FIELDS" ndvi ndre ndwi evi -o "$OUT/peer-out" --timings
  run cropkit "$CROPKIT" index --scene "$D" --date 2024-06-01 --fields "$FIELDS" \
    --index ndvi,ndre,ndwi,evi --out "$OUT/cropkit-out" --timings
done

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
printf '%-8s %10s %10s %12s\n' tool wall_s cpu_s peak_rss_MB
for name in peer cropkit; do
  w=$(cut -d' ' -f1 "$OUT/$name.times" | median)
  r=$(cut -d' ' -f2 "$OUT/$name.times" | median)
  c=$(cut -d' ' -f3 "$OUT/$name.times" | median)
  printf '%-8s %10s %10s %12s\n' "$name" "$w" "$c" "$r"
  eval "${name}_wall=$w"
done
awk -v p="$peer_wall" -v c="$cropkit_wall" 'BEGIN { printf "speed-up (wall): %.1fx\n", p / c }'
echo "peer steps:    $(grep -E "^[a-z+]+=[0-9.]+s" "$OUT/peer.stderr" || true)"
echo "cropkit steps: $(grep -o 'open=.*' "$OUT/cropkit.stderr" || true)"

# Same numbers? The peer computes indices in float32, cropkit in float64:
# compare counts exactly and statistics to 1e-5. Known, expected difference:
# the peer keeps pixels whose 10 m bands are DN 0 (no data) where SCL says
# clear (ndre = ndwi = −1, evi = 0 there; ndvi = 0/0 drops out); cropkit masks
# DN 0 as the spec says, so it counts fewer pixels there.
"$PY" - "$OUT/peer.stdout" "$OUT/cropkit-out" <<'PYEOF'
import json, os, sys
peer, out = sys.argv[1], sys.argv[2]
fields = compared = nodata = mismatched = 0
for line in open(peer):
    rec = json.loads(line)
    name = rec.pop("field_name")
    fields += 1
    for ix, st in rec.items():
        path = os.path.join(out, name, "2024-06-01", ix + ".json")
        if st["count"] == 0:
            mismatched += os.path.exists(path)
            continue
        if not os.path.exists(path):
            mismatched += 1
            continue
        ours = json.load(open(path))
        compared += 1
        if ours["num"] == st["count"]:
            same = all(abs(ours[k] - st[k]) <= 1e-5 for k in ("mean", "median", "std", "min", "max", "p25", "p75"))
            mismatched += not same
        elif ours["num"] < st["count"] and ix != "ndvi":
            nodata += 1
        else:
            mismatched += 1
print(f"agreement: {fields} fields, {compared} products compared, {mismatched} mismatched, "
      f"{nodata} differ only by the peer's use of DN-0 (no-data) pixels")
sys.exit(1 if mismatched else 0)
PYEOF
