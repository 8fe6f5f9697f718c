package crs

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// ErrNoMatch is matched (errors.Is) by FromWKT errors: the text is not WKT,
// or no supported EPSG code matches it.
var ErrNoMatch = errors.New("no EPSG code matches the WKT")

// wktNode is one KEYWORD[arg, …] of a WKT text; args are string, float64 or *wktNode.
type wktNode struct {
	key  string
	args []any
}

// child returns the first direct child with one of the keywords.
func (n *wktNode) child(keys ...string) *wktNode {
	if n == nil {
		return nil
	}
	for _, a := range n.args {
		if c, ok := a.(*wktNode); ok {
			for _, k := range keys {
				if c.key == k {
					return c
				}
			}
		}
	}
	return nil
}

func (n *wktNode) str(i int) string {
	if n == nil || i >= len(n.args) {
		return ""
	}
	s, _ := n.args[i].(string)
	return s
}

func (n *wktNode) num(i int) (float64, bool) {
	if n == nil || i >= len(n.args) {
		return 0, false
	}
	f, ok := n.args[i].(float64)
	return f, ok
}

type wktParser struct {
	s   string
	pos int
}

func (p *wktParser) skip() {
	for p.pos < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.pos]) >= 0 {
		p.pos++
	}
}

func (p *wktParser) node(depth int) (*wktNode, error) {
	if depth > 64 {
		return nil, errors.New("nested too deeply")
	}
	p.skip()
	start := p.pos
	for p.pos < len(p.s) && (p.s[p.pos] == '_' || p.s[p.pos] >= 'A' && p.s[p.pos] <= 'Z' || p.s[p.pos] >= 'a' && p.s[p.pos] <= 'z' || p.s[p.pos] >= '0' && p.s[p.pos] <= '9') {
		p.pos++
	}
	n := &wktNode{key: strings.ToUpper(p.s[start:p.pos])}
	if n.key == "" {
		return nil, fmt.Errorf("keyword expected at %d", start)
	}
	p.skip()
	if p.pos >= len(p.s) || (p.s[p.pos] != '[' && p.s[p.pos] != '(') {
		return n, nil // a bare word such as an axis direction
	}
	closer := byte(']')
	if p.s[p.pos] == '(' {
		closer = ')'
	}
	p.pos++
	for {
		p.skip()
		if p.pos >= len(p.s) {
			return nil, errors.New("unterminated bracket")
		}
		switch c := p.s[p.pos]; {
		case c == closer:
			p.pos++
			return n, nil
		case c == ',':
			p.pos++
		case c == '"':
			var b strings.Builder
			p.pos++
			for {
				if p.pos >= len(p.s) {
					return nil, errors.New("unterminated string")
				}
				if p.s[p.pos] == '"' {
					if p.pos+1 < len(p.s) && p.s[p.pos+1] == '"' { // "" escapes a quote
						b.WriteByte('"')
						p.pos += 2
						continue
					}
					p.pos++
					break
				}
				b.WriteByte(p.s[p.pos])
				p.pos++
			}
			n.args = append(n.args, b.String())
		case c == '-' || c == '+' || c == '.' || c >= '0' && c <= '9':
			start := p.pos
			for p.pos < len(p.s) && strings.IndexByte("+-.0123456789eE", p.s[p.pos]) >= 0 {
				p.pos++
			}
			f, err := strconv.ParseFloat(p.s[start:p.pos], 64)
			if err != nil {
				return nil, fmt.Errorf("number at %d: %w", start, err)
			}
			n.args = append(n.args, f)
		default:
			c, err := p.node(depth + 1)
			if err != nil {
				return nil, err
			}
			n.args = append(n.args, c)
		}
	}
}

func parseWKT(s string) (*wktNode, error) {
	p := &wktParser{s: s}
	n, err := p.node(0)
	if err != nil {
		return nil, err
	}
	return n, nil
}

