package server

import (
	"net/http"
	"time"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/boundary"
)

// boundariesResponse is the detected fields as a GeoJSON FeatureCollection
// (EPSG:4326, properties area_ha and confidence), with the imagery dates
// used and, with register=true, the names of the fields registered (also
// as each feature's properties.field_name).
type boundariesResponse struct {
	Type       string            `json:"type"`
	Features   []boundaryFeature `json:"features"`
	Dates      []string          `json:"dates"`
	Registered []string          `json:"registered"`
}

type boundaryFeature struct {
	Type       string                   `json:"type"`
	ID         int                      `json:"id"`
	Geometry   boundary.PolygonGeometry `json:"geometry"`
	Properties boundaryProperties       `json:"properties"`
}

type boundaryProperties struct {
	AreaHa     float64 `json:"area_ha"`
	Confidence float64 `json:"confidence"`
	FieldName  string  `json:"field_name,omitempty"`
}

// handleBoundaries detects the fields in an area of interest (§4.6 field
// boundary detection) from the imagery the server has ingested there.
func (s *Server) handleBoundaries(w http.ResponseWriter, r *http.Request, c *call) error {
	raw, ok, err := c.params.object("geometry")
	if err != nil {
		return err
	}
	if !ok {
		return badRequest("missing required parameter geometry (the area of interest as GeoJSON in EPSG:4326, at most %d ha)", archive.MaxBoundaryAreaHa)
	}
	from, to, err := dateRange(c.params)
	if err != nil {
		return err
	}
	req := archive.BoundaryRequest{AOI: raw}
	if from != "" {
		req.Start, _ = time.Parse(time.DateOnly, from)
	}
	if to != "" {
		req.End, _ = time.Parse(time.DateOnly, to)
	}
	if req.Register, _, err = c.params.boolean("register"); err != nil {
		return err
	}
	req.NamePrefix = "detected"
	if v, ok, err := c.params.str("name_prefix"); err != nil {
		return err
	} else if ok && v != "" {
		req.NamePrefix = v
	}
	if v, ok, err := c.params.float("min_area_ha"); err != nil {
		return err
	} else if ok {
		if v < 0 || v > 1000 {
			return badRequest("min_area_ha must be within [0, 1000], got %v", v)
		}
		req.MinAreaHa = v
	}
	res, fields, err := s.core.DetectBoundaries(r.Context(), c.user, req)
	if err != nil {
		return err
	}
	fc := res.FeatureCollection()
	out := boundariesResponse{Type: fc.Type, Features: make([]boundaryFeature, len(fc.Features)), Dates: []string{}, Registered: []string{}}
	for i, f := range fc.Features {
		out.Features[i] = boundaryFeature{Type: f.Type, ID: f.ID, Geometry: f.Geometry,
			Properties: boundaryProperties{AreaHa: f.Properties.AreaHa, Confidence: f.Properties.Confidence}}
		if i < len(fields) {
			out.Features[i].Properties.FieldName = fields[i].Name
			out.Registered = append(out.Registered, fields[i].Name)
		}
	}
	for _, d := range res.Dates {
		out.Dates = append(out.Dates, d.UTC().Format(time.DateOnly))
	}
	status := http.StatusOK
	if req.Register {
		status = http.StatusCreated
	}
	return writeJSON(w, status, out)
}
