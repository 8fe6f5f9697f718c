package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"time"

	"github.com/paulmach/orb"

	"github.com/cropkit/cropkit/geo"
)

// fieldJSON is a field on the wire.
type fieldJSON struct {
	FieldName string            `json:"field_name"`
	Group     string            `json:"group"`
	Labels    map[string]string `json:"labels"`
	Indices   []string          `json:"indices"`
	Geometry  geometryJSON      `json:"geometry"`
	BBox      [4]float64        `json:"bbox"`
	CreatedAt string            `json:"created_at"`
	UpdatedAt string            `json:"updated_at"`
}

func toFieldJSON(f Field) fieldJSON {
	return fieldJSON{
		FieldName: f.Name,
		Group:     f.Group,
		Labels:    nonNilLabels(f.Labels),
		Indices:   nonNilList(f.Indices),
		Geometry:  newGeometryJSON(f.Geometry),
		BBox:      [4]float64{f.Bound.Min[0], f.Bound.Min[1], f.Bound.Max[0], f.Bound.Max[1]},
		CreatedAt: f.Created.UTC().Format(time.RFC3339),
		UpdatedAt: f.Updated.UTC().Format(time.RFC3339),
	}
}

func nonNilList(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

type fieldResponse struct {
	Message string    `json:"message"`
	Field   fieldJSON `json:"field"`
}

// writeJSON answers v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode response: %w", err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, err := w.Write(buf.Bytes())
	return err
}

// indexNames is every index the catalogue knows that u may use.
func (s *Server) indexNames(u User) []string {
	var out []string
	for _, n := range s.cat.Names() {
		if u.May(n) {
			out = append(out, n)
		}
	}
	return out
}

// checkIndex answers 400 for an index the catalogue does not know and 403
// for one the user may not use.
func (s *Server) checkIndex(u User, name string) error {
	if _, ok := s.cat.Lookup(name); !ok {
		return badRequest("unknown index %q (known: %v)", name, s.cat.Names())
	}
	if !u.May(name) {
		return forbidden("no access to index %q", name)
	}
	return nil
}

// fieldIndices resolves the indices parameter of a field registration: every
// permitted index when absent.
func (s *Server) fieldIndices(u User, p params) ([]string, bool, error) {
	names, ok, err := p.list("indices")
	if err != nil || !ok {
		return s.indexNames(u), ok, err
	}
	if len(names) == 0 {
		return nil, false, badRequest("parameter indices is empty")
	}
	var out []string
	for _, n := range names {
		if err := s.checkIndex(u, n); err != nil {
			return nil, false, err
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, true, nil
}

// parseFieldGeometry reads and validates the geometry parameter (GeoJSON
// Polygon, MultiPolygon or Feature in EPSG:4326), including the extent caps:
// ingestion reads a field's whole bounding box, so a field's cost is its box,
// not its area (two tiny parts far apart, a huge ring with a big hole).
func (s *Server) parseFieldGeometry(p params) (orb.MultiPolygon, bool, error) {
	raw, ok, err := p.object("geometry")
	if err != nil || !ok {
		return nil, false, err
	}
	invalid := func(format string, args ...any) *Error {
		return &Error{Status: http.StatusBadRequest, Code: CodeInvalidGeometry, Message: "geometry: " + fmt.Sprintf(format, args...)}
	}
	mp, err := geo.ParseGeometry(raw)
	if err != nil {
		return nil, false, invalid("%v", err)
	}
	if err := geo.ValidateLonLat(mp); err != nil {
		return nil, false, invalid("%v", err)
	}
	if len(mp) > s.limits.FieldParts {
		return nil, false, invalid("%d polygons; at most %d per field", len(mp), s.limits.FieldParts)
	}
	if ha := boxHectares(mp.Bound()); ha > s.limits.FieldExtentHa {
		return nil, false, invalid("bounding box of %.0f ha; at most %.0f ha per field (register distant parts as separate fields)", ha, s.limits.FieldExtentHa)
	}
	return mp, true, nil
}

// boxHectares is the area of a lon/lat box on the WGS84 authalic sphere.
func boxHectares(b orb.Bound) float64 {
	const r = 6371007.2 // authalic radius, m
	dLon := (b.Max[0] - b.Min[0]) * math.Pi / 180
	band := math.Sin(b.Max[1]*math.Pi/180) - math.Sin(b.Min[1]*math.Pi/180)
	return r * r * dLon * band / 10000
}

func (s *Server) handleFieldRegister(w http.ResponseWriter, r *http.Request, c *call) error {
	name, err := c.params.required("field_name")
	if err != nil {
		return err
	}
	if !validName(name) {
		return badRequest("field_name must be 1 to 200 characters without control characters")
	}
	mp, ok, err := s.parseFieldGeometry(c.params)
	if err != nil {
		return err
	}
	if !ok {
		return badRequest("missing required parameter geometry (GeoJSON Polygon, MultiPolygon or Feature in EPSG:4326)")
	}
	group, _, err := c.params.str("group")
	if err != nil {
		return err
	}
	labels, _, err := c.params.labels("labels")
	if err != nil {
		return err
	}
	indices, _, err := s.fieldIndices(c.user, c.params)
	if err != nil {
		return err
	}
	f, err := s.store.InsertFieldQuota(r.Context(), Field{
		OwnerID: c.user.ID, Name: name, Group: group, Labels: labels, Indices: indices, Geometry: mp,
	}, s.limits.FieldsPerUser)
	if errors.Is(err, ErrExists) {
		return &Error{Status: http.StatusConflict, Code: CodeConflict, Message: fmt.Sprintf("field %q is already registered", name)}
	}
	if errors.Is(err, ErrQuota) {
		return badRequest("field quota reached: at most %d fields per account", s.limits.FieldsPerUser)
	}
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, fieldResponse{Message: fmt.Sprintf("field %q registered", name), Field: toFieldJSON(f)})
}

// userField loads the caller's field named by the field_name parameter
// (404 for a missing field and another user's field alike).
func (s *Server) userField(ctx context.Context, c *call) (Field, error) {
	return s.loadField(ctx, c, true)
}

// loadField is userField, without the geometry unless withGeometry.
func (s *Server) loadField(ctx context.Context, c *call, withGeometry bool) (Field, error) {
	name, err := c.params.required("field_name")
	if err != nil {
		return Field{}, err
	}
	load := s.store.FieldByName
	if !withGeometry {
		load = s.store.FieldSummary
	}
	f, err := load(ctx, c.user.ID, name)
	if errors.Is(err, ErrNotFound) {
		return Field{}, fieldNotFound(name)
	}
	return f, err
}

func (s *Server) handleFieldUpdate(w http.ResponseWriter, r *http.Request, c *call) error {
	f, err := s.userField(r.Context(), c)
	if err != nil {
		return err
	}
	mp, geomGiven, err := s.parseFieldGeometry(c.params)
	if err != nil {
		return err
	}
	// Sending the outline again is not a change: products and uploads stay.
	geomChanged := geomGiven && !sameGeometry(mp, f.Geometry)
	if group, ok, err := c.params.str("group"); err != nil {
		return err
	} else if ok {
		f.Group = group
	}
	if labels, ok, err := c.params.labels("labels"); err != nil {
		return err
	} else if ok {
		f.Labels = labels
	}
	if indices, ok, err := s.fieldIndices(c.user, c.params); err != nil {
		return err
	} else if ok {
		f.Indices = indices
	}
	if geomChanged {
		f.Geometry = mp
	}
	// Products of an old outline no longer describe the field: drop them.
	updated, err := s.store.UpdateField(r.Context(), f, geomChanged)
	if errors.Is(err, ErrNotFound) {
		return fieldNotFound(f.Name) // deleted since it was read
	}
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, fieldResponse{Message: fmt.Sprintf("field %q updated", f.Name), Field: toFieldJSON(updated)})
}