// FromWKT finds the EPSG code of a CRS written as WKT: an ESRI .prj, OGC
// WKT1 or WKT2. In order: the top-level AUTHORITY["EPSG",…] / ID["EPSG",…]
// (returned even when this package cannot transform the code); the
// projection method, parameters, unit, ellipsoid and datum matched against
// the table (several codes can share them, e.g. NAD83 and NAD83(HARN) state
// plane zones: the one whose name, then geographic CRS name, then datum
// name matches wins, then the lowest code); else the name alone, in EPSG
// spelling or the common ESRI one (WGS_1984_UTM_Zone_33N,
// ETRS_1989_UTM_Zone_32N, GCS_WGS_1984, …), checked against the ellipsoid
// when the WKT has one.
func FromWKT(wkt string) (int, error) {
	wkt = strings.TrimSpace(strings.TrimPrefix(wkt, "\ufeff"))
	root, err := parseWKT(wkt)
	if err != nil || root.str(0) == "" && root.key != "" && len(root.args) == 0 {
		return 0, fmt.Errorf("%w: %.60q is not WKT", ErrNoMatch, wkt)
	}
	if id := root.child("AUTHORITY", "ID"); id != nil && strings.EqualFold(id.str(0), "EPSG") {
		code := 0
		if f, ok := id.num(1); ok {
			code = int(f)
		} else if c, err := strconv.Atoi(strings.TrimSpace(id.str(1))); err == nil {
			code = c
		}
		if code > 0 {
			return code, nil
		}
	}
	name := root.str(0)
	var geographic bool
	switch root.key {
	case "GEOGCS", "GEOGCRS", "GEODCRS", "GEOGRAPHICCRS":
		geographic = true
	case "PROJCS", "PROJCRS", "PROJECTEDCRS":
	default:
		return 0, fmt.Errorf("%w: %s[%q] is not a projected or geographic CRS", ErrNoMatch, root.key, name)
	}
	// The numbers decide when the WKT has them: EPSG reuses a name for
	// deprecated variants with other parameters or units.
	if code, ok := matchParams(root, geographic); ok {
		return code, nil
	}
	if code, ok := matchName(name, geographic, ellipsoidOf(root, geographic)); ok {
		return code, nil
	}
	return 0, fmt.Errorf("%w: %s[%q]", ErrNoMatch, root.key, name)
}

var (
	utmNameRE = regexp.MustCompile(`(?i)^(WGS[ _]?(?:19)?84|ETRS[ _]?(?:19)?89)[ _/]+UTM[ _]zone[ _](\d{1,2})([NS])$`)
	yearRE    = regexp.MustCompile(`(?:19|20)([0-9]{2})`)
)

// normName folds the EPSG and ESRI spellings of a name together:
// "ETRS89 / UTM zone 32N" and "ETRS_1989_UTM_Zone_32N" both give "etrs89utmzone32n".
func normName(s string) string {
	s = strings.ToLower(s)
	for _, p := range []string{"gcs_", "d_"} {
		s = strings.TrimPrefix(s, p)
	}
	var b strings.Builder
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	out := yearRE.ReplaceAllString(b.String(), "$1")
	for _, w := range []string{"datum", "ensemble", "v1"} {
		out = strings.ReplaceAll(out, w, "")
	}
	return nameAliases.Replace(out)
}

// nameAliases folds ESRI's spelled-out datum names onto EPSG's abbreviations.
var nameAliases = strings.NewReplacer(
	"northamerican", "nad",
	"highaccuracyreferencenetwork", "harn",
	"nationalspatialreferencesystem", "nsrs",
	"geocentricdatumofaustralia", "gda",
	"europeanterrestrialreferencesystem", "etrs",
	"worldgeodeticsystem", "wgs",
	"reseaugeodesiquefrancais", "rgf",
	"adj", "", // ESRI's Pulkovo_1942_Adj_1958 is EPSG's Pulkovo 1942(58)
)

// ellipsoidOf returns a and 1/f of the WKT's ellipsoid, or nil without one.
func ellipsoidOf(root *wktNode, geographic bool) []float64 {
	geog := root
	if !geographic {
		geog = root.child("GEOGCS", "BASEGEOGCRS", "BASEGEODCRS")
	}
	if geog == nil {
		return nil
	}
	sph := geog.child("DATUM", "ENSEMBLE").child("SPHEROID", "ELLIPSOID")
	if sph == nil {
		sph = geog.child("ELLIPSOID")
	}
	a, okA := sph.num(1)
	rf, okF := sph.num(2)
	if !okA || !okF {
		return nil
	}
	return []float64{a, rf}
}

