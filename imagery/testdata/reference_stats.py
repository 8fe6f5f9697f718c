#!/usr/bin/python3
"""Independent reference for imagery's field statistics (rasterio + numpy + pyproj).

    /usr/bin/python3 reference_stats.py DATA_DIR > reference_stats.json

DATA_DIR is ../shared/data. For each scene below and each field of its place, this
computes every index of imagery's catalogue the way the imagery package documents it,
but with other code: rasterio/GDAL reading and rasterization, numpy arithmetic.

- field: EPSG:4326 polygon → scene CRS (rasterio.warp.transform_geom), pixels whose
  centre lies inside (rasterio.features.rasterize, all_touched=False) on the window
  floor/ceil of the projected bounds (clipped to the scene), then trimmed to the rows
  and columns that hold field pixels;
- coarser bands and SCL: the pixel holding each 10 m pixel centre (nearest neighbour);
- reflectance DN/10000 in float64 (every file says REFLECTANCE_OFFSET=0);
- not usable: SCL in {0,1,3,8,9,10,11}, or CLM == 1, or DN 0 in a band the index uses,
  or a non-finite index value;
- stats: float64 mean, median, population std, min, max, numpy 'linear' p25/p75, num;
  field_pixels; cloud_cover = 100 * masked field pixels / field_pixels (mask or DN 0).
"""
import json, math, os, sys
import numpy as np
import rasterio
from rasterio.features import rasterize
from rasterio.warp import transform_geom

SCENES = [
    ("flanders-31UES", "2019-06-20"),  # clear: the README's reference table
    ("flanders-31UES", "2018-08-19"),  # partly cloudy (SCL)
    ("flanders-31UDS", "2017-08-14"),  # partly cloudy (SCL), other chip
    ("slovenia-eolearn", "2015-07-11"),  # CLM, non-pixel-aligned polygons
    ("slovenia-eolearn", "2015-08-30"),  # CLM
]
MASKED_SCL = [0, 1, 3, 8, 9, 10, 11]

INDICES = {
    "ndvi": (("B08", "B04"), lambda n, r: (n - r) / (n + r)),
    "ndwi": (("B08", "B11"), lambda n, s: (n - s) / (n + s)),
    "chi": (("B08", "B05"), lambda n, e: n / e - 1),
    "ndre": (("B08", "B05"), lambda n, e: (n - e) / (n + e)),
    "savi": (("B08", "B04"), lambda n, r: 1.428 * (n - r) / (n + r + 0.428)),
    "lai": (("B08", "B04"), lambda n, r: 10.22 * (n - 0.460 * r) + 0.4768),
    "evi": (("B08", "B04", "B02"), lambda n, r, b: 2.5 * (n - r) / (n + 6 * r - 7.5 * b + 1)),
    "nirv": (("B08", "B04"), lambda n, r: (n - r) / (n + r) * n * 10000),
    "gndvi": (("B08", "B03"), lambda n, g: (n - g) / (n + g)),
    "msavi2": (("B08", "B04"), lambda n, r: (2 * n + 1 - np.sqrt((2 * n + 1) ** 2 - 8 * (n - r))) / 2),
    "osavi": (("B08", "B04"), lambda n, r: (n - r) / (n + r + 0.16)),
    "cigreen": (("B08", "B03"), lambda n, g: n / g - 1),
    "ndmi": (("B8A", "B11"), lambda a, s: (a - s) / (a + s)),
}


def on_grid(path, ref, win):
    """Band values on the 10 m window: each pixel takes the band pixel holding its centre."""
    with rasterio.open(path) as ds:
        data = ds.read(1)
        inv = ~ds.transform
        c0, r0, nc, nr = win
        cols = np.arange(c0, c0 + nc) + 0.5
        rows = np.arange(r0, r0 + nr) + 0.5
        xs = ref.transform.c + cols * ref.transform.a
        ys = ref.transform.f + rows * ref.transform.e
        bc = np.floor((xs - ds.transform.c) / ds.transform.a).astype(int)
        br = np.floor((ys - ds.transform.f) / ds.transform.e).astype(int)
        return data[np.ix_(br, bc)]


def stats(v):
    p25, med, p75 = np.percentile(v, [25, 50, 75])
    return dict(mean=float(v.mean()), median=float(med), std=float(v.std()), min=float(v.min()),
                max=float(v.max()), p25=float(p25), p75=float(p75), num=int(v.size))


def main():
    data = sys.argv[1]
    out = {}
    for place, date in SCENES:
        sdir = os.path.join(data, "s2", place, date)
        with open(os.path.join(data, "fields", place + ".geojson")) as f:
            feats = json.load(f)["features"]
        ref = rasterio.open(os.path.join(sdir, "B04.tif"))
        scene = {}
        for feat in feats:
            name = feat["properties"].get("field_name") or feat["properties"]["name"]
            geom = transform_geom("EPSG:4326", ref.crs, feat["geometry"])
            xs, ys = [], []
            for poly in (geom["coordinates"] if geom["type"] == "MultiPolygon" else [geom["coordinates"]]):
                for ring in poly:
                    for x, y in ring:
                        xs.append(x)
                        ys.append(y)
            t = ref.transform
            c0 = max(0, math.floor((min(xs) - t.c) / t.a))
            c1 = min(ref.width, math.ceil((max(xs) - t.c) / t.a))
            r0 = max(0, math.floor((t.f - max(ys)) / -t.e))
            r1 = min(ref.height, math.ceil((t.f - min(ys)) / -t.e))
            win = (c0, r0, c1 - c0, r1 - r0)
            wt = rasterio.windows.transform(rasterio.windows.Window(c0, r0, c1 - c0, r1 - r0), t)
            inside = rasterize([geom], out_shape=(win[3], win[2]), transform=wt, all_touched=False,
                               dtype="uint8").astype(bool)
            # Trim the window to the rows and columns holding field pixels.
            rows_in, cols_in = np.nonzero(inside.any(axis=1))[0], np.nonzero(inside.any(axis=0))[0]
            inside = inside[rows_in[0]:rows_in[-1] + 1, cols_in[0]:cols_in[-1] + 1]
            win = (c0 + int(cols_in[0]), r0 + int(rows_in[0]), inside.shape[1], inside.shape[0])
            if os.path.exists(os.path.join(sdir, "SCL.tif")):
                clear = ~np.isin(on_grid(os.path.join(sdir, "SCL.tif"), ref, win), MASKED_SCL)
            else:
                clear = on_grid(os.path.join(sdir, "CLM.tif"), ref, win) != 1
            rec = {"window": list(win), "field_pixels": int(inside.sum())}
            for ix, (bands, fn) in INDICES.items():
                dn = [on_grid(os.path.join(sdir, b + ".tif"), ref, win).astype(np.float64) for b in bands]
                with np.errstate(divide="ignore", invalid="ignore"):
                    v = fn(*[d / 10000 for d in dn])
                usable = inside & clear
                for d in dn:
                    usable &= d != 0
                masked = int((inside & ~usable).sum())
                ok = usable & np.isfinite(v)
                if ok.sum() == 0:
                    rec[ix] = None
                    continue
                s = stats(v[ok])
                s["cloud_cover"] = 100 * masked / rec["field_pixels"]
                rec[ix] = s
            scene[name] = rec
        out[place + "/" + date] = scene
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
