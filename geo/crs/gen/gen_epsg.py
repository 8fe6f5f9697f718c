#!/usr/bin/python3
"""Generate geo/crs/zz_epsg_table.go and geo/crs/testdata/pyproj_reference.json
from the EPSG dataset shipped with PROJ, read through pyproj.

Run from geo/crs (go generate does that):

    /usr/bin/python3 gen/gen_epsg.py

Inputs: Debian packages python3-pyproj and proj-data (pyproj 3.4.1, PROJ 9.1.1
when the committed files were made). The library never runs this script: the
generated Go table is committed and the package stays pure Go.

Per CRS the script keeps the conversion as PROJ writes it (CRS.to_dict(): a
PROJ string with angles in degrees and false origins in metres), the
ellipsoid, the prime meridian, the axis unit and orientation, and the datum's
relation to WGS 84:

  * "none": PROJ's best available transformation to WGS 84 is a null one
    (ETRS89, NAD83, GDA94, GDA2020, NZGD2000, SIRGAS, ... for mapping purposes);
  * "helmert": a 3- or 7-parameter Helmert (stored in the position-vector
    convention). When PROJ's best transformation uses a grid, the first Helmert
    it offers is kept only if it stays within 1 m of the best transformation at
    points spread over the datum's area of use; otherwise the datum is refused.

Everything else is refused, with the reason, in the generated file's comment
and in the reference JSON's "refused" list.
"""
import json
import math
import random
import re
import sys
import warnings
from collections import Counter, OrderedDict

import pyproj
import pyproj.aoi
from pyproj import CRS, Transformer
from pyproj.database import query_crs_info
from pyproj.enums import PJType
from pyproj.transformer import TransformerGroup

warnings.simplefilter("ignore")

WGS84 = CRS.from_epsg(4326)
HELMERT_MAX_M = 0.99  # a Helmert further than this from PROJ's best is refused
SUPPORTED = {"tmerc", "utm", "lcc", "aea", "laea", "sterea", "stere", "merc", "somerc", "omerc", "longlat", "krovak"}


def geod_dist(lon1, lat1, lon2, lat2):
    g = pyproj.Geod(ellps="WGS84")
    return g.inv(lon1, lat1, lon2, lat2)[2]


def bbox_points(area, n, rng, shrink=0.25):
    """n points in the area of use's bounding box: its centre, then random ones
    in the box shrunk by shrink on each side (antimeridian-aware)."""
    w, s, e, nn = area.west, area.south, area.east, area.north
    if e < w:
        e += 360
    pts = [((w + e) / 2, (s + nn) / 2)]
    dw, dh = (e - w) * shrink, (nn - s) * shrink
    while len(pts) < n:
        pts.append((rng.uniform(w + dw, e - dw), rng.uniform(s + dh, nn - dh)))
    out = []
    for lon, lat in pts:
        lon = (lon + 180) % 360 - 180
        out.append((round(lon, 7), round(lat, 7)))
    return out


HELMERT_RE = re.compile(r"proj=helmert((?: [a-z_]+=[^ ]+)*)")


ALLOWED_STEPS = {"unitconvert", "push", "pop", "cart", "helmert", "axisswap", "noop"}


def parse_helmert(defn):
    """Position-vector 7 parameters of a pipeline that is one forward Helmert
    between Earth-centred coordinates (source ellipsoid -> WGS 84), else None."""
    steps = [st.strip() for st in defn.split(" step ")[1:]] if defn.startswith("proj=pipeline") else []
    helm = []
    for st in steps:
        inv = st.startswith("inv ")
        kv = dict(p.split("=", 1) if "=" in p else (p, "") for p in st.split() if p != "inv")
        if kv.get("proj") not in ALLOWED_STEPS:
            return None
        if kv["proj"] == "helmert":
            if inv:
                return None
            helm.append(kv)
        if kv["proj"] == "cart" and inv and kv.get("ellps") != "WGS84":
            return None
    if len(helm) != 1:
        return None
    kv = helm[0]
    if any(k in kv for k in ("t_epoch", "dx", "dy", "dz", "drx", "dry", "drz", "ds", "theta", "exact")):
        return None
    vals = [float(kv.get(k, 0)) for k in ("x", "y", "z", "rx", "ry", "rz", "s")]
    if kv.get("convention", "position_vector") == "coordinate_frame":
        vals[3:6] = [-v for v in vals[3:6]]
    elif any(v != 0 for v in vals[3:6]) and "convention" not in kv:
        return None
    if "inv proj=cart ellps=WGS84" not in defn:
        return None
    return vals


