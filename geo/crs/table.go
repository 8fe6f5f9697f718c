package crs

//go:generate /usr/bin/python3 gen/gen_epsg.py

import "sort"

// shiftKind says how a datum relates to WGS 84.
type shiftKind uint8

const (
	// shiftNone: equal to WGS 84 for mapping purposes (PROJ's best
	// transformation is a null one: ETRS89, NAD83, GDA94, SIRGAS, …).
	shiftNone shiftKind = iota
	// shiftHelmert: a 3- or 7-parameter Helmert to WGS 84.
	shiftHelmert
)

type datum struct {
	name    string
	a, rf   float64 // semi-major axis (m), inverse flattening
	pm      float64 // prime meridian, degrees east of Greenwich
	shift   shiftKind
	helmert [7]float64 // position vector: tx ty tz (m), rx ry rz (arc-seconds), s (ppm)
	// helmertDev is the largest distance (m) between helmert and PROJ's best
	// transformation that the generator measured over the datum's area.
	helmertDev float64
	// helmertAcc is the Helmert's accuracy as EPSG states it (m, 0 when unknown).
	helmertAcc float64
}

type method uint8

const (
	mGeographic method = iota
	mTM
	mLCC
	mAlbers
	mLAEA
	mObliqueStereo
	mPolarStereo
	mMercator
	mWebMercator
	mSwissOblique
	mObliqueMercator
	mKrovak
)

var methodNames = [...]string{
	mGeographic:      "Geographic 2D",
	mTM:              "Transverse Mercator",
	mLCC:             "Lambert Conic Conformal",
	mAlbers:          "Albers Equal Area",
	mLAEA:            "Lambert Azimuthal Equal Area",
	mObliqueStereo:   "Oblique Stereographic",
	mPolarStereo:     "Polar Stereographic",
	mMercator:        "Mercator",
	mWebMercator:     "Popular Visualisation Pseudo Mercator",
	mSwissOblique:    "Hotine Oblique Mercator (Swiss, variant B)",
	mObliqueMercator: "Hotine Oblique Mercator",
	mKrovak:          "Krovak (North Orientated)",
}

func (m method) String() string { return methodNames[m] }

type flag uint8

const (
	flagWest   flag = 1 << iota // x axis points west (south-orientated TM, west-orientated LCC)
	flagSouth                   // y axis points south
	flagLatTS                   // scale from the latitude of true scale (Mercator B, polar stereographic B)
	flagNoUOff                  // Hotine variant A: false origin at the natural origin
)

// Parameter indices of entry.p, in PROJ's terms (degrees and metres).
const (
	pLat0 = iota
	pLon0
	pLat1
	pLat2
	pK0
	pX0
	pY0
	pLatTS
	pAlpha
	pGamma
)

type entry struct {
	code   int32
	name   string
	method method
	datum  uint16
	unit   float64 // metres per axis unit (1 for geographic: degrees)
	p      [10]float64
	flags  flag
}

// find returns the table entry of an EPSG code.
func find(code int) (*entry, bool) {
	if code == 900913 { // the unofficial Google code for Web Mercator
		code = 3857
	}
	i := sort.Search(len(epsgTable), func(i int) bool { return int(epsgTable[i].code) >= code })
	if i < len(epsgTable) && int(epsgTable[i].code) == code {
		return &epsgTable[i], true
	}
	return nil, false
}
