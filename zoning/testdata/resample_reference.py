"""Independent reference for zoning.ResampleRaster: rasterio (GDAL) warps a
GeoTIFF onto a target grid and prints the values as JSON (null = nodata).

usage: resample_reference.py SRC.tif EPSG X0 Y0 DX DY COLS ROWS average|nearest
"""
import json
import sys

import numpy as np
import rasterio
from rasterio.crs import CRS
from rasterio.transform import Affine
from rasterio.warp import Resampling, reproject

src_path, epsg, x0, y0, dx, dy, cols, rows, method = sys.argv[1:]
cols, rows = int(cols), int(rows)
dst = np.full((rows, cols), np.nan, dtype=np.float64)
with rasterio.open(src_path) as src:
    reproject(
        source=rasterio.band(src, 1),
        destination=dst,
        src_nodata=src.nodata,
        dst_nodata=np.nan,
        dst_transform=Affine(float(dx), 0, float(x0), 0, -float(dy), float(y0)),
        dst_crs=CRS.from_epsg(int(epsg)),
        resampling=Resampling[method],
    )
print(json.dumps([None if np.isnan(v) else float(v) for v in dst.ravel()]))