def classify_datum(geod, rng, area=None):
    """("none"|"helmert", params, max deviation m, reason). With area (a CRS's
    area of use) the candidates and test points are those of that area."""
    if geod.name == "WGS 84" or geod.to_epsg() == 4326:
        return "none", None, 0.0, "", None
    try:
        aoi = None
        if area is not None:
            aoi = pyproj.aoi.AreaOfInterest(area.west, area.south, area.east, area.north)
        tg = TransformerGroup(geod, WGS84, always_xy=True, area_of_interest=aoi)
    except Exception as e:  # noqa: BLE001
        return None, None, None, "no transformation to WGS 84 (%s)" % e, None
    if not tg.transformers:
        return None, None, None, "no available transformation to WGS 84", None
    best = tg.transformers[0]
    d = best.definition
    if "helmert" not in d and "grids=" not in d and "molodensky" not in d and "deformation" not in d:
        # A null transformation. EPSG's own null ones (ETRS89, NAD83, GDA94, ...)
        # are taken as they are; PROJ's "ballpark" fallback (no transformation
        # known) only for geocentric datums (CGCS2000, NAD83(CSRS), ITRF
        # realisations, ...), which agree with WGS 84 to a metre or two:
        # on any other ellipsoid it would be hundreds of metres off.
        if "ballpark" in best.description.lower() and abs(geod.ellipsoid.semi_major_metre - 6378137) > 2:
            return None, None, None, "no known transformation to WGS 84 (PROJ would use a ballpark null one)", None
        return "none", None, 0.0, "", None
    area = area or geod.area_of_use
    if area is None:
        return None, None, None, "datum has no area of use", None
    pts = bbox_points(area, 9, rng)
    default = Transformer.from_crs(geod, WGS84, always_xy=True)
    # Of all Helmerts PROJ offers, keep the one closest to PROJ's own choice
    # over the area (which may differ from point to point).
    found = None
    for t in tg.transformers:
        hp = parse_helmert(t.definition)
        if hp is None:
            continue
        worst = 0.0
        for lon, lat in pts:
            a = default.transform(lon, lat)
            b = t.transform(lon, lat)
            if not all(math.isfinite(v) for v in a + b):
                continue
            worst = max(worst, geod_dist(a[0], a[1], b[0], b[1]))
        if found is None or worst < found[0]:
            found = (worst, hp, t)
    if found is None:
        return None, None, None, "best transformation to WGS 84 is not a Helmert (%s)" % best.description, None
    worst, hp, t = found
    if worst <= HELMERT_MAX_M:
        return "helmert", hp + [t.accuracy if t.accuracy and t.accuracy > 0 else 0], worst, "", t.definition
    return None, None, worst, "the closest Helmert (%s) is %.2f m from PROJ's transformations over the area" % (
        t.description, worst), None


def tolerance(kind):
    return 0.005 if kind == "none" else HELMERT_MAX_M


def model_miss(kind, defn, conv, ref, unit):
    """Largest distance (m) at the reference points ref (lon, lat, x, y from
    PROJ's default EPSG:4326 -> CRS transformation) between PROJ and the
    model the table holds: the null shift or the Helmert, then the conversion
    (conv; None for a geographic CRS)."""
    if kind is None:
        return 0.0
    helm = Transformer.from_pipeline(defn) if kind == "helmert" else None
    worst = 0.0
    for lon, lat, x, y in ref:
        g = (lon, lat) if helm is None else helm.transform(lon, lat, direction="INVERSE")
        if conv is None:
            m = g
            if not all(math.isfinite(v) for v in tuple(m) + (x, y)):
                continue
            worst = max(worst, geod_dist(m[0], m[1], x, y))
            continue
        m = conv.transform(*g)
        if not all(math.isfinite(v) for v in tuple(m) + (x, y)):
            continue
        worst = max(worst, math.hypot(m[0] - x, m[1] - y) * unit)
    return worst


