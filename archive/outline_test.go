package archive_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/archive"
)

// End to end in the archive: updating with the reversed ring keeps the
// field's version (its products and uploads); a real change bumps it.
func TestUpdateWithReversedRingKeepsVersion(t *testing.T) {
	ctx := context.Background()
	a := openTest(t, t.TempDir())
	u, err := a.CreateUser(ctx, archive.NewUser{Name: "u"})
	require.NoError(t, err)
	geom := func(r orb.Ring) json.RawMessage {
		b, err := json.Marshal(map[string]any{"type": "Polygon", "coordinates": orb.Polygon{r}})
		require.NoError(t, err)
		return b
	}
	ring := orb.Ring{{4.06, 50.74}, {4.07, 50.74}, {4.07, 50.75}, {4.06, 50.75}, {4.06, 50.74}}
	reversed := slices.Clone(ring)
	slices.Reverse(reversed)
	f, err := a.RegisterField(ctx, u, archive.FieldInput{Name: "f", Geometry: geom(ring)})
	require.NoError(t, err)
	for _, tc := range []struct {
		name    string
		ring    orb.Ring
		version int64
	}{
		{"same", ring, f.Version},
		{"reversed", reversed, f.Version},
		{"changed", orb.Ring{{4.06, 50.74}, {4.08, 50.74}, {4.07, 50.75}, {4.06, 50.75}, {4.06, 50.74}}, f.Version + 1},
	} {
		got, err := a.UpdateField(ctx, u, archive.FieldInput{Name: "f", Geometry: geom(tc.ring)})
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.version, got.Version, tc.name)
	}
}

// QA: "UDS-01", "UDS-01 " and NFC/NFD spellings were different fields;
// "." and ".." registered but cannot be addressed in a path.
func TestFieldNamesNormalised(t *testing.T) {
	ctx := context.Background()
	a := openTest(t, t.TempDir())
	u, err := a.CreateUser(ctx, archive.NewUser{Name: "u"})
	require.NoError(t, err)
	geom := json.RawMessage(`{"type":"Polygon","coordinates":[[[4.06,50.74],[4.07,50.74],[4.07,50.75],[4.06,50.74]]]}`)
	_, err = a.RegisterField(ctx, u, archive.FieldInput{Name: " UDS-01\t", Geometry: geom})
	require.NoError(t, err)
	_, err = a.RegisterField(ctx, u, archive.FieldInput{Name: "caf\u00e9", Geometry: geom})
	require.NoError(t, err)
	for _, tc := range []struct {
		name    string
		wantErr error
		stored  string
	}{
		{"UDS-01", archive.ErrExists, ""},
		{"UDS-01 ", archive.ErrExists, ""},
		{" UDS-01", archive.ErrExists, ""},
		{"cafe\u0301", archive.ErrExists, ""}, // NFD of café
		{".", archive.ErrInvalid, ""},
		{"..", archive.ErrInvalid, ""},
		{" .. ", archive.ErrInvalid, ""},
		{"North 1/2", nil, "North 1/2"},
		{"a\u0085b", archive.ErrInvalid, ""}, // C1 control
		{"a\x7fb", archive.ErrInvalid, ""},
		{"   ", archive.ErrInvalid, ""},
		{"...", nil, "..."},
		{" new field ", nil, "new field"},
	} {
		f, err := a.RegisterField(ctx, u, archive.FieldInput{Name: tc.name, Geometry: geom})
		if tc.wantErr != nil {
			require.ErrorIs(t, err, tc.wantErr, "%q", tc.name)
			continue
		}
		require.NoError(t, err, "%q", tc.name)
		assert.Equal(t, tc.stored, f.Name)
	}
	// Lookups take every spelling of the stored name.
	for _, name := range []string{"UDS-01", " UDS-01 ", "cafe\u0301", "caf\u00e9 ", "new field"} {
		f, err := a.Field(ctx, u, name, false)
		require.NoError(t, err, "%q", name)
		assert.Equal(t, archive.FieldName(name), f.Name)
	}
}

// A field stored before names were normalised (inserted here straight into
// the store, as an older version wrote it) stays reachable by its exact
// spelling.
func TestFieldStoredBeforeNormalisation(t *testing.T) {
	ctx := context.Background()
	a := openTest(t, t.TempDir())
	u, err := a.CreateUser(ctx, archive.NewUser{Name: "u"})
	require.NoError(t, err)
	g := orb.MultiPolygon{{{{4.06, 50.74}, {4.07, 50.74}, {4.07, 50.75}, {4.06, 50.74}}}}
	for _, legacy := range []string{"UDS-01 ", "cafe\u0301"} {
		_, err := a.Store().InsertField(ctx, archive.Field{OwnerID: u.ID, Name: legacy, Indices: []string{"ndvi"}, Geometry: g}, 0)
		require.NoError(t, err)
		f, err := a.Field(ctx, u, legacy, false)
		require.NoError(t, err, "%q", legacy)
		assert.Equal(t, legacy, f.Name)
	}
	_, err = a.Field(ctx, u, "nope ", false)
	require.ErrorIs(t, err, archive.ErrNotFound)
}
