package archive

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cropkit/cropkit/zoning"
)

// RegisteredIndex checks that u may use index (ErrInvalid unknown,
// ErrForbidden not granted) and that field f is registered for it
// (ErrInvalid: the zone operations name what is registered).
func (a *Archive) RegisteredIndex(u User, f Field, index string) error {
	if err := a.CheckIndex(u, index); err != nil {
		return err
	}
	if !slices.Contains(f.Indices, index) {
		return Invalid("field %q is not registered for index %q (registered: %s)", f.Name, index, strings.Join(f.Indices, ", "))
	}
	return nil
}

// CropHealthLayer resolves a §2.3 crop_health layer of field f: the usable
// image of spec.Date (that date when usable, else the closest, as downloads
// do), or the mean over the usable images from StartDate to EndDate.
// Dates lists what was used.
func (a *Archive) CropHealthLayer(ctx context.Context, f Field, spec zoning.LayerSpec) (LayerValues, error) {
	return a.CropHealthLayerOf(ctx, f, spec, "")
}

// CropHealthLayerOf is CropHealthLayer from one sensor family (see
// SensorFamily: "" the index's default). "any" is refused: images of two
// sensors lie on different grids.
func (a *Archive) CropHealthLayerOf(ctx context.Context, f Field, spec zoning.LayerSpec, sensor string) (LayerValues, error) {
	if strings.EqualFold(strings.TrimSpace(sensor), SensorAny) {
		return LayerValues{}, Invalid("sensor any: zones need the images of one sensor (their pixel grids differ)")
	}
	if spec.IsRange() {
		from, to := spec.StartDate.Format(time.DateOnly), spec.EndDate.Format(time.DateOnly)
		ps, err := a.UsableProductsOf(ctx, f, spec.Index, sensor, from, to)
		if err != nil {
			return LayerValues{}, err
		}
		if len(ps) == 0 {
			return LayerValues{}, NoImagery("no usable %s image of field %q from %s to %s", spec.Index, f.Name, from, to)
		}
		return a.MeanValues(ctx, f, ps)
	}
	ps, err := a.UsableProductsOf(ctx, f, spec.Index, sensor, "", "")
	if err != nil {
		return LayerValues{}, err
	}
	if len(ps) == 0 {
		return LayerValues{}, NoImagery("no usable %s image of field %q (none ingested yet, or too little of it clear: clouds, or outside the scenes)", spec.Index, f.Name)
	}
	i := ClosestDate(ps, spec.Date.Format(time.DateOnly))
	return a.MeanValues(ctx, f, ps[i:i+1])
}

// PrescriptionLayer is the index layer of a §4.3 prescription: for
// n_fertilizer the usable image of date (the closest; zero: the latest),
// for seeding the mean over the usable images of the season of the latest
// one (SeasonRange).
func (a *Archive) PrescriptionLayer(ctx context.Context, f Field, index string, typ zoning.PrescriptionType, date time.Time) (LayerValues, error) {
	return a.PrescriptionLayerOf(ctx, f, index, typ, date, "")
}

// PrescriptionLayerOf is PrescriptionLayer from one sensor family (see
// CropHealthLayerOf).
func (a *Archive) PrescriptionLayerOf(ctx context.Context, f Field, index string, typ zoning.PrescriptionType, date time.Time, sensor string) (LayerValues, error) {
	if strings.EqualFold(strings.TrimSpace(sensor), SensorAny) {
		return LayerValues{}, Invalid("sensor any: zones need the images of one sensor (their pixel grids differ)")
	}
	ps, err := a.UsableProductsOf(ctx, f, index, sensor, "", "")
	if err != nil {
		return LayerValues{}, err
	}
	if len(ps) == 0 {
		return LayerValues{}, NoImagery("no usable %s image of field %q (none ingested yet, or too little of it clear: clouds, or outside the scenes)", index, f.Name)
	}
	if typ == zoning.NFertilizer {
		want := ""
		if !date.IsZero() {
			want = date.Format(time.DateOnly)
		}
		i := ClosestDate(ps, want)
		return a.MeanValues(ctx, f, ps[i:i+1])
	}
	from, to, err := a.SeasonRange(ctx, f, ps[len(ps)-1].Date)
	if err != nil {
		return LayerValues{}, err
	}
	var chosen []Product
	for _, pr := range ps {
		if pr.Date >= from && (to == "" || pr.Date <= to) {
			chosen = append(chosen, pr)
		}
	}
	if len(chosen) == 0 {
		end := to
		if end == "" {
			end = "now"
		}
		return LayerValues{}, NoImagery("no usable %s image of field %q in its season %s to %s", index, f.Name, from, end)
	}
	return a.MeanValues(ctx, f, chosen)
}

// SeasonRange is the season a seeding prescription averages over: the
// field's metadata season of its latest usable image (the latest season
// starting on or before that image's date, from start_date to harvest_date,
// open-ended without a harvest date), else the 12 months up to the latest
// usable image. A season registered ahead (a cover crop after harvest,
// next year's crop) has no image yet, so the last season with imagery is used.
func (a *Archive) SeasonRange(ctx context.Context, f Field, latest string) (from, to string, err error) {
	seasons, err := a.fieldSeasons(ctx, f.ID)
	if err != nil {
		return "", "", err
	}
	for i := len(seasons) - 1; i >= 0; i-- {
		if seasons[i].StartDate <= latest {
			return seasons[i].StartDate, seasons[i].HarvestDate, nil
		}
	}
	end, err := time.Parse(time.DateOnly, latest)
	if err != nil {
		return "", "", fmt.Errorf("latest image date %q: %w", latest, err)
	}
	return end.AddDate(-1, 0, 1).Format(time.DateOnly), latest, nil
}

// ImageDates is how a zone map reports the imagery it used: one date, or
// START/END for a layer over several images; several layers comma-separated.
func ImageDates(layers ...LayerValues) string {
	var parts []string
	for _, l := range layers {
		switch len(l.Dates) {
		case 0:
		case 1:
			parts = append(parts, l.Dates[0])
		default:
			parts = append(parts, l.Dates[0]+"/"+l.Dates[len(l.Dates)-1])
		}
	}
	return strings.Join(parts, ",")
}