def conversion(c, d):
    """Method, parameters and flags in the Go table's terms, or (None, reason)."""
    proj = d.get("proj")
    if proj not in SUPPORTED:
        return None, "projection method %s (%s) not implemented" % (
            c.coordinate_operation.method_name if c.coordinate_operation else "?", proj)
    if "nadgrids" in d and proj != "merc":
        return None, "datum defined by a grid"
    if proj == "utm":
        zone = int(d["zone"])
        south = "south" in d
        d = dict(d, proj="tmerc", lat_0=0, lon_0=zone * 6 - 183, k=0.9996, x_0=500000,
                 y_0=10000000 if south else 0)
        proj = "tmerc"
    p = OrderedDict()
    p["lat0"] = float(d.get("lat_0", 0))
    p["lon0"] = float(d.get("lon_0", d.get("lonc", 0)))
    p["lat1"] = float(d.get("lat_1", p["lat0"]))
    p["lat2"] = float(d.get("lat_2", p["lat1"]))
    p["k0"] = float(d.get("k", d.get("k_0", 1)))
    p["x0"] = float(d.get("x_0", 0))
    p["y0"] = float(d.get("y_0", 0))
    p["latts"] = float(d.get("lat_ts", 78.5 if proj == "krovak" else 0))  # Krovak's pseudo standard parallel
    p["alpha"] = float(d.get("alpha", 0))
    p["gamma"] = float(d.get("gamma", p["alpha"]))
    if not 0.5 < p["k0"] < 1.5:
        # EPSG:6996/6997 carry 1.000007e-06: degenerate, and PROJ's inverse disagrees with its forward.
        return None, "implausible scale factor %g" % p["k0"]
    flags = []
    axis = d.get("axis", "enu")
    if axis not in ("enu", "wsu", "wnu", "esu"):
        return None, "axis order %s" % axis
    if axis[0] == "w":
        flags.append("flagWest")
    if axis[1] == "s":
        flags.append("flagSouth")
    method = {"tmerc": "mTM", "lcc": "mLCC", "aea": "mAlbers", "laea": "mLAEA", "sterea": "mObliqueStereo",
              "stere": "mPolarStereo", "merc": "mMercator", "somerc": "mSwissOblique", "omerc": "mObliqueMercator",
              "longlat": "mGeographic", "krovak": "mKrovak"}[proj]
    if proj == "merc" and d.get("nadgrids") == "@null":
        if float(d.get("a", 0)) != 6378137 or float(d.get("b", 0)) != 6378137:
            return None, "unusual pseudo-Mercator sphere"
        method = "mWebMercator"
    elif proj == "merc" and "lat_ts" in d:
        flags.append("flagLatTS")
    if proj == "stere":
        if abs(abs(p["lat0"]) - 90) > 1e-9:
            return None, "oblique ellipsoidal stereographic (not EPSG 9809)"
        if "lat_ts" in d:
            flags.append("flagLatTS")
    if proj == "omerc":
        if "no_uoff" in d or "no_off" in d:
            flags.append("flagNoUOff")
    if proj == "longlat":
        p = OrderedDict((k, 0.0) for k in p)
    if c.is_projected and proj != "longlat" and any(k in d for k in ("lon_1", "lon_2", "lat_3")):
        return None, "two-point form"
    return (method, p, flags), None


