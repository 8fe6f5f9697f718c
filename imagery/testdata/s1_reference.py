"""Independent Sentinel-1 field statistics (rasterio + numpy + shapely + pyproj).

usage: s1_reference.py FIELDS.geojson SCENE_DIR [SCENE_DIR ...]
       s1_reference.py linear SRC_DIR DST_DIR
           writes VV.tif and VH.tif as float32 linear power (10^(dB/10)),
           nodata -32768 and no VALUE_* items, as Planetary Computer's
           sentinel-1-rtc serves them.

A pixel belongs to a field iff its centre lies strictly inside the polygon
(tested in the raster CRS). Values: int DN x VALUE_SCALE in VALUE_UNIT (dB or
linear power), nodata excluded. Indices: vv, vh (dB), vh_vv (dB of VH/VV),
rvi = 4 VH / (VV + VH) on linear power. dB indices: mean = 10 log10(mean of
the linear quantity); median, p25, p75, min, max order statistics of the
per-pixel dB values (numpy's linear percentiles); std population std of dB.
rvi: plain statistics. Prints JSON {scene: {field: {index: stats}}}.
"""
import json
import os
import sys

import numpy as np
import rasterio
from pyproj import Transformer
from shapely.geometry import Point, shape
from shapely.ops import transform


def read(path):
    with rasterio.open(path) as r:
        a = r.read(1).astype(np.float64)
        tags = r.tags()
        valid = a != (r.nodata if r.nodata is not None else 0)
        scale = float(tags.get("VALUE_SCALE", "1"))
        v = a * scale
        if tags.get("VALUE_UNIT", "").lower() == "db":
            lin = 10.0 ** (v / 10.0)
        else:
            lin = v
        lin[~valid] = np.nan
        return lin, r.transform, r.crs.to_epsg()


def stats(values, lin=None):
    v = values[np.isfinite(values)]
    if v.size == 0:
        return None
    mean = float(v.mean()) if lin is None else float(10 * np.log10(lin[np.isfinite(values)].mean()))
    return {
        "num": int(v.size), "mean": mean, "median": float(np.percentile(v, 50)),
        "p25": float(np.percentile(v, 25)), "p75": float(np.percentile(v, 75)),
        "min": float(v.min()), "max": float(v.max()), "std": float(v.std()),
    }


def main():
    fields = json.load(open(sys.argv[1]))["features"]
    out = {}
    for scene in sys.argv[2:]:
        vv, tr, epsg = read(os.path.join(scene, "VV.tif"))
        vh, _, _ = read(os.path.join(scene, "VH.tif"))
        to_utm = Transformer.from_crs(4326, epsg, always_xy=True).transform
        rows, cols = vv.shape
        xs = tr.c + (np.arange(cols) + 0.5) * tr.a
        ys = tr.f + (np.arange(rows) + 0.5) * tr.e
        per = {}
        for f in fields:
            poly = transform(to_utm, shape(f["geometry"]))
            inside = np.array([[poly.contains(Point(x, y)) for x in xs] for y in ys])
            sel_vv, sel_vh = vv[inside], vh[inside]
            ratio = sel_vh / sel_vv
            per[f["properties"]["name"]] = {
                "field_pixels": int(inside.sum()),
                "vv": stats(10 * np.log10(sel_vv), sel_vv),
                "vh": stats(10 * np.log10(sel_vh), sel_vh),
                "vh_vv": stats(10 * np.log10(ratio), ratio),
                "rvi": stats(4 * sel_vh / (sel_vv + sel_vh)),
            }
        out[scene] = per
    json.dump(out, sys.stdout)


def linear(src, dst):
    os.makedirs(dst, exist_ok=True)
    for pol in ("VV", "VH"):
        with rasterio.open(os.path.join(src, pol + ".tif")) as r:
            a = r.read(1).astype(np.float64)
            prof = r.profile
            scale = float(r.tags().get("VALUE_SCALE", "1"))
        lin = np.where(a == 0, -32768, 10.0 ** (a * scale / 10.0)).astype(np.float32)
        prof.update(dtype="float32", nodata=-32768)
        with rasterio.open(os.path.join(dst, pol + ".tif"), "w", **prof) as w:
            w.write(lin, 1)


if __name__ == "__main__":
    if sys.argv[1] == "linear":
        linear(sys.argv[2], sys.argv[3])
    else:
        main()
