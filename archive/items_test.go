package archive_test

import (
	"context"
	"testing"
	"time"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/archive/backend"
)

func TestSceneItems(t *testing.T) {
	ctx := context.Background()
	core, err := backend.Open(ctx, t.TempDir(), true, archive.Config{})
	require.NoError(t, err)
	defer core.Close()
	st := core.Store()
	u, err := core.CreateUser(ctx, archive.NewUser{Name: "farmer"})
	require.NoError(t, err)
	box := orb.MultiPolygon{orb.Bound{Min: orb.Point{4.05, 50.74}, Max: orb.Point{4.06, 50.75}}.ToPolygon()}
	var fields []archive.Field
	for _, name := range []string{"a", "b"} {
		f, err := st.InsertField(ctx, archive.Field{OwnerID: u.ID, Name: name, Indices: []string{"ndvi"}, Geometry: box}, 0)
		require.NoError(t, err)
		fields = append(fields, f)
	}
	newest, err := st.NewestItem(ctx, "s2")
	require.NoError(t, err)
	assert.True(t, newest.IsZero())

	t1 := time.Date(2019, 6, 20, 10, 57, 3, 123456000, time.UTC)
	t2 := t1.AddDate(0, 0, 10)
	steps := []struct {
		name string
		rec  archive.SceneItem
	}{
		{"first field", archive.SceneItem{Collection: "s2", ID: "A", Datetime: t1, Updated: "u1", Source: "https://x/A", State: archive.ItemIngested, Fields: map[int64]int64{fields[0].ID: 0}}},
		{"second field merges", archive.SceneItem{Collection: "s2", ID: "A", Datetime: t1, Updated: "u1", Source: "https://x/A", State: archive.ItemIngested, Fields: map[int64]int64{fields[1].ID: 0}}},
		{"new outline replaces the version", archive.SceneItem{Collection: "s2", ID: "A", Datetime: t1, Updated: "u1", Source: "https://x/A", State: archive.ItemIngested, Fields: map[int64]int64{fields[0].ID: 3}}},
		{"a later failed item", archive.SceneItem{Collection: "s2", ID: "B", Datetime: t2, Source: "https://x/B", State: archive.ItemFailed, Error: "HTTP 404"}},
		{"a deleted field is skipped", archive.SceneItem{Collection: "s2", ID: "C", Datetime: t1, State: archive.ItemIngested, Fields: map[int64]int64{999: 0}}},
	}
	for _, s := range steps {
		require.NoError(t, core.RecordItem(ctx, s.rec), s.name)
	}
	a, err := st.SceneItem(ctx, "s2", "A")
	require.NoError(t, err)
	assert.Equal(t, map[int64]int64{fields[0].ID: 3, fields[1].ID: 0}, a.Fields)
	assert.Equal(t, t1, a.Datetime)
	assert.Equal(t, "u1", a.Updated)
	assert.False(t, a.IngestedAt.IsZero())
	_, err = st.SceneItem(ctx, "s2", "Z")
	require.ErrorIs(t, err, archive.ErrNotFound)
	c, err := st.SceneItem(ctx, "s2", "C")
	require.NoError(t, err)
	assert.Empty(t, c.Fields)

	// Newest counts ingested items only: a failed one may be retried later.
	newest, err = st.NewestItem(ctx, "s2")
	require.NoError(t, err)
	assert.Equal(t, t1, newest)

	tests := []struct {
		q   archive.ItemQuery
		ids []string
	}{
		{archive.ItemQuery{}, []string{"B", "A", "C"}},
		{archive.ItemQuery{Limit: 1}, []string{"B"}},
		{archive.ItemQuery{Collection: "landsat"}, nil},
	}
	for _, tt := range tests {
		list, err := core.SceneItems(ctx, tt.q)
		require.NoError(t, err)
		var ids []string
		for _, it := range list {
			ids = append(ids, it.ID)
		}
		assert.Equal(t, tt.ids, ids, "%+v", tt.q)
	}

	// Watched fields, and deleting a field forgets it everywhere.
	require.NoError(t, st.MarkWatched(ctx, fields[0].ID, 0))
	require.NoError(t, st.MarkWatched(ctx, fields[0].ID, 3))
	require.NoError(t, st.MarkWatched(ctx, fields[1].ID, 0))
	require.NoError(t, st.MarkWatched(ctx, 999, 0))
	w, err := st.WatchedFields(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[int64]int64{fields[0].ID: 3, fields[1].ID: 0}, w)
	require.NoError(t, st.DeleteField(ctx, fields[1].ID))
	w, err = st.WatchedFields(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[int64]int64{fields[0].ID: 3}, w)
	a, err = st.SceneItem(ctx, "s2", "A")
	require.NoError(t, err)
	assert.Equal(t, map[int64]int64{fields[0].ID: 3}, a.Fields)
}