def main():
    rng = random.Random(15)
    # Deprecated codes too: files and farm tools still carry them (25838, 3785, ...).
    infos = query_crs_info(auth_name="EPSG", pj_types=[PJType.PROJECTED_CRS, PJType.GEOGRAPHIC_2D_CRS],
                           allow_deprecated=True)
    infos.sort(key=lambda i: int(i.code))
    seen = set()
    datums = OrderedDict()  # key -> index
    datum_rows = []
    datum_class = {}
    defaults = {}
    entries, refused = [], []
    for i in infos:
        code = int(i.code)
        if code in seen:  # listed once per area of use
            continue
        seen.add(code)
        try:
            c = CRS.from_epsg(code)
            d = c.to_dict()
        except Exception as e:  # noqa: BLE001
            refused.append((code, i.name, "pyproj cannot read it: %s" % e))
            continue
        if c.is_geographic:
            ax = c.axis_info
            if len(ax) != 2 or any(a.unit_name != "degree" for a in ax):
                refused.append((code, i.name, "geographic CRS not in degrees"))
                continue
            d = dict(d, proj="longlat")
            unit = 1.0
        else:
            ax = c.axis_info
            if len(ax) < 2 or ax[0].unit_conversion_factor != ax[1].unit_conversion_factor:
                refused.append((code, i.name, "axis units"))
                continue
            unit = ax[0].unit_conversion_factor
        conv, why = conversion(c, d)
        if conv is None:
            refused.append((code, i.name, why))
            continue
        el = c.ellipsoid
        a, rf = el.semi_major_metre, el.inverse_flattening
        if not rf or not math.isfinite(rf):
            refused.append((code, i.name, "spherical ellipsoid %s" % el.name))
            continue
        geod = c.geodetic_crs
        gkey = geod.to_wkt()
        if gkey not in datum_class:
            datum_class[gkey] = classify_datum(geod, rng)
        kind, helm, dev, why, defn = datum_class[gkey]
        pts = []
        if c.area_of_use is not None:
            pts = bbox_points(c.area_of_use, 4, rng, shrink=0.3)[1:]
        tref = Transformer.from_crs(WGS84, c, always_xy=True)
        convt = None if c.is_geographic else Transformer.from_crs(geod, c, always_xy=True)
        ref = []
        for lon, lat in pts:
            x, y = tref.transform(lon, lat)
            if math.isfinite(x) and math.isfinite(y):
                ref.append((lon, lat, x, y))
        miss = model_miss(kind, defn, convt, ref, unit)
        if (kind is None and dev is not None or miss > tolerance(kind)) and c.area_of_use is not None:
            # A datum with regional transformations: try the one PROJ prefers in this CRS's area.
            akey = (gkey, c.area_of_use.bounds)
            if akey not in datum_class:
                datum_class[akey] = classify_datum(geod, rng, c.area_of_use)
            kind, helm, dev, why, defn = datum_class[akey]
            miss = model_miss(kind, defn, convt, ref, unit)
        if kind is not None and miss > tolerance(kind):
            refused.append((code, i.name, "datum %s: PROJ's transformation inside the area of use is %.3g m from %s" % (
                geod.datum.name, miss, "a null one" if kind == "none" else "the Helmert")))
            continue
        if kind is None:
            refused.append((code, i.name, "datum %s: %s" % (geod.datum.name, why)))
            continue
        pm = c.prime_meridian.longitude if c.prime_meridian.unit_name == "degree" else None
        if pm is None:
            refused.append((code, i.name, "prime meridian unit %s" % c.prime_meridian.unit_name))
            continue
        dkey = (geod.datum.name, a, rf, pm, kind, tuple(helm or ()))
        if dkey not in datums:
            datums[dkey] = len(datum_rows)
            datum_rows.append(dict(name=geod.datum.name, a=a, rf=rf, pm=pm, kind=kind, helmert=(helm or [0] * 8)[:7], acc=(helm or [0] * 8)[7], dev=dev))
        method, p, flags = conv
        entries.append(dict(code=code, name=i.name, method=method, datum=datums[dkey], unit=unit,
                            p=list(p.values()), flags=flags, area=c.area_of_use, kind=kind,
                            ref=ref, epsg_method=(c.coordinate_operation.method_name if c.coordinate_operation else "Geographic 2D"),
                            deprecated=i.deprecated))
        print(code, method, file=sys.stderr) if code % 500 == 0 else None

    write_go(entries, datum_rows, refused)
    write_reference(entries, refused, rng)
    write_wkt_samples(entries)


AUTH_RE = re.compile(r',\s*(AUTHORITY|ID)\[[^\[\]]*\]')


def write_wkt_samples(entries):
    """ESRI and OGC WKT1 texts with every AUTHORITY removed, for the .prj
    matcher's test: every 25th code plus well-known ones."""
    keep = {2154, 27700, 28992, 31370, 2056, 3031, 3413, 3395, 2263, 26915, 3310, 5070, 2193, 3577, 7855,
            31467, 25832, 32633, 4326, 4258, 4269, 4283, 7844, 3035, 3067, 2180, 23700, 3857, 21781, 3005}
    out = []
    for n, e in enumerate(entries):
        if n % 25 and e["code"] not in keep:
            continue
        c = CRS.from_epsg(e["code"])
        for flavour in ("WKT1_ESRI", "WKT1_GDAL"):
            try:
                w = c.to_wkt(flavour)
            except Exception:  # noqa: BLE001
                continue
            if not w:
                continue
            out.append([e["code"], flavour, AUTH_RE.sub("", w)])
    with open("testdata/wkt_samples.json", "w") as f:
        f.write("[\n" + ",\n".join(json.dumps(r, ensure_ascii=False) for r in out) + "\n]\n")


