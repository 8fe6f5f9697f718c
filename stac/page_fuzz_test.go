package stac

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/internal/testenv"
)

// FuzzDecodePage feeds search pages to decodePage, which splits pages that
// are not valid JSON. Invariants: no panic; a valid page decodes as
// encoding/json decodes it; every feature of a lenient split is a piece of
// the page; and each feature goes through ParseItem and checkItem without
// panicking. Seeds: the real item documents as one-item pages, and pages
// with NaN, 1e400 and numeric ids.
func FuzzDecodePage(f *testing.F) {
	dir := testenv.DataDir(f, "stac-items")
	names, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	for _, n := range names {
		data, err := os.ReadFile(n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add([]byte(`{"type":"FeatureCollection","features":[` + string(data) + `],"links":[{"rel":"next","href":"?page=2"}]}`))
	}
	for _, s := range []string{
		`{"features":[{"id":"a","bbox":[NaN,1,2,3]},{"id":1},{"id":"b","bbox":[1e400,0,1,1]}],"links":[]}`,
		`{"features":[{"id":"a \"}]{[","properties":{"datetime":"2019-06-20T10:00:00Z"}}],"links":[{"rel":"next","href":"x"}]}`,
		`{"features":[`, `[]`, `{"features":{}}`, `{"features":[,,]}`, `{"features":[Infinity,-Infinity]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		features, _, err := decodePage(data)
		if err != nil {
			return
		}
		var strict struct {
			Features []json.RawMessage `json:"features"`
		}
		if json.Unmarshal(data, &strict) == nil && len(strict.Features) != len(features) {
			t.Fatalf("valid page: %d features, encoding/json %d", len(features), len(strict.Features))
		}
		for _, raw := range features {
			if !bytes.Contains(data, raw) {
				t.Fatalf("feature %q is not a piece of the page", raw)
			}
			if it, err := ParseItem(raw, "https://example.com/search"); err == nil {
				_ = checkItem(it, it.Datetime)
			}
		}
	})
}

func TestDecodePageLenient(t *testing.T) {
	page := `{"type":"FeatureCollection","features":[{"id":"a"}, {"id":"b","bbox":[NaN,0,1,1]} ,{"id":"c \"]}"}],` +
		`"links":[{"rel":"next","href":"https://example.com/p2"}]}`
	features, links, err := decodePage([]byte(page))
	require.NoError(t, err)
	got := make([]string, len(features))
	for i, f := range features {
		got[i] = string(f)
	}
	assert.Equal(t, []string{`{"id":"a"}`, `{"id":"b","bbox":[NaN,0,1,1]}`, `{"id":"c \"]}"}`}, got)
	require.Len(t, links, 1)
	assert.Equal(t, "https://example.com/p2", links[0].Href)
}
