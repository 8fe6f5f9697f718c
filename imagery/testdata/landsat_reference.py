"""Independent Landsat field statistics and a Collection 1 -> 2 conversion
(rasterio + numpy + shapely + pyproj).

usage:
  landsat_reference.py convert SRC_C1_DIR DST_DIR
      writes a Collection 2 Level-2 folder (blue, green, red, nir08, swir16,
      swir22, qa_pixel .tif) from the shared Collection 1 one: DN2 =
      round((DN1 * 1e-4 + 0.2) / 2.75e-5), 0 stays 0 (fill); pixel_qa bits
      moved to QA_PIXEL positions (fill 0, cloud 5->3, shadow 3->4, snow 4->5,
      clear 1->6, water 2->7, cirrus confidence high (bits 8-9 = 3) -> cirrus 2).
  landsat_reference.py stats FIELDS.geojson C1|C2 DIR [DIR ...]
      ndvi, ndwi, evi, gndvi, ndmi per field. Reflectance = DN*1e-4 (C1) or
      DN*2.75e-5 - 0.2 (C2), then MSI = (OLI - offset)/slope with HLS's
      MSI->OLI coefficients; usable pixel: centre strictly inside the field,
      QA none of fill/dilated cloud/cirrus/cloud/shadow/snow (C2 bits 0-5;
      C1 bits 0,3,4,5 or cirrus confidence high) and no band DN 0.
"""
import json
import os
import sys

import numpy as np
import rasterio
from pyproj import Transformer
from shapely.geometry import Point, shape
from shapely.ops import transform

C1_NAMES = {"blue": "B02", "green": "B03", "red": "B04", "nir08": "B05", "swir16": "B06", "swir22": "B07"}
HLS = {"blue": (0.9778, -0.004), "green": (1.0053, -0.0009), "red": (0.9765, 0.0009),
       "nir08": (0.9983, -0.0001), "swir16": (0.9987, -0.0011), "swir22": (1.003, -0.0012)}


def convert(src, dst):
    os.makedirs(dst, exist_ok=True)
    for key, c1 in C1_NAMES.items():
        with rasterio.open(os.path.join(src, c1 + ".tif")) as r:
            dn = r.read(1).astype(np.float64)
            prof = r.profile
        out = np.where(dn == 0, 0, np.round((dn * 1e-4 + 0.2) / 2.75e-5)).astype(np.uint16)
        prof.update(dtype="uint16", nodata=0)
        with rasterio.open(os.path.join(dst, key + ".tif"), "w", **prof) as w:
            w.write(out, 1)
    with rasterio.open(os.path.join(src, "QA_PIXEL_C1.tif")) as r:
        q = r.read(1).astype(np.uint32)
        prof = r.profile
    bit = lambda v, b: (v >> b) & 1
    c2 = (bit(q, 0) << 0) | (bit(q, 5) << 3) | (bit(q, 3) << 4) | (bit(q, 4) << 5) | \
         (bit(q, 1) << 6) | (bit(q, 2) << 7) | ((((q >> 8) & 3) == 3).astype(np.uint32) << 2)
    prof.update(dtype="uint16", nodata=1)
    with rasterio.open(os.path.join(dst, "qa_pixel.tif"), "w", **prof) as w:
        w.write(c2.astype(np.uint16), 1)


def read_scene(d, coll):
    bands = {}
    for key, c1 in C1_NAMES.items():
        name = c1 if coll == "C1" else key
        with rasterio.open(os.path.join(d, name + ".tif")) as r:
            dn = r.read(1).astype(np.float64)
            tr, epsg = r.transform, r.crs.to_epsg()
        refl = dn * 1e-4 if coll == "C1" else dn * 2.75e-5 - 0.2
        slope, off = HLS[key]
        msi = (refl - off) / slope
        msi[dn == 0] = np.nan
        bands[key] = msi
    qname = "QA_PIXEL_C1.tif" if coll == "C1" else "qa_pixel.tif"
    with rasterio.open(os.path.join(d, qname)) as r:
        q = r.read(1).astype(np.uint32)
    if coll == "C1":
        usable = ((q & 0b111001) == 0) & (((q >> 8) & 3) != 3)
    else:
        usable = (q & 0b111111) == 0
    return bands, usable, tr, epsg


def stats(v):
    v = v[np.isfinite(v)]
    if v.size == 0:
        return None
    return {"num": int(v.size), "mean": float(v.mean()), "median": float(np.percentile(v, 50)),
            "p25": float(np.percentile(v, 25)), "p75": float(np.percentile(v, 75)),
            "min": float(v.min()), "max": float(v.max()), "std": float(v.std())}


def field_stats(fields_path, coll, dirs):
    fields = json.load(open(fields_path))["features"]
    out = {}
    for d in dirs:
        b, usable, tr, epsg = read_scene(d, coll)
        to_utm = Transformer.from_crs(4326, epsg, always_xy=True).transform
        rows, cols = usable.shape
        xs = tr.c + (np.arange(cols) + 0.5) * tr.a
        ys = tr.f + (np.arange(rows) + 0.5) * tr.e
        nir, red, blue, green, sw1 = b["nir08"], b["red"], b["blue"], b["green"], b["swir16"]
        idx = {
            "ndvi": (nir - red) / (nir + red),
            "ndwi": (nir - sw1) / (nir + sw1),
            "evi": 2.5 * (nir - red) / (nir + 6 * red - 7.5 * blue + 1),
            "gndvi": (nir - green) / (nir + green),
            "ndmi": (nir - sw1) / (nir + sw1),
        }
        per = {}
        for f in fields:
            poly = transform(to_utm, shape(f["geometry"]))
            inside = np.array([[poly.contains(Point(x, y)) for x in xs] for y in ys])
            ok = inside & usable
            per[f["properties"]["name"]] = {"field_pixels": int(inside.sum()),
                                            **{k: stats(np.where(ok, v, np.nan)[inside]) for k, v in idx.items()}}
        out[d] = per
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    if sys.argv[1] == "convert":
        convert(sys.argv[2], sys.argv[3])
    else:
        field_stats(sys.argv[2], sys.argv[3], sys.argv[4:])
