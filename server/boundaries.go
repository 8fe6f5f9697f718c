package server

import (
	"net/http"
	"time"

	"github.com/cropkit/cropkit/archive"
)

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
	out, err := s.core.Boundaries(r.Context(), c.user, req)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if req.Register {
		status = http.StatusCreated
	}
	return writeJSON(w, status, out)
}
