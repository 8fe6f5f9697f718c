package weather

import (
	"fmt"
	"strings"
)

// variable is one daily quantity of Day.
type variable int

const (
	varTmin variable = iota
	varTmax
	varTmean
	varPrecip
	varRadiation
	varET0
	varVapour
	varWind
	varWindMax
)

// kinds group variables by the units they may come in.
type kind int

const (
	kindTemperature kind = iota
	kindDepth            // precipitation, ET0: to mm
	kindEnergy           // radiation: to MJ m-2 d-1
	kindPressure         // to hPa
	kindSpeed            // to m s-1
)

func (v variable) kind() kind {
	switch v {
	case varTmin, varTmax, varTmean:
		return kindTemperature
	case varPrecip, varET0:
		return kindDepth
	case varRadiation:
		return kindEnergy
	case varVapour:
		return kindPressure
	}
	return kindSpeed
}

// set stores x as v in d.
func (v variable) set(d *Day, x float64) {
	switch v {
	case varTmin:
		d.TminC = x
	case varTmax:
		d.TmaxC = x
	case varTmean:
		d.TmeanC = x
	case varPrecip:
		d.PrecipitationMM = x
	case varRadiation:
		d.RadiationMJ = &x
	case varET0:
		d.ET0MM = &x
	case varVapour:
		d.VapourPressureHPa = &x
	case varWind:
		d.WindSpeedMS = &x
	case varWindMax:
		d.WindMaxMS = &x
	}
}

// converter turns a value in a source unit into the package's unit.
type converter func(float64) float64

func identity(x float64) float64 { return x }

// normUnit lowercases a unit and spells its separators one way:
// "J m-2 d-1", "J/m²/d" and "j m^-2 day^-1" all become comparable.
func normUnit(u string) string {
	u = strings.ToLower(strings.TrimSpace(u))
	r := strings.NewReplacer("²", "2", "^", "", "**", "", "·", " ", "*", " ", "/day", " d-1", "/d", " d-1",
		"/m2", " m-2", "/s", " s-1", "/h", " h-1", "day-1", "d-1", "  ", " ")
	for range 3 {
		u = r.Replace(u)
	}
	return strings.TrimSpace(u)
}

// unitConverter returns the conversion of unit for variables of kind k.
func unitConverter(k kind, unit string) (converter, error) {
	u := normUnit(unit)
	switch k {
	case kindTemperature:
		switch u {
		case "k", "kelvin":
			return func(x float64) float64 { return x - 273.15 }, nil
		case "°c", "c", "degc", "deg c", "celsius", "degrees c":
			return identity, nil
		case "°f", "f", "degf", "fahrenheit":
			return func(x float64) float64 { return (x - 32) * 5 / 9 }, nil
		}
	case kindDepth:
		switch u {
		case "mm", "mm d-1", "kg m-2", "kg m-2 d-1":
			return identity, nil
		case "m", "m d-1":
			return func(x float64) float64 { return x * 1000 }, nil
		case "cm", "cm d-1":
			return func(x float64) float64 { return x * 10 }, nil
		case "inch", "in", "inch d-1", "in d-1":
			return func(x float64) float64 { return x * 25.4 }, nil
		}
	case kindEnergy:
		switch u {
		case "mj m-2", "mj m-2 d-1":
			return identity, nil
		case "j m-2", "j m-2 d-1":
			return func(x float64) float64 { return x / 1e6 }, nil
		case "kj m-2", "kj m-2 d-1":
			return func(x float64) float64 { return x / 1e3 }, nil
		case "w m-2": // a daily mean flux
			return func(x float64) float64 { return x * 86400 / 1e6 }, nil
		}
	case kindPressure:
		switch u {
		case "hpa", "mbar", "mb":
			return identity, nil
		case "kpa":
			return func(x float64) float64 { return x * 10 }, nil
		case "pa":
			return func(x float64) float64 { return x / 100 }, nil
		}
	case kindSpeed:
		switch u {
		case "m s-1", "ms", "m s", "ms-1", "mps":
			return identity, nil
		case "km h-1", "kmh", "kph":
			return func(x float64) float64 { return x / 3.6 }, nil
		case "kn", "knots", "kt":
			return func(x float64) float64 { return x * 1852 / 3600 }, nil
		case "mph", "mi h-1":
			return func(x float64) float64 { return x * 0.44704 }, nil
		}
	}
	return nil, fmt.Errorf("%w: unknown unit %q", ErrInvalid, unit)
}
