package archive

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/paulmach/orb"

	"github.com/cropkit/cropkit/api"
	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/metadata"
)

// FieldInput is a field registration or update. On update, nil members
// stay as they are.
type FieldInput struct {
	Name string
	// Geometry is a GeoJSON Polygon, MultiPolygon or Feature in EPSG:4326.
	Geometry json.RawMessage
	Group    *string
	Labels   map[string]string
	// Indices are the indices the field is processed for; nil on
	// registration means every index the owner may use.
	Indices []string
}

// ParseOutline reads and validates a field outline (GeoJSON in EPSG:4326)
// with the extent caps: ingestion reads a field's whole bounding box, so a
// field's cost is its box, not its area.
func (a *Archive) ParseOutline(raw []byte) (orb.MultiPolygon, error) {
	mp, err := geo.ParseGeometry(raw)
	if err != nil {
		return nil, InvalidGeometry("geometry: %v", err)
	}
	if err := ValidateOutline(mp, a.limits); err != nil {
		return nil, err
	}
	return mp, nil
}

// ValidateOutline checks a field outline with the server's rules
// (geo.ValidateOutline under limits.FieldParts and limits.FieldExtentHa;
// zero limits take DefaultLimits): ErrInvalidGeometry when it breaks one.
func ValidateOutline(mp orb.MultiPolygon, limits Limits) error {
	limits = limits.withDefaults()
	if err := geo.ValidateOutline(mp, geo.OutlineLimits{Parts: limits.FieldParts, ExtentHa: limits.FieldExtentHa}); err != nil {
		return InvalidGeometry("geometry: %v", err)
	}
	return nil
}

// IndexNames is every index of the catalogue u may use.
func (a *Archive) IndexNames(u User) []string {
	var out []string
	for _, n := range a.cat.Names() {
		if u.May(n) {
			out = append(out, n)
		}
	}
	return out
}

// CheckIndex refuses an index the catalogue does not know (ErrInvalid) or
// u may not use (ErrForbidden).
func (a *Archive) CheckIndex(u User, name string) error {
	if _, ok := a.cat.Lookup(name); !ok {
		return Invalid("unknown index %q (known: %v)", name, a.cat.Names())
	}
	if !u.May(name) {
		return Forbidden("no access to index %q", name)
	}
	return nil
}

