package server_test

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/imagery/geotiff"
	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/server"
	"github.com/cropkit/cropkit/server/servertest"
)

// QA: a multipart scene upload mixing bands of two scenes (B04/SCL of
// flanders-31UDS 2018-09-18, B08 of slovenia 2015-07-11) answered 200 with
// every field failed, and a date contradicting the files' was ignored. Band
// files must be one scene (one CRS, one extent, one date): else a 400; the
// date form value dates files that carry none and must agree with files that
// carry one.
func TestSceneUploadIsOneScene(t *testing.T) {
	s2 := testenv.DataDir(t, "s2")
	uds := filepath.Join(s2, "flanders-31UDS", "2018-09-18")
	ues := filepath.Join(s2, "flanders-31UES")
	slo := filepath.Join(s2, "slovenia-eolearn", "2015-07-11")
	// Bands without any date in their metadata, on one 10 m / 20 m grid.
	undated := t.TempDir()
	for name, g := range map[string]geo.Grid{
		"B04": {EPSG: 32631, X0: 574680, Y0: 5622440, DX: 10, DY: 10, Cols: 8, Rows: 8},
		"B08": {EPSG: 32631, X0: 574680, Y0: 5622440, DX: 10, DY: 10, Cols: 8, Rows: 8},
		"B11": {EPSG: 32631, X0: 574680, Y0: 5622440, DX: 20, DY: 20, Cols: 4, Rows: 4},
	} {
		data := make([]float32, g.Cols*g.Rows)
		for i := range data {
			data[i] = 0.3
		}
		var buf bytes.Buffer
		require.NoError(t, geotiff.WriteFloat32(&buf, g, data, -1))
		require.NoError(t, os.WriteFile(filepath.Join(undated, name+".tif"), buf.Bytes(), 0o644))
	}

	env := servertest.New(t, server.Config{})
	upload := func(date string, parts map[string]string) (int, map[string]any, string) {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		if date != "" {
			require.NoError(t, mw.WriteField("date", date))
		}
		for name, file := range parts {
			data, err := os.ReadFile(file)
			require.NoError(t, err)
			w, err := mw.CreateFormFile(name, filepath.Base(file))
			require.NoError(t, err)
			_, err = w.Write(data)
			require.NoError(t, err)
		}
		require.NoError(t, mw.Close())
		req := httptest.NewRequest("POST", "/scenes/ingest", &buf)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		req.Header.Set("Authorization", "Bearer "+env.AdminToken)
		rec := httptest.NewRecorder()
		env.Handler.ServeHTTP(rec, req)
		var m map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &m)
		return rec.Code, m, rec.Body.String()
	}
	for _, tc := range []struct {
		name     string
		date     string
		parts    map[string]string
		status   int
		message  string // in the 400's message
		wantDate string // the 200's date
	}{
		{"bands of two CRS", "", map[string]string{"B04": filepath.Join(uds, "B04.tif"), "SCL": filepath.Join(uds, "SCL.tif"), "B08": filepath.Join(slo, "B08.tif")},
			400, "different CRS", ""},
		{"bands of two extents", "", map[string]string{"B04": filepath.Join(uds, "B04.tif"), "B08": filepath.Join(ues, "2019-06-20", "B08.tif")},
			400, "different extents", ""},
		{"bands of two dates", "", map[string]string{"B04": filepath.Join(ues, "2019-06-20", "B04.tif"), "B08": filepath.Join(ues, "2019-06-25", "B08.tif")},
			400, "different dates", ""},
		{"date contradicting the files", "2099-01-01", map[string]string{"B04": filepath.Join(uds, "B04.tif"), "B08": filepath.Join(uds, "B08.tif"), "SCL": filepath.Join(uds, "SCL.tif")},
			400, "contradicts the band files' acquisition date (2018-09-18)", ""},
		{"date agreeing with the files", "2018-09-18", map[string]string{"B04": filepath.Join(uds, "B04.tif"), "B08": filepath.Join(uds, "B08.tif"), "SCL": filepath.Join(uds, "SCL.tif")},
			200, "", "2018-09-18"},
		{"no date: the files'", "", map[string]string{"B04": filepath.Join(uds, "B04.tif"), "B08": filepath.Join(uds, "B08.tif"), "B11": filepath.Join(uds, "B11.tif")},
			200, "", "2018-09-18"},
		{"undated files take the date given", "2099-01-01", map[string]string{"B04": filepath.Join(undated, "B04.tif"), "B08": filepath.Join(undated, "B08.tif"), "B11": filepath.Join(undated, "B11.tif")},
			200, "", "2099-01-01"},
		{"malformed date", "01/02/2019", map[string]string{"B04": filepath.Join(undated, "B04.tif")}, 400, "date must be YYYY-MM-DD", ""},
	} {
		code, m, body := upload(tc.date, tc.parts)
		require.Equal(t, tc.status, code, "%s: %s", tc.name, body)
		if tc.status == 400 {
			assert.Contains(t, body, tc.message, tc.name)
			continue
		}
		assert.Equal(t, tc.wantDate, m["date"], "%s: %s", tc.name, body)
		assert.Contains(t, m["scene"], "/"+tc.wantDate, tc.name)
	}
}
