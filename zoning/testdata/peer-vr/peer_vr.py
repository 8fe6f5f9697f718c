#!/usr/bin/python3
"""Reference zone quality for the VR table (zoning/vr_test.go).

Reads JSON cases on stdin: [{"cols": C, "rows": R, "values": [...row-major, null outside the
field or without data...], "ks": [2, ...]}, ...] and prints, for every case and k,
{"peer_vr", "peer_polygons", "kmeans_vr"}:

- peer: the practitioner's pipeline of peer_zones.py on the same pixels: scikit-learn
  KMeans(k, n_init=10, random_state=0) on the valid values, zones 1..k, then
  rasterio.features.sieve(size=10, 4-connected, mask = valid pixels); polygons are
  rasterio.features.shapes of the sieved zones (4-connected);
- kmeans: the same KMeans labels unsieved (unconstrained k-means, which no sieved map reaches).

VR = 1 - within-zone SS / total SS of the values over the valid pixels, zone means taken
over the final labels.
"""
import json, sys
import numpy as np
from rasterio.features import shapes, sieve
from sklearn.cluster import KMeans


def vr(values, labels):
    total = ((values - values.mean()) ** 2).sum()
    if total == 0:
        return 1.0
    within = 0.0
    for z in np.unique(labels):
        v = values[labels == z]
        within += ((v - v.mean()) ** 2).sum()
    return float(1 - within / total)


out = []
for case in json.load(sys.stdin):
    vals = np.array([np.nan if v is None else v for v in case["values"]], np.float64)
    vals = vals.reshape(case["rows"], case["cols"])
    ok = np.isfinite(vals)
    res = []
    for k in case["ks"]:
        km = KMeans(n_clusters=k, n_init=10, random_state=0).fit(vals[ok].reshape(-1, 1))
        order = np.argsort(km.cluster_centers_[:, 0])
        rank = np.empty(k, np.uint8)
        rank[order] = np.arange(1, k + 1)
        labels = np.zeros(vals.shape, np.uint8)
        labels[ok] = rank[km.labels_]
        sieved = sieve(labels, size=10, mask=ok)
        polys = sum(1 for _ in shapes(sieved, mask=sieved > 0))
        res.append({"k": k, "peer_vr": vr(vals[ok], sieved[ok]), "peer_polygons": polys,
                    "kmeans_vr": vr(vals[ok], labels[ok])})
    out.append(res)
json.dump(out, sys.stdout)
