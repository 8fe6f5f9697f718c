package archive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/paulmach/orb"

	"github.com/cropkit/cropkit/api"
	"github.com/cropkit/cropkit/boundary"
	"github.com/cropkit/cropkit/geo"
)

// MaxBoundaryAreaHa bounds the area of interest of a boundary detection.
const MaxBoundaryAreaHa = 2500

// BoundaryRequest asks for the fields in an area of interest.
type BoundaryRequest struct {
	// AOI is the area of interest (GeoJSON Polygon, MultiPolygon or
	// Feature in EPSG:4326), at most MaxBoundaryAreaHa.
	AOI json.RawMessage
	// Start and End bound the imagery used (inclusive days); both zero:
	// the last growing season with imagery.
	Start, End time.Time
	// Register registers the detected fields for the caller, named
	// NamePrefix-1, -2, … (largest first), and ingests the recorded scenes
	// for them so their history is there at once.
	Register   bool
	NamePrefix string
	// MinAreaHa drops smaller detections (0: the library's default).
	MinAreaHa float64
}

// DetectBoundaries runs field boundary detection (package boundary) on the
// scenes the archive has ingested over the area (any source: folders, STAC
// items, catalogue items) and optionally registers the result.
func (a *Archive) DetectBoundaries(ctx context.Context, u User, req BoundaryRequest) (*boundary.Result, []Field, error) {
	aoi, err := geo.ParseGeometry(req.AOI)
	if err != nil {
		return nil, nil, InvalidGeometry("geometry: %v", err)
	}
	if err := geo.ValidateLonLat(aoi); err != nil {
		return nil, nil, InvalidGeometry("geometry: %v", err)
	}
	if ha := geo.GeodesicArea(aoi) / 10000; ha > MaxBoundaryAreaHa {
		return nil, nil, Invalid("geometry: area of interest of %.0f ha; at most %d ha", ha, MaxBoundaryAreaHa)
	}
	if req.Register && !validName(req.NamePrefix+"-1000", a.limits.NameBytes) {
		return nil, nil, Invalid("name_prefix must be 1 to %d bytes without control characters", a.limits.NameBytes-5)
	}
	from, to := "", ""
	if !req.Start.IsZero() {
		from = req.Start.Format(time.DateOnly)
	}
	if !req.End.IsZero() {
		to = req.End.Format(time.DateOnly)
	}
	recs, err := a.store.ScenesIntersecting(ctx, aoi.Bound(), from, to)
	if err != nil {
		return nil, nil, err
	}
	if len(recs) == 0 {
		return nil, nil, NoImagery("no ingested scene covers the area between %s and %s", orOpen(from), orOpen(to))
	}
	scenes := make([]boundary.Scene, 0, len(recs))
	for _, r := range recs {
		s, err := a.OpenScene(ctx, r.Source, IngestOptions{Untrusted: true})
		if err != nil {
			a.log.WarnContext(ctx, "boundaries: scene no longer readable", "scene", r.ID, "source", r.Source, "err", err)
			continue
		}
		defer s.Close()
		scenes = append(scenes, s)
	}
	opts := boundary.Options{Start: req.Start, MinAreaHa: req.MinAreaHa}
	if !req.End.IsZero() {
		opts.End = req.End.Add(24*time.Hour - time.Nanosecond) // the whole end day
	}
	res, err := boundary.Detect(ctx, scenes, aoi, opts)
	switch {
	case errors.Is(err, boundary.ErrTooLarge), errors.Is(err, boundary.ErrEmptyAOI):
		return nil, nil, Invalid("%v", err)
	case errors.Is(err, boundary.ErrNoImagery):
		return nil, nil, NoImagery("%v", err)
	case err != nil:
		return nil, nil, err
	}
	if !req.Register {
		return res, nil, nil
	}
	var fields []Field
	var ids []int64
	for i, f := range res.Fields {
		geom, err := EncodeGeometry(orb.MultiPolygon{f.Polygon})
		if err != nil {
			return nil, nil, err
		}
		field, err := a.RegisterField(ctx, u, FieldInput{Name: fmt.Sprintf("%s-%d", req.NamePrefix, i+1), Geometry: []byte(geom),
			Labels: map[string]string{"source": "boundary-detection", "confidence": fmt.Sprintf("%.3f", f.Confidence)}})
		if err != nil {
			return nil, fields, fmt.Errorf("register detected field %d: %w", i+1, err)
		}
		fields = append(fields, field)
		ids = append(ids, field.ID)
	}
	// Their history from the scenes the archive knows.
	all, err := a.store.ScenesIntersecting(ctx, aoi.Bound(), "", "")
	if err != nil {
		return nil, nil, err
	}
	for _, r := range all {
		if _, err := a.Ingest(ctx, r.Source, IngestOptions{Untrusted: true, Fields: ids}); err != nil {
			a.log.WarnContext(ctx, "boundaries: ingest for new fields", "scene", r.ID, "err", err)
		}
	}
	return res, fields, nil
}

func orOpen(d string) string {
	if d == "" {
		return "any date"
	}
	return d
}

// Boundaries is DetectBoundaries as answered (api.Boundaries): the detected
// fields as GeoJSON, the imagery dates used and the names registered.
func (a *Archive) Boundaries(ctx context.Context, u User, req BoundaryRequest) (api.Boundaries, error) {
	res, fields, err := a.DetectBoundaries(ctx, u, req)
	if err != nil {
		return api.Boundaries{}, err
	}
	out := api.Boundaries{BoundaryCollection: res.FeatureCollection(), Dates: []string{}, Registered: []string{}}
	for i := range out.Features {
		if i < len(fields) {
			out.Features[i].Properties.FieldName = fields[i].Name
			out.Registered = append(out.Registered, fields[i].Name)
		}
	}
	for _, d := range res.Dates {
		out.Dates = append(out.Dates, d.UTC().Format(time.DateOnly))
	}
	return out, nil
}