def g(v):
    """Shortest exact Go float literal."""
    r = repr(float(v))
    if r.endswith(".0"):
        r = r[:-2]
    return r


def write_go(entries, datums, refused):
    out = []
    out.append("// Code generated by gen/gen_epsg.py from the EPSG dataset of PROJ %s (pyproj %s). DO NOT EDIT.\n\n"
               % (pyproj.proj_version_str, pyproj.__version__))
    out.append("package crs\n\n")
    byk = Counter(e["epsg_method"] for e in entries)
    out.append("// Codes per EPSG method:\n")
    for k, v in sorted(byk.items(), key=lambda kv: -kv[1]):
        out.append("//\t%5d %s\n" % (v, k))
    rc = Counter(r[2].split(":")[0] if r[2].startswith("datum") else r[2] for r in refused)
    out.append("//\n// Refused: %d codes (reasons in testdata/pyproj_reference.json).\n\n" % len(refused))
    out.append("// datums: name, semi-major axis (m), inverse flattening, prime meridian (° east of\n"
               "// Greenwich), shift to WGS 84 (Helmert position-vector tx, ty, tz m, rx, ry, rz\n"
               "// arc-seconds, scale ppm; all zero for datums equal to WGS 84 for mapping) and the\n"
               "// largest distance of that Helmert from PROJ's best transformation the generator measured (m)\n"
               "// and the Helmert's accuracy as EPSG states it (m, 0 when unknown).\n")
    out.append("var datums = [...]datum{\n")
    for d in datums:
        out.append('\t{%s, %s, %s, %s, %s, [7]float64{%s}, %s, %s},\n' % (
            json.dumps(d["name"]), g(d["a"]), g(d["rf"]), g(d["pm"]), "shiftHelmert" if d["kind"] == "helmert" else "shiftNone",
            ", ".join(g(v) for v in d["helmert"]), g(round(d["dev"] or 0, 3)), g(d["acc"])))
    out.append("}\n\n")
    out.append("// epsgTable is sorted by code: code, name, method, datum index, metres per unit,\n"
               "// [lat0 lon0 lat1 lat2 k0 x0 y0 latTS alpha gamma] (degrees, metres), flags.\n")
    out.append("var epsgTable = [...]entry{\n")
    for e in entries:
        fl = "|".join(e["flags"]) or "0"
        out.append('\t{%d, %s, %s, %d, %s, [10]float64{%s}, %s},\n' % (
            e["code"], json.dumps(e["name"]), e["method"], e["datum"], g(e["unit"]),
            ", ".join(g(v) for v in e["p"]), fl))
    out.append("}\n")
    with open("zz_epsg_table.go", "w") as f:
        f.write("".join(out))


def write_reference(entries, refused, rng):
    """One point per code inside its area of use, three for a spread sample
    (every code ending in 3 and every method other than TM and LCC)."""
    pts, geo = [], []
    for e in entries:
        if e["method"] == "mGeographic":
            for lon, lat, x, y in e["ref"][:1]:
                geo.append([e["code"], lon, lat, round(x, 10), round(y, 10)])
            continue
        n = 3 if e["code"] % 10 == 3 or e["method"] not in ("mTM", "mLCC") else 1
        for lon, lat, x, y in e["ref"][:n]:
            pts.append([e["code"], lon, lat, round(x, 5), round(y, 5)])
    doc = OrderedDict()
    doc["source"] = "pyproj %s, PROJ %s: Transformer.from_crs(EPSG:4326, code, always_xy=True)" % (
        pyproj.__version__, pyproj.proj_version_str)
    doc["columns"] = ["code", "lon", "lat", "x", "y"]
    doc["projected"] = pts
    doc["geographic"] = geo
    doc["refused"] = [[c, n, why] for c, n, why in refused]
    with open("testdata/pyproj_reference.json", "w") as f:
        f.write("{\n")
        keys = list(doc)
        for k in keys:
            v = doc[k]
            if isinstance(v, list) and v and isinstance(v[0], list):
                f.write('"%s": [\n' % k)
                f.write(",\n".join(json.dumps(r, ensure_ascii=False) for r in v))
                f.write("\n]")
            else:
                f.write('"%s": %s' % (k, json.dumps(v)))
            f.write(",\n" if k != keys[-1] else "\n")
        f.write("}\n")


if __name__ == "__main__":
    main()