// matchName matches the common WGS 84 / ETRS89 names on their own, and any
// table name when the WKT's ellipsoid confirms it: a bare GEOGCS["GCS_Tokyo"]
// says too little.
func matchName(name string, geographic bool, ell []float64) (int, bool) {
	if u := utmNameRE.FindStringSubmatch(name); u != nil && !geographic {
		zone, _ := strconv.Atoi(u[2])
		if zone >= 1 && zone <= 60 {
			south := strings.EqualFold(u[3], "S")
			switch {
			case strings.HasPrefix(strings.ToUpper(u[1]), "ETRS"):
				if !south {
					return 25800 + zone, true
				}
			case south:
				return 32700 + zone, true
			default:
				return 32600 + zone, true
			}
		}
	}
	norm := normName(name)
	switch {
	case !geographic && (norm == "wgs84webmercatorauxiliarysphere" || norm == "wgs84webmercator" || norm == "wgs84pseudomercator"):
		return 3857, true
	case !geographic && (norm == "etrs89laea" || norm == "etrs89laeaeurope"):
		return 3035, true
	case geographic && (norm == "wgs84" || norm == "wgs841984"):
		return 4326, true
	case geographic && norm == "etrs89":
		return 4258, true
	}
	if ell == nil {
		return 0, false
	}
	for i := range epsgTable {
		en := &epsgTable[i]
		if (en.method == mGeographic) == geographic && normName(en.name) == norm {
			d := &datums[en.datum]
			if math.Abs(d.a-ell[0]) < 1e-3 && math.Abs(d.rf-ell[1]) < 1e-6*d.rf {
				return int(en.code), true
			}
		}
	}
	return 0, false
}

// wktMethods maps OGC and ESRI projection names (normalised) to methods.
var wktMethods = map[string][]method{
	"transversemercator": {mTM}, "gausskruger": {mTM}, "transversemercatorsouthorientated": {mTM},
	"lambertconformalconic": {mLCC}, "lambertconformalconic1sp": {mLCC}, "lambertconformalconic2sp": {mLCC},
	"albersconicequalarea": {mAlbers}, "albers": {mAlbers},
	"lambertazimuthalequalarea": {mLAEA},
	"obliquestereographic":      {mObliqueStereo}, "doublestereographic": {mObliqueStereo},
	"polarstereographic": {mPolarStereo}, "stereographicnorthpole": {mPolarStereo}, "stereographicsouthpole": {mPolarStereo},
	"mercator": {mMercator, mWebMercator}, "mercator1sp": {mMercator, mWebMercator}, "mercator2sp": {mMercator},
	"mercatorauxiliarysphere": {mWebMercator}, "popularvisualisationpseudomercator": {mWebMercator},
	"hotineobliquemercator": {mObliqueMercator, mSwissOblique}, "obliquemercator": {mObliqueMercator, mSwissOblique},
	"hotineobliquemercatorazimuthcenter":        {mObliqueMercator, mSwissOblique},
	"hotineobliquemercatorazimuthnaturalorigin": {mObliqueMercator}, "hotineobliquemercatorvariantb": {mObliqueMercator, mSwissOblique},
	"swissobliquecylindrical": {mSwissOblique},
	// WKT2 writes EPSG's method names.
	"lambertconicconformal1sp": {mLCC}, "lambertconicconformal2sp": {mLCC}, "lambertconicconformal2spmichigan": {mLCC},
	"lambertconicconformal2spbelgium": {mLCC}, "albersequalarea": {mAlbers},
	"polarstereographicvarianta": {mPolarStereo}, "polarstereographicvariantb": {mPolarStereo},
	"mercatorvarianta": {mMercator}, "mercatorvariantb": {mMercator},
	"hotineobliquemercatorvarianta": {mObliqueMercator},
	"krovak":                        {mKrovak}, "krovaknorthorientated": {mKrovak}, "rectifiedskeworthomorphicnaturalorigin": {mObliqueMercator},
	"rectifiedskeworthomorphiccenter": {mObliqueMercator},
}

