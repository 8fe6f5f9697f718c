package archive

import (
	"context"
	"slices"
	"strings"

	"github.com/cropkit/cropkit/imagery"
)

// SensorAny is the sensor parameter that lifts the one-family rule: the
// closest-date rule and histories then run over every sensor's images.
const SensorAny = "any"

// SensorFamily resolves a query's sensor parameter for an index: "" is
// the index's first family (Sentinel-2 for the optical indices, as the
// spec's service; Sentinel-1 for the radar ones), "any" every family
// (returned as ""), else a family or satellite name ("landsat",
// "sentinel-1a", …) that the index must apply to (ErrInvalid otherwise).
func (a *Archive) SensorFamily(index, sensor string) (string, error) {
	ix, ok := a.cat.Lookup(strings.ToLower(index))
	if !ok {
		return "", Invalid("unknown index %q", index)
	}
	switch s := strings.ToLower(strings.TrimSpace(sensor)); s {
	case "":
		if len(ix.Sensors) == 0 {
			return string(imagery.FamilySentinel2), nil
		}
		return string(ix.Sensors[0]), nil
	case SensorAny:
		return "", nil
	default:
		fam, ok := imagery.ParseFamily(s)
		if !ok {
			return "", Invalid("sensor must be sentinel-2, landsat, sentinel-1, a satellite (sentinel-2a, landsat-9, sentinel-1a, …) or any; got %q", sensor)
		}
		if !slices.Contains(ix.Sensors, fam) {
			return "", Invalid("index %s does not apply to %s images (it applies to %v)", ix.Name, fam, ix.Sensors)
		}
		return string(fam), nil
	}
}

// HistoryQuery selects a field's history: Indices nil means every index
// of the field the user may use; From/To inclusive YYYY-MM-DD ("" open);
// Sensor as SensorFamily reads it, per index.
type HistoryQuery struct {
	Field    string
	Indices  []string
	From, To string
	Sensor   string
}

// HistoryFor is History with a sensor rule: each index's rows come from
// one sensor family (its default, or q.Sensor), or from all with "any";
// every row names its sensor.
func (a *Archive) HistoryFor(ctx context.Context, u User, q HistoryQuery) (Field, map[string][]HistoryRow, error) {
	for _, ix := range q.Indices {
		if _, err := a.SensorFamily(ix, q.Sensor); err != nil && a.CheckIndex(u, ix) == nil {
			return Field{}, nil, err
		}
	}
	return a.history(ctx, u, q)
}

// KeepSensor keeps the products of the sensor family SensorFamily gives
// for each product's index and sensor ("" each index's default, "any" all);
// an unknown sensor name is ErrInvalid.
func (a *Archive) KeepSensor(ps []Product, sensor string) ([]Product, error) {
	if s := strings.ToLower(strings.TrimSpace(sensor)); s != "" && s != SensorAny {
		if _, ok := imagery.ParseFamily(s); !ok {
			return nil, Invalid("sensor must be sentinel-2, landsat, sentinel-1, a satellite (sentinel-2a, landsat-9, sentinel-1a, …) or any; got %q", sensor)
		}
	}
	out := ps[:0:0]
	for _, p := range ps {
		fam, err := a.SensorFamily(p.Index, sensor)
		if err != nil {
			continue // the index does not apply to that sensor: none of its products
		}
		if fam == "" || familyOrDefault(p.Family) == fam {
			out = append(out, p)
		}
	}
	return out, nil
}

// ProductSensor is a stored product's sensor as the wire names it (rows
// from before sensors are "sentinel-2").
func ProductSensor(p Product) string { return productSensor(p) }

// productSensor is a stored product's sensor as the wire names it.
func productSensor(p Product) string {
	if p.Sensor != "" {
		return p.Sensor
	}
	return familyOrDefault(p.Family)
}
