#!/usr/bin/python3
"""Writes geodesic_area.json: reference areas on the WGS 84 ellipsoid by
pyproj (Karney's geodesic polygons) for GeodesicArea's test.

Run from geo/: python3 testdata/gen_area.py ../../shared/data/fields
"""
import glob
import json
import os
import sys

import pyproj
from shapely.geometry import shape, Polygon

geod = pyproj.Geod(ellps="WGS84")


def area(geom):
    return abs(geod.geometry_area_perimeter(geom)[0])


def box(x0, y0, x1, y1, step=None):
    """A lon/lat box, counter-clockwise, edges cut every step degrees."""
    def edge(a, b):
        n = 1 if step is None else max(1, round(max(abs(b[0] - a[0]), abs(b[1] - a[1])) / step))
        return [[a[0] + (b[0] - a[0]) * k / n, a[1] + (b[1] - a[1]) * k / n] for k in range(n)]
    c = [[x0, y0], [x1, y0], [x1, y1], [x0, y1]]
    ring = []
    for i in range(4):
        ring += edge(c[i], c[(i + 1) % 4])
    return ring + [ring[0]]


def synthetic():
    out = []
    # Field-sized and regional boxes at the latitudes: 1e-6.
    for lat in (0, 45, 70, 85):
        for size in (0.0001, 0.001, 0.01, 0.1, 1):
            out.append((f"box {size}° at {lat}°N", [box(10, lat, 10 + size, lat + size)], 1e-6))
            out.append((f"box {size}° at {lat}°S", [box(-60, -lat - size, -60 + size, -lat)], 1e-6))
    out.append(("field with a hole at 50°N", [box(4, 50, 4.01, 50.005), box(4.002, 50.001, 4.004, 50.002)[::-1]], 1e-6))
    # Continent-sized: 1e-4.
    for lat in (0, 45, 70):
        out.append((f"10° box at {lat}°N", [box(20, lat, 30, lat + 10)], 1e-4))
    out.append(("10° × 9° box at 80°N", [box(20, 80, 30, 89)], 1e-4))
    out.append(("30° box at 45°N, vertices every 1°", [box(-100, 30, -70, 60, step=1)], 1e-4))
    out.append(("Australia-like", [[[113, -22], [114, -26], [115, -34], [118, -35], [124, -33], [131, -31.5],
                                   [135, -35], [138, -35.5], [141, -38], [147, -39], [150, -37.5], [153, -28],
                                   [153, -25], [146, -19], [142.5, -10.7], [141.5, -17], [136, -12], [132, -11.2],
                                   [129, -15], [122, -17], [113, -22]]], 1e-4))
    return [{"name": n, "polygon": p, "area_m2": area(Polygon(p[0], p[1:])), "rel_tol": tol} for n, p, tol in out]


def fields(folder):
    out = {}
    for path in sorted(glob.glob(os.path.join(folder, "*.geojson"))):
        with open(path) as f:
            fc = json.load(f)
        out[os.path.basename(path)] = {ft["properties"]["name"]: area(shape(ft["geometry"])) for ft in fc["features"]}
    return out


json.dump({
    "source": f"pyproj {pyproj.__version__} Geod(ellps='WGS84').geometry_area_perimeter",
    "fields": fields(sys.argv[1]),
    "synthetic": synthetic(),
}, open(os.path.join(os.path.dirname(__file__), "geodesic_area.json"), "w"), indent=1)