// wktParams maps OGC and ESRI parameter names (normalised) to entry.p indices.
var wktParams = map[string]int{
	"latitudeoforigin": pLat0, "latitudeofcenter": pLat0, "latitudeofnaturalorigin": pLat0, "latitudeofprojectioncentre": pLat0,
	"centralmeridian": pLon0, "longitudeofcenter": pLon0, "longitudeoforigin": pLon0, "longitudeofnaturalorigin": pLon0,
	"longitudeofprojectioncentre": pLon0,
	"standardparallel1":           pLat1, "latitudeof1ststandardparallel": pLat1,
	"standardparallel2": pLat2, "latitudeof2ndstandardparallel": pLat2,
	"scalefactor": pK0, "scalefactoratnaturalorigin": pK0, "scalefactoroninitialline": pK0,
	"falseeasting": pX0, "falsenorthing": pY0, "eastingatfalseorigin": pX0, "northingatfalseorigin": pY0,
	"eastingatprojectioncentre": pX0, "northingatprojectioncentre": pY0,
	"azimuth": pAlpha, "azimuthofinitialline": pAlpha, "azimuthofcentreline": pAlpha,
	"rectifiedgridangle": pGamma, "anglefromrectifiedtoskewgrid": pGamma,
	"latitudeoffalseorigin": pLat0, "longitudeoffalseorigin": pLon0,
	"latitudeofstandardparallel": pLat1,
}

// matchParams matches a WKT definition to table entries by its numbers.
func matchParams(root *wktNode, geographic bool) (int, bool) {
	geog := root
	if !geographic {
		geog = root.child("GEOGCS", "BASEGEOGCRS", "BASEGEODCRS")
	}
	if geog == nil {
		return 0, false
	}
	dat := geog.child("DATUM", "ENSEMBLE")
	ell := ellipsoidOf(root, geographic)
	if ell == nil {
		return 0, false
	}
	a, rf := ell[0], ell[1]
	pm := 0.0
	if p := geog.child("PRIMEM"); p != nil {
		pm, _ = p.num(1)
	}
	var meth []method
	var params [10]float64
	var have, inMetres [10]bool
	unit := 1.0
	if !geographic && root.child("PARAMETER", "CONVERSION") == nil {
		return 0, false // a name and nothing else: matchName's job
	}
	if !geographic {
		if conv := root.child("CONVERSION"); conv != nil { // WKT2
			m := conv.child("METHOD")
			meth = wktMethods[normName(m.str(0))]
			for _, x := range conv.args {
				if c, ok := x.(*wktNode); ok && c.key == "PARAMETER" {
					setParam(c, &params, &have, &inMetres)
				}
			}
		} else {
			meth = wktMethods[normName(root.child("PROJECTION").str(0))]
			for _, x := range root.args {
				if c, ok := x.(*wktNode); ok && c.key == "PARAMETER" {
					setParam(c, &params, &have, &inMetres)
				}
			}
		}
		u := root.child("UNIT", "LENGTHUNIT")
		if u == nil { // WKT2 puts the unit in each axis
			u = root.child("AXIS").child("LENGTHUNIT")
		}
		if f, ok := u.num(1); ok && f > 0 {
			unit = f
		}
		if len(meth) == 0 {
			return 0, false
		}
	}
	if !have[pK0] {
		params[pK0] = 1
	}
	if !have[pLat1] {
		params[pLat1] = params[pLat0]
	}
	if !have[pLat2] {
		params[pLat2] = params[pLat1]
	}
	if !have[pGamma] {
		params[pGamma] = params[pAlpha]
	}
	for _, i := range [...]int{pX0, pY0} {
		if !inMetres[i] {
			params[i] *= unit
		}
	}

	geogName, datName, fullName := normName(geog.str(0)), normName(dat.str(0)), normName(root.str(0))
	best, bestScore := 0, -1
	for i := range epsgTable {
		en := &epsgTable[i]
		if geographic != (en.method == mGeographic) || (!geographic && !containsMethod(meth, en.method)) {
			continue
		}
		d := &datums[en.datum]
		if math.Abs(d.a-a) > 1e-3 || math.Abs(d.rf-rf) > 1e-6*rf || math.Abs(d.pm-pm) > 1e-7 {
			continue
		}
		if !geographic && (math.Abs(en.unit-unit) > 1e-9*unit || !sameParams(en, params, have)) {
			continue
		}
		score := 0
		if normName(en.name) == fullName {
			score += 8
		}
		// ESRI names often drop what EPSG appends ("Corrego_Alegre" for
		// "Corrego Alegre 1970-72"): a prefix counts, less than equality.
		prefix, _, _ := strings.Cut(en.name, " / ")
		score += 2 * nameScore(normName(prefix), geogName)
		score += nameScore(normName(d.name), datName)
		if score > bestScore {
			best, bestScore = int(en.code), score
		}
	}
	if geographic && bestScore < 1 {
		return 0, false // an ellipsoid alone does not name a datum
	}
	return best, best != 0
}