// sameGeometry compares two parsed (normalized) outlines as stored.
func sameGeometry(a, b orb.MultiPolygon) bool {
	ea, err1 := encodeGeometry(a)
	eb, err2 := encodeGeometry(b)
	return err1 == nil && err2 == nil && ea == eb
}

type messageResponse struct {
	Message string `json:"message"`
}

func (s *Server) handleFieldDelete(w http.ResponseWriter, r *http.Request, c *call) error {
	f, err := s.userField(r.Context(), c)
	if err != nil {
		return err
	}
	if err := s.store.DeleteField(r.Context(), f); errors.Is(err, ErrNotFound) {
		return fieldNotFound(f.Name) // deleted concurrently
	} else if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, messageResponse{Message: fmt.Sprintf("field %q deleted with its products", f.Name)})
}

type fieldListResponse struct {
	Fields []fieldJSON `json:"fields"`
}

func (s *Server) handleFieldList(w http.ResponseWriter, r *http.Request, c *call) error {
	group, groupGiven, err := c.params.str("group")
	if err != nil {
		return err
	}
	fields, err := s.store.Fields(r.Context(), c.user.ID)
	if err != nil {
		return err
	}
	out := fieldListResponse{Fields: []fieldJSON{}}
	for _, f := range fields {
		if groupGiven && f.Group != group {
			continue
		}
		out.Fields = append(out.Fields, toFieldJSON(f))
	}
	return writeJSON(w, http.StatusOK, out)
}

type indicesResponse struct {
	Indices []indexJSON `json:"indices"`
}

type indexJSON struct {
	Name    string   `json:"name"`
	Formula string   `json:"formula"`
	Source  string   `json:"source"`
	Bands   []string `json:"bands"`
}

// handleIndices lists the indices the caller may use.
func (s *Server) handleIndices(w http.ResponseWriter, r *http.Request, c *call) error {
	out := indicesResponse{Indices: []indexJSON{}}
	for _, n := range s.indexNames(c.user) {
		ix, _ := s.cat.Lookup(n)
		out.Indices = append(out.Indices, indexJSON{Name: ix.Name, Formula: ix.Formula, Source: ix.Source, Bands: ix.Bands})
	}
	return writeJSON(w, http.StatusOK, out)
}
