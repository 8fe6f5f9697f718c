package archive

import (
	"context"
	"slices"

	"github.com/cropkit/cropkit/api"
)

// HistoryRow is one usable image of a field and index (the wire type).
type HistoryRow = api.HistoryRow

// History is a field's index statistics through time, from the stored
// products only (no file is read): per index, one row per usable date
// between from and to (inclusive, "" = open), by date. mean_variation
// compares with the previous usable image even when it lies before from,
// as downloads do. indices nil means every index of the field u may use.
func (a *Archive) History(ctx context.Context, u User, fieldName string, indices []string, from, to string) (Field, map[string][]HistoryRow, error) {
	return a.history(ctx, u, HistoryQuery{Field: fieldName, Indices: indices, From: from, To: to})
}

func (a *Archive) history(ctx context.Context, u User, q HistoryQuery) (Field, map[string][]HistoryRow, error) {
	indices, from, to := q.Indices, q.From, q.To
	f, err := a.Field(ctx, u, q.Field, false)
	if err != nil {
		return Field{}, nil, err
	}
	for _, ix := range indices {
		if err := a.CheckIndex(u, ix); err != nil {
			return Field{}, nil, err
		}
		if !slices.Contains(f.Indices, ix) {
			return Field{}, nil, NotFound("field %q is not registered for index %q", f.Name, ix)
		}
	}
	want := indices
	if want == nil {
		for _, ix := range f.Indices {
			if u.May(ix) {
				want = append(want, ix)
			}
		}
	}
	// One query for every index up to `to`: earlier rows give mean_variation.
	ps, err := a.store.Products(ctx, ProductQuery{FieldID: f.ID, To: to, UsableOnly: true})
	if err != nil {
		return Field{}, nil, err
	}
	out := make(map[string][]HistoryRow, len(want))
	family := make(map[string]string, len(want)) // "" = every family
	for _, ix := range want {
		out[ix] = []HistoryRow{}
		fam, err := a.SensorFamily(ix, q.Sensor)
		if err != nil {
			// An index the field may hold but the sensor cannot serve has no rows.
			delete(out, ix)
			continue
		}
		family[ix] = fam
	}
	prev := map[string]*Product{}
	for i := range ps { // by index, then date
		p := &ps[i]
		rows, ok := out[p.Index]
		if !ok {
			continue
		}
		if fam := family[p.Index]; fam != "" && familyOrDefault(p.Family) != fam {
			continue
		}
		before := prev[p.Index]
		prev[p.Index] = p
		if from != "" && p.Date < from {
			continue
		}
		mv, pd := meanVariation(*p, before)
		out[p.Index] = append(rows, HistoryRow{Date: p.Date, Mean: p.Mean, Median: p.Median, Std: p.Std, Min: p.Min, Max: p.Max,
			P25: p.P25, P75: p.P75, Num: p.Num, FieldPixels: p.FieldPixels, CloudCover: p.CloudCover,
			MeanVariation: mv, PreviousDate: pd, Scene: p.SceneID, Sensor: productSensor(*p)})
	}
	return f, out, nil
}