// nameScore is 2 for equal names, 1 when one is a prefix of the other.
func nameScore(a, b string) int {
	switch {
	case a == "" || b == "":
		return 0
	case a == b:
		return 2
	case strings.HasPrefix(a, b) || strings.HasPrefix(b, a):
		return 1
	}
	return 0
}

func containsMethod(ms []method, m method) bool {
	for _, x := range ms {
		if x == m {
			return true
		}
	}
	return false
}

// setParam reads one PARAMETER; a WKT2 length with its own LENGTHUNIT is
// converted to metres here.
func setParam(c *wktNode, params *[10]float64, have, inMetres *[10]bool) {
	i, ok := wktParams[normName(c.str(0))]
	if !ok {
		return
	}
	v, ok := c.num(1)
	if !ok {
		return
	}
	if u := c.child("LENGTHUNIT"); u != nil {
		if f, ok := u.num(1); ok && f > 0 {
			v, inMetres[i] = v*f, true
		}
	}
	params[i], have[i] = v, true
}

// sameParams compares WKT parameters with a table entry's, angles to
// 1e-7°, lengths to 1 mm, scales to 1e-9; parameters the WKT leaves out
// must have their default values (0, or 1 for the scale).
func sameParams(en *entry, p [10]float64, have [10]bool) bool {
	q := en.p
	switch en.method {
	case mPolarStereo:
		// WKT1 names variant B's latitude of true scale latitude_of_origin,
		// ESRI standard_parallel_1.
		if en.flags&flagLatTS != 0 {
			ts := p[pLat0]
			if have[pLat1] {
				ts = p[pLat1]
			}
			return near(ts, q[pLatTS], 1e-7) && near(p[pLon0], q[pLon0], 1e-7) && near(p[pX0], q[pX0], 1e-3) && near(p[pY0], q[pY0], 1e-3)
		}
		return near(math.Abs(p[pLat0]), 90, 1e-7) && near(p[pK0], q[pK0], 1e-9) && near(p[pLon0], q[pLon0], 1e-7) &&
			near(p[pX0], q[pX0], 1e-3) && near(p[pY0], q[pY0], 1e-3)
	case mMercator:
		k := p[pK0]
		if have[pLat1] && en.flags&flagLatTS != 0 {
			return near(p[pLat1], q[pLatTS], 1e-7) && near(p[pLon0], q[pLon0], 1e-7) && near(p[pX0], q[pX0], 1e-3) && near(p[pY0], q[pY0], 1e-3)
		}
		return near(k, q[pK0], 1e-9) && near(p[pLon0], q[pLon0], 1e-7) && near(p[pX0], q[pX0], 1e-3) && near(p[pY0], q[pY0], 1e-3)
	case mWebMercator:
		return near(p[pLon0], q[pLon0], 1e-7) && near(p[pX0], q[pX0], 1e-3) && near(p[pY0], q[pY0], 1e-3)
	case mLCC, mAlbers:
		s1, s2 := q[pLat1], q[pLat2]
		return near(p[pLat0], q[pLat0], 1e-7) && near(p[pLon0], q[pLon0], 1e-7) && near(p[pK0], q[pK0], 1e-9) &&
			(near(p[pLat1], s1, 1e-7) && near(p[pLat2], s2, 1e-7) || near(p[pLat1], s2, 1e-7) && near(p[pLat2], s1, 1e-7)) &&
			near(p[pX0], q[pX0], 1e-3) && near(p[pY0], q[pY0], 1e-3)
	case mObliqueMercator, mSwissOblique:
		ok := near(p[pLat0], q[pLat0], 1e-7) && near(p[pLon0], q[pLon0], 1e-7) && near(p[pK0], q[pK0], 1e-9) &&
			near(p[pX0], q[pX0], 1e-3) && near(p[pY0], q[pY0], 1e-3)
		if en.method == mObliqueMercator {
			ok = ok && near(p[pAlpha], q[pAlpha], 1e-7)
		}
		return ok
	}
	return near(p[pLat0], q[pLat0], 1e-7) && near(p[pLon0], q[pLon0], 1e-7) && near(p[pK0], q[pK0], 1e-9) &&
		near(p[pX0], q[pX0], 1e-3) && near(p[pY0], q[pY0], 1e-3)
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }
