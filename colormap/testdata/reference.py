"""Independent reference for the colormap tests (numpy + GDAL via rasterio).

  reference.py values <scene_dir> <fields.geojson> <field_name> <out_prefix>
      Computes NDVI, NDWI (green/NIR) and NIRv x 10000 in float64 from the real
      bands, crops them to the field's pixel window (pixel centres inside the
      polygon; NaN outside) and writes <out_prefix>.<index>.f64 (little-endian
      row-major). Field "ALL" is the union of all fields. Prints {"cols": .., "rows": ..}.

  reference.py check <png> <values.f64> <cols> <rows> <upscale> <start> <stop> <hex,hex,...>
      Decodes the PNG with GDAL (libpng), recomputes every pixel's colour with
      numpy (np.interp per channel over evenly spaced stops, clamped, rounded
      half up; NaN transparent) and prints the comparison as JSON.
"""
import json
import sys
import warnings

import numpy as np
import rasterio
from rasterio.features import geometry_mask
from rasterio.warp import transform_geom


def values(scene, geojson, name, prefix):
    def band(b):
        with rasterio.open(f"{scene}/{b}.tif") as src:
            return src.read(1).astype(np.float64) / 10000.0, src
    b03, _ = band("B03")
    b04, _ = band("B04")
    b08, src = band("B08")
    with open(geojson) as f:
        fc = json.load(f)
    feats = [f for f in fc["features"] if name in ("ALL", f["properties"]["name"])]
    geoms = [transform_geom("EPSG:4326", src.crs, f["geometry"]) for f in feats]
    inside = ~geometry_mask(geoms, out_shape=b08.shape, transform=src.transform, all_touched=False)
    rows = np.where(inside.any(axis=1))[0]
    cols = np.where(inside.any(axis=0))[0]
    win = (slice(rows[0], rows[-1] + 1), slice(cols[0], cols[-1] + 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        ndvi = (b08 - b04) / (b08 + b04)
        out = {
            "ndvi": ndvi,
            "ndwi": (b03 - b08) / (b03 + b08),
            "nirv": ndvi * b08 * 10000.0,
        }
    for k, v in out.items():
        v = np.where(inside, v, np.nan)[win]
        v.astype("<f8").tofile(f"{prefix}.{k}.f64")
    print(json.dumps({"cols": int(cols[-1] - cols[0] + 1), "rows": int(rows[-1] - rows[0] + 1)}))


def expected(v, start, stop, hexes):
    stops = np.array([[int(h[i:i + 2], 16) for i in (1, 3, 5)] for h in hexes], dtype=np.float64)
    xp = np.linspace(start, stop, len(hexes))
    rgb = np.stack([np.floor(np.interp(v, xp, stops[:, c]) + 0.5) for c in range(3)], axis=-1)
    nan = np.isnan(v)
    rgb[nan] = 0
    alpha = np.where(nan, 0, 255)
    return rgb.astype(np.int64), alpha


def check(png, vals, cols, rows, upscale, start, stop, hexes):
    v = np.fromfile(vals, dtype="<f8").reshape(rows, cols)
    v = np.repeat(np.repeat(v, upscale, axis=0), upscale, axis=1)
    want_rgb, want_a = expected(v, start, stop, hexes)
    with rasterio.open(png) as src:
        kind = f"{src.count} band(s) {src.dtypes[0]}"
        if src.count == 1:  # paletted: expand the colour table (alpha from tRNS)
            idx = src.read(1)
            cmap = src.colormap(1)
            lut = np.zeros((256, 4), dtype=np.int64)
            for k, c in cmap.items():
                lut[k] = c
            rgba = lut[idx]
        elif src.count == 4:
            rgba = np.moveaxis(src.read(), 0, -1).astype(np.int64)
        else:  # RGB with a tRNS colour key: GDAL reports the key as nodata
            rgb = np.moveaxis(src.read(), 0, -1).astype(np.int64)
            key = src.nodatavals
            a = np.full(rgb.shape[:2], 255)
            if key[0] is not None:
                a[np.all(rgb == np.array(key, dtype=np.int64), axis=-1)] = 0
            rgba = np.concatenate([rgb, a[..., None]], axis=-1)
        shape = (src.height, src.width)
    got_a = rgba[..., 3]
    opaque = want_a == 255
    diff = np.abs(rgba[..., :3] - want_rgb)[opaque]
    print(json.dumps({
        "kind": kind,
        "shape": list(shape),
        "alpha_equal": bool(np.array_equal(got_a, want_a)),
        "opaque": int(opaque.sum()),
        "max_diff": int(diff.max()) if diff.size else 0,
        "exact_fraction": float(np.all(diff == 0, axis=-1).mean()) if diff.size else 1.0,
    }))


if __name__ == "__main__":
    warnings.simplefilter("ignore")  # the PNG has no georeferencing
    if sys.argv[1] == "values":
        values(*sys.argv[2:6])
    else:
        a = sys.argv[2:]
        check(a[0], a[1], int(a[2]), int(a[3]), int(a[4]), float(a[5]), float(a[6]), a[7].split(","))
