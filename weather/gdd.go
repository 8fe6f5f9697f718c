package weather

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Thresholds of the day counts.
const (
	// FrostBelowC: a frost day has Tmin < FrostBelowC.
	FrostBelowC = 0.0
	// HeatAboveC: a heat day has Tmax > HeatAboveC.
	HeatAboveC = 30.0
)

// Crop is a crop's thermal-time temperatures. CapC is nil for crops whose
// development is not capped.
type Crop struct {
	Name  string
	BaseC float64
	CapC  *float64
}

func ptr(x float64) *float64 { return &x }

// crops is the table of Crops (names as CropByName normalises them).
var crops = []Crop{
	{Name: "maize", BaseC: 10, CapC: ptr(30)},
	{Name: "winter wheat", BaseC: 0, CapC: ptr(26)},
	{Name: "winter barley", BaseC: 0, CapC: ptr(26)},
	{Name: "barley", BaseC: 0, CapC: ptr(26)},
	{Name: "wheat", BaseC: 0, CapC: ptr(26)},
	{Name: "sugar beet", BaseC: 3},
	{Name: "potato", BaseC: 7},
	{Name: "grassland", BaseC: 5},
}

// cropAliases spell common names of the same crops (LPIS and metadata
// crop_type values).
var cropAliases = map[string]string{
	"corn": "maize", "grain maize": "maize", "silage maize": "maize", "fodder maize": "maize",
	"spring barley": "barley", "spring wheat": "wheat",
	"sugar beets": "sugar beet", "sugarbeet": "sugar beet", "sugarbeets": "sugar beet", "beet": "sugar beet",
	"potatoes": "potato",
	"grass":    "grassland", "permanent grassland": "grassland", "temporary grassland": "grassland", "pasture": "grassland", "meadow": "grassland",
}

// Crops is the crop table, by name.
func Crops() []Crop {
	out := make([]Crop, len(crops))
	for i, c := range crops {
		out[i] = c
		if c.CapC != nil {
			out[i].CapC = ptr(*c.CapC)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// NormaliseCrop spells a crop name as the table does: lower case, "_" and
// "-" as spaces, single spaces, aliases resolved ("Sugar_Beets" → "sugar beet").
func NormaliseCrop(name string) string {
	n := strings.ToLower(strings.TrimSpace(name))
	n = strings.NewReplacer("_", " ", "-", " ").Replace(n)
	n = strings.Join(strings.Fields(n), " ")
	if a, ok := cropAliases[n]; ok {
		return a
	}
	return n
}

// CropByName finds a crop of the table (see NormaliseCrop); ok is false
// for crops it does not list.
func CropByName(name string) (Crop, bool) {
	n := NormaliseCrop(name)
	for _, c := range Crops() {
		if c.Name == n {
			return c, true
		}
	}
	return Crop{}, false
}

// Params are the temperatures of one GDD computation.
type Params struct {
	Crop  string   // the name reported: the crop as given (trimmed)
	BaseC float64  // Tbase
	CapC  *float64 // Tcap; nil: no cap
}

// ParamsFor resolves a crop and per-request overrides: the table's base
// and cap for a known crop, replaced by base and cap when not nil. A crop
// missing from the table needs base (cap stays optional). Infinite or NaN
// temperatures and a cap not above the base are refused.
func ParamsFor(crop string, base, capC *float64) (Params, error) {
	p := Params{Crop: strings.TrimSpace(crop)}
	c, known := CropByName(crop)
	switch {
	case known:
		p.BaseC, p.CapC = c.BaseC, c.CapC
	case base == nil:
		if NormaliseCrop(crop) == "" {
			return Params{}, fmt.Errorf("%w: a crop or a base temperature is required", ErrInvalid)
		}
		return Params{}, fmt.Errorf("%w: crop %q is not in the table (%s): give its base temperature", ErrInvalid, crop, cropNames())
	}
	if base != nil {
		p.BaseC = *base
	}
	if capC != nil {
		p.CapC = ptr(*capC)
	}
	if math.IsNaN(p.BaseC) || math.IsInf(p.BaseC, 0) || p.BaseC < -50 || p.BaseC > 50 {
		return Params{}, fmt.Errorf("%w: base temperature %v outside [-50, 50] °C", ErrInvalid, p.BaseC)
	}
	if p.CapC != nil && (math.IsNaN(*p.CapC) || !(*p.CapC > p.BaseC) || *p.CapC > 60) {
		return Params{}, fmt.Errorf("%w: cap temperature %v must be above the base %v and at most 60 °C", ErrInvalid, *p.CapC, p.BaseC)
	}
	return p, nil
}

func cropNames() string {
	var names []string
	for _, c := range Crops() {
		names = append(names, c.Name)
	}
	return strings.Join(names, ", ")
}

// GDD is one day's growing degree days:
// max(0, (min(Tmax, Tcap) + max(Tmin, Tbase)) / 2 − Tbase), Tmax uncapped
// without a cap.
func (p Params) GDD(tminC, tmaxC float64) float64 {
	hi := tmaxC
	if p.CapC != nil {
		hi = min(tmaxC, *p.CapC)
	}
	lo := max(tminC, p.BaseC)
	return max(0, (hi+lo)/2-p.BaseC)
}

// Row is one day of a season: its weather and the sums from the first day.
type Row struct {
	Day
	GDD                float64 `json:"gdd"`
	GDDCum             float64 `json:"gdd_cum"`
	PrecipitationCumMM float64 `json:"precipitation_cum_mm"`
}

// Totals are a season's sums and counts.
type Totals struct {
	GDD             float64 `json:"gdd"`
	PrecipitationMM float64 `json:"precipitation_mm"`
	FrostDays       int     `json:"frost_days"` // Tmin < 0 °C
	HeatDays        int     `json:"heat_days"`  // Tmax > 30 °C
}

// Season is the thermal time and rain of consecutive days.
type Season struct {
	Params
	Rows   []Row
	Totals Totals
}

// Accumulate computes each day's GDD and the running sums of GDD and
// precipitation from days[0], in order, and the counts of frost and heat
// days. Days are taken as given (Complete checks a series has no gaps).
func Accumulate(days []Day, p Params) Season {
	s := Season{Params: p, Rows: make([]Row, len(days))}
	for i, d := range days {
		g := p.GDD(d.TminC, d.TmaxC)
		s.Totals.GDD += g
		s.Totals.PrecipitationMM += d.PrecipitationMM
		if d.TminC < FrostBelowC {
			s.Totals.FrostDays++
		}
		if d.TmaxC > HeatAboveC {
			s.Totals.HeatDays++
		}
		s.Rows[i] = Row{Day: d, GDD: g, GDDCum: s.Totals.GDD, PrecipitationCumMM: s.Totals.PrecipitationMM}
	}
	return s
}
