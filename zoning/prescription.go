package zoning

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"
)

// PrescriptionType is the type parameter of §4.3.
type PrescriptionType string

// The prescription types of §4.3.
const (
	NFertilizer PrescriptionType = "n_fertilizer"
	Seeding     PrescriptionType = "seeding"
)

// Strategy says how the dose follows crop vigour.
type Strategy string

// The dose strategies.
const (
	// Compensate gives more where vigour is low (the default for n_fertilizer:
	// weak zones get more nitrogen to catch up).
	Compensate Strategy = "compensate"
	// Proportional gives more where vigour is high (the default for seeding:
	// productive zones carry a denser stand).
	Proportional Strategy = "proportional"
)

// ErrInvalidPrescription is matched by every prescription parameter error (400).
var ErrInvalidPrescription = errors.New("invalid prescription")

// Prescription is the dose rule of a zone map. Zero fields take the type's defaults:
//
//	n_fertilizer: 120 kg N/ha base, rates base ±50 % (60..180 kg N/ha), compensate
//	seeding:      80,000 seeds/ha base, rates base ±25 % (60,000..100,000 seeds/ha), proportional
//
// The default MinRate and MaxRate follow BaseRate (a base of 200 kg N/ha
// gets 100..300), so a base alone still gives a variable prescription.
// Given rates must satisfy MinRate < BaseRate < MaxRate.
//
// 120 kg N/ha sits in the middle of the usual 80–180 kg N/ha split
// top-dressing range for winter cereals and maize in north-western Europe,
// and ±50 % keeps the rates inside what spreaders are set up for; 80,000
// seeds/ha is a common maize population, with ±25 % the usual variable-rate
// seeding span.
//
// The rule: with v̄ the area-weighted mean and s the area-weighted standard
// deviation of the zones' RasterVal, zone i first gets
//
//	base · (1 ± Gain · (v_i − v̄)/s)   (− for compensate, + for proportional)
//
// then every dose is shifted by one common amount t and clamped to
// [MinRate, MaxRate], t chosen so that the area-weighted mean dose equals
// BaseRate exactly, clamping included. With one zone, or zones of equal
// value, every zone gets BaseRate.
type Prescription struct {
	Type     PrescriptionType
	Strategy Strategy
	BaseRate float64
	MinRate  float64
	MaxRate  float64
	// Gain is the relative dose change per standard deviation of zone
	// vigour (default 0.2: ±20 % per standard deviation).
	Gain float64
}

// Unit is the unit of the prescription's rates.
func (p Prescription) Unit() string {
	if p.Type == Seeding {
		return "seeds/ha"
	}
	return "kg/ha"
}

// WithDefaults fills the zero fields with the type's defaults.
func (p Prescription) WithDefaults() Prescription {
	base, span, st := 120.0, 0.5, Compensate
	if p.Type == Seeding {
		base, span, st = 80000, 0.25, Proportional
	}
	if p.Strategy == "" {
		p.Strategy = st
	}
	if p.BaseRate == 0 {
		p.BaseRate = base
	}
	if p.MinRate == 0 {
		p.MinRate = p.BaseRate * (1 - span)
	}
	if p.MaxRate == 0 {
		p.MaxRate = p.BaseRate * (1 + span)
	}
	if p.Gain == 0 {
		p.Gain = 0.2
	}
	return p
}

// Validate checks a prescription after WithDefaults.
func (p Prescription) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidPrescription, fmt.Sprintf(format, a...))
	}
	switch p.Type {
	case NFertilizer, Seeding:
	default:
		return bad("type %q is neither n_fertilizer nor seeding", p.Type)
	}
	switch p.Strategy {
	case Compensate, Proportional:
	default:
		return bad("strategy %q is neither compensate nor proportional", p.Strategy)
	}
	for _, v := range []float64{p.BaseRate, p.MinRate, p.MaxRate, p.Gain} {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > 1e9 {
			return bad("rates and gain must be numbers between 0 and 1e9")
		}
	}
	if !(p.MinRate < p.BaseRate && p.BaseRate < p.MaxRate) {
		return bad("need min_rate %g < base_rate %g < max_rate %g", p.MinRate, p.BaseRate, p.MaxRate)
	}
	return nil
}

// Doses returns the dose of each zone (same order), weighting zones by AreaHa.
func (p Prescription) Doses(zones []Zone) ([]float64, error) {
	p = p.WithDefaults()
	if err := p.Validate(); err != nil {
		return nil, err
	}
	doses := make([]float64, len(zones))
	// Area-weighted mean and population deviation of the zones' values.
	var vals, areas []float64
	for _, z := range zones {
		if z.AreaHa > 0 && !math.IsNaN(z.RasterVal) {
			vals = append(vals, z.RasterVal)
			areas = append(areas, z.AreaHa)
		}
	}
	if len(vals) == 0 {
		for i := range doses {
			doses[i] = p.BaseRate
		}
		return doses, nil
	}
	mean, std := stat.PopMeanStdDev(vals, areas)
	sign := -1.0
	if p.Strategy == Proportional {
		sign = 1
	}
	raw := make([]float64, len(zones))
	for i, z := range zones {
		raw[i] = p.BaseRate
		if std > 0 && !math.IsNaN(z.RasterVal) {
			raw[i] = p.BaseRate * (1 + sign*p.Gain*(z.RasterVal-mean)/std)
		}
	}
	// The area-weighted mean of clamp(raw+t) grows monotonically with t from
	// MinRate to MaxRate, so bisection finds the t that gives BaseRate.
	meanAt := func(t float64) float64 {
		var s, a float64
		for i, z := range zones {
			if z.AreaHa > 0 {
				s += z.AreaHa * min(p.MaxRate, max(p.MinRate, raw[i]+t))
				a += z.AreaHa
			}
		}
		return s / a
	}
	lo, hi := p.MinRate-slices.Max(raw), p.MaxRate-slices.Min(raw)
	for range 200 {
		mid := (lo + hi) / 2
		if meanAt(mid) < p.BaseRate {
			lo = mid
		} else {
			hi = mid
		}
	}
	t := (lo + hi) / 2
	for i := range zones {
		doses[i] = min(p.MaxRate, max(p.MinRate, raw[i]+t))
	}
	return doses, nil
}

// Apply sets the Dose of every zone of r (see Doses).
func (p Prescription) Apply(r *Result) error {
	doses, err := p.Doses(r.Zones)
	if err != nil {
		return err
	}
	for i := range r.Zones {
		r.Zones[i].Dose = doses[i]
	}
	return nil
}