func (a *Archive) checkIndices(u User, names []string) ([]string, error) {
	if len(names) == 0 {
		return nil, Invalid("parameter indices is empty")
	}
	var out []string
	for _, n := range names {
		if err := a.CheckIndex(u, n); err != nil {
			return nil, err
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

func (a *Archive) checkAttributes(in FieldInput) error {
	if in.Group != nil && len(*in.Group) > a.limits.GroupBytes {
		return Invalid("group is %d bytes; at most %d", len(*in.Group), a.limits.GroupBytes)
	}
	if len(in.Labels) > a.limits.Labels {
		return Invalid("%d labels; at most %d per field", len(in.Labels), a.limits.Labels)
	}
	for k, v := range in.Labels {
		if len(k) > a.limits.LabelBytes || len(v) > a.limits.LabelBytes {
			return Invalid("label %.40q: keys and values are at most %d bytes", k, a.limits.LabelBytes)
		}
	}
	return nil
}

// RegisterField registers a new field of u.
func (a *Archive) RegisterField(ctx context.Context, u User, in FieldInput) (Field, error) {
	in.Name = FieldName(in.Name)
	if err := checkFieldName(in.Name, a.limits.NameBytes); err != nil {
		return Field{}, err
	}
	if in.Geometry == nil {
		return Field{}, Invalid("missing required parameter geometry (GeoJSON Polygon, MultiPolygon or Feature in EPSG:4326)")
	}
	mp, err := a.ParseOutline(in.Geometry)
	if err != nil {
		return Field{}, err
	}
	if err := a.checkAttributes(in); err != nil {
		return Field{}, err
	}
	indices := a.IndexNames(u)
	if in.Indices != nil {
		if indices, err = a.checkIndices(u, in.Indices); err != nil {
			return Field{}, err
		}
	}
	f := Field{OwnerID: u.ID, Name: in.Name, Labels: in.Labels, Indices: indices, Geometry: mp}
	if in.Group != nil {
		f.Group = *in.Group
	}
	f, err = a.store.InsertField(ctx, f, a.limits.FieldsPerUser)
	switch {
	case errors.Is(err, ErrExists):
		return Field{}, errorf(ErrExists, "field %q is already registered", in.Name)
	case errors.Is(err, ErrQuota):
		return Field{}, errorf(ErrQuota, "field quota reached: at most %d fields per account", a.limits.FieldsPerUser)
	}
	return f, err
}

// Field returns u's field name, with its outline when withGeometry.
func (a *Archive) Field(ctx context.Context, u User, name string, withGeometry bool) (Field, error) {
	canonical := FieldName(name)
	load := a.store.FieldByName
	if !withGeometry {
		load = a.fieldSummary
	}
	f, err := load(ctx, u.ID, canonical)
	if errors.Is(err, ErrNotFound) && canonical != name {
		// A field registered before names were normalised keeps its
		// spelling as stored: the exact name still finds it.
		f, err = load(ctx, u.ID, name)
	}
	if errors.Is(err, ErrNotFound) {
		return Field{}, FieldNotFound(canonical)
	}
	return f, err
}

// Fields lists u's fields by name (in group only when group is non-nil).
func (a *Archive) Fields(ctx context.Context, u User, group *string) ([]Field, error) {
	all, err := a.store.Fields(ctx, u.ID)
	if err != nil || group == nil {
		return all, err
	}
	out := all[:0]
	for _, f := range all {
		if f.Group == *group {
			out = append(out, f)
		}
	}
	return out, nil
}

// UpdateField changes u's field in.Name. A new outline drops its products
// and uploads (they describe the old one): rows first, files after commit.
func (a *Archive) UpdateField(ctx context.Context, u User, in FieldInput) (Field, error) {
	f, err := a.Field(ctx, u, in.Name, true)
	if err != nil {
		return Field{}, err
	}
	if err := a.checkAttributes(in); err != nil {
		return Field{}, err
	}
	newOutline := false
	if in.Geometry != nil {
		mp, err := a.ParseOutline(in.Geometry)
		if err != nil {
			return Field{}, err
		}
		// Sending the outline again is not a change: products and uploads stay.
		if !sameGeometry(mp, f.Geometry) {
			f.Geometry, newOutline = mp, true
		}
	}
	if in.Group != nil {
		f.Group = *in.Group
	}
	if in.Labels != nil {
		f.Labels = in.Labels
	}
	if in.Indices != nil {
		if f.Indices, err = a.checkIndices(u, in.Indices); err != nil {
			return Field{}, err
		}
	}
	a.step("update:before-commit")
	if newOutline {
		// Uploads of this field wait for the change and its cleanup, then
		// store for the new outline (SaveUpload).
		l := a.outlineLock(f.ID)
		l.Lock()
		defer l.Unlock()
	}
	updated, dropped, err := a.store.UpdateField(ctx, f, newOutline)
	if errors.Is(err, ErrNotFound) {
		return Field{}, FieldNotFound(f.Name) // deleted since it was read
	}
	if err != nil {
		return Field{}, err
	}
	a.changed(ctx, false, true)
	a.step("update:after-commit")
	a.deleteBlobs(ctx, dropped)
	if newOutline {
		a.deleteUploadsBefore(ctx, f.ID, updated.Version)
	}
	return updated, nil
}

// sameGeometry compares two parsed outlines as point sets of rings: a ring
// and its reverse, or the same ring from another starting vertex, are the
// same outline (README: sending the current outline again changes nothing),
// so each ring is put in a canonical form before the stored encodings are
// compared.
func sameGeometry(a, b orb.MultiPolygon) bool {
	ea, err1 := EncodeGeometry(canonicalOutline(a))
	eb, err2 := EncodeGeometry(canonicalOutline(b))
	return err1 == nil && err2 == nil && ea == eb
}

// canonicalOutline is a copy of mp with every ring starting at its smallest
// vertex (by lon, then lat) and running in the direction whose second vertex
// is the smaller: one spelling per ring whatever its orientation and start.
func canonicalOutline(mp orb.MultiPolygon) orb.MultiPolygon {
	out := make(orb.MultiPolygon, len(mp))
	for i, poly := range mp {
		out[i] = make(orb.Polygon, len(poly))
		for j, ring := range poly {
			out[i][j] = canonicalRing(ring)
		}
	}
	return out
}

func canonicalRing(ring orb.Ring) orb.Ring {
	pts := []orb.Point(ring)
	if len(pts) > 1 && pts[0] == pts[len(pts)-1] {
		pts = pts[:len(pts)-1] // the closing vertex repeats the first
	}
	n := len(pts)
	if n < 3 {
		return slices.Clone(ring)
	}
	less := func(p, q orb.Point) bool { return p[0] < q[0] || (p[0] == q[0] && p[1] < q[1]) }
	start := 0
	for i, p := range pts {
		if less(p, pts[start]) {
			start = i
		}
	}
	step := 1
	if less(pts[(start-1+n)%n], pts[(start+1)%n]) {
		step = -1
	}
	out := make(orb.Ring, 0, n+1)
	for k := range n {
		out = append(out, pts[((start+step*k)%n+n)%n])
	}
	return append(out, out[0])
}

// DeleteField deletes u's field with its seasons and products (rows first,
// then its files).
func (a *Archive) DeleteField(ctx context.Context, u User, name string) error {
	f, err := a.Field(ctx, u, name, false)
	if err != nil {
		return err
	}
	a.step("delete:before-commit")
	if err := a.store.DeleteField(ctx, f.ID); errors.Is(err, ErrNotFound) {
		return FieldNotFound(name) // deleted concurrently
	} else if err != nil {
		return err
	}
	a.changed(ctx, false, true)
	a.step("delete:after-commit")
	// A writer racing this delete (an ingestion, an upload) removes what it
	// wrote when it finds the field gone; ids are never reused; Sweep
	// collects whatever a crash leaves.
	a.deleteFieldBlobs(ctx, f.ID)
	return nil
}

// RegisterSeason stores one season of field metadata (§4.2): the same
// start date replaces that season, another adds one. It reports whether a
// season was replaced and how many the field has.
func (a *Archive) RegisterSeason(ctx context.Context, u User, rec metadata.Record) (f Field, replaced bool, count int, err error) {
	f, err = a.Field(ctx, u, rec.FieldName, false)
	if err != nil {
		return Field{}, false, 0, err
	}
	err = a.store.UpdateSeasons(ctx, f.ID, func(current []Season) ([]Season, error) {
		seasons, err := decodeSeasons(current)
		if err != nil {
			return nil, err
		}
		replaced = seasons.Upsert(rec)
		count = len(seasons)
		return encodeSeasons(seasons)
	})
	if errors.Is(err, ErrNotFound) {
		return Field{}, false, 0, FieldNotFound(f.Name) // deleted since it was read
	}
	return f, replaced, count, err
}

// Seasons returns the metadata seasons of u's field, by start date.
func (a *Archive) Seasons(ctx context.Context, u User, name string) (Field, metadata.Seasons, error) {
	f, err := a.Field(ctx, u, name, false)
	if err != nil {
		return Field{}, nil, err
	}
	seasons, err := a.fieldSeasons(ctx, f.ID)
	return f, seasons, err
}

func (a *Archive) fieldSeasons(ctx context.Context, fieldID int64) (metadata.Seasons, error) {
	stored, err := a.store.Seasons(ctx, fieldID)
	if err != nil {
		return nil, err
	}
	return decodeSeasons(stored)
}

func decodeSeasons(stored []Season) (metadata.Seasons, error) {
	var out metadata.Seasons
	for _, se := range stored {
		var rec metadata.Record
		if err := json.Unmarshal(se.Record, &rec); err != nil {
			return nil, fmt.Errorf("stored season %s: %w", se.StartDate, err)
		}
		out.Upsert(rec)
	}
	return out, nil
}

func encodeSeasons(seasons metadata.Seasons) ([]Season, error) {
	out := make([]Season, 0, len(seasons))
	for _, rec := range seasons {
		b, err := json.Marshal(rec)
		if err != nil {
			return nil, fmt.Errorf("encode season %s: %w", rec.StartDate, err)
		}
		out = append(out, Season{StartDate: rec.StartDate, Record: b})
	}
	return out, nil
}

// geometry is the GeoJSON of a field outline, as stored and answered.
func geometry(mp orb.MultiPolygon) (api.Geometry, error) {
	coords, err := json.Marshal(mp)
	if err != nil {
		return api.Geometry{}, fmt.Errorf("encode geometry: %w", err)
	}
	return api.Geometry{Type: "MultiPolygon", Coordinates: coords}, nil
}

// EncodeGeometry is the stored (and answered) GeoJSON of a field outline.
func EncodeGeometry(mp orb.MultiPolygon) (string, error) {
	g, err := geometry(mp)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(g)
	if err != nil {
		return "", fmt.Errorf("encode geometry: %w", err)
	}
	return string(b), nil
}

// Wire is the field as answered (api.Field): its outline's GeoJSON, its
// box, its geodesic area to 4 decimals.
func (f Field) Wire() api.Field {
	g, _ := geometry(f.Geometry) // a stored outline always encodes
	labels, indices := f.Labels, f.Indices
	if labels == nil {
		labels = map[string]string{}
	}
	if indices == nil {
		indices = []string{}
	}
	return api.Field{
		FieldName: f.Name,
		Group:     f.Group,
		Labels:    labels,
		Indices:   indices,
		Geometry:  g,
		BBox:      [4]float64{f.Bound.Min[0], f.Bound.Min[1], f.Bound.Max[0], f.Bound.Max[1]},
		AreaHa:    math.Round(f.AreaHa()*1e4) / 1e4,
		CreatedAt: f.Created.UTC().Format(time.RFC3339),
		UpdatedAt: f.Updated.UTC().Format(time.RFC3339),
	}
}

// AreaHa is the field outline's geodesic area in hectares.
func (f Field) AreaHa() float64 { return geo.GeodesicArea(f.Geometry) / 10000 }

// MaxSeasonBytes bounds the JSON of one §2.2 metadata record.
const MaxSeasonBytes = metadata.MaxBodyBytes

// RegisterSeasonJSON decodes one §2.2 metadata record (ErrInvalid naming
// the key at fault) and stores it as RegisterSeason does.
func (a *Archive) RegisterSeasonJSON(ctx context.Context, u User, body []byte) (api.MetadataRegistered, error) {
	rec, err := metadata.Decode(bytes.NewReader(body))
	var verr *metadata.ValidationError
	if errors.As(err, &verr) {
		return api.MetadataRegistered{}, &Error{Kind: ErrInvalid, Msg: verr.Error(), Cause: err}
	}
	if err != nil {
		return api.MetadataRegistered{}, err
	}
	f, replaced, count, err := a.RegisterSeason(ctx, u, rec)
	if err != nil {
		return api.MetadataRegistered{}, err
	}
	verb := "added"
	if replaced {
		verb = "replaced"
	}
	return api.MetadataRegistered{
		Message:   fmt.Sprintf("metadata registered for field %q: season starting %s %s", f.Name, rec.StartDate, verb),
		FieldName: f.Name, StartDate: rec.StartDate, Seasons: count,
	}, nil
}

// SeasonsJSON is field name's seasons as answered (api.FieldSeasons).
func (a *Archive) SeasonsJSON(ctx context.Context, u User, name string) (api.FieldSeasons, error) {
	f, seasons, err := a.Seasons(ctx, u, name)
	if err != nil {
		return api.FieldSeasons{}, err
	}
	return api.FieldSeasons{FieldName: f.Name, Seasons: seasons.API()}, nil
}
