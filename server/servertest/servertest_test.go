package servertest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
)

// recordingTB records Errorf calls instead of failing.
type recordingTB struct {
	testing.TB
	errors []string
}

func (r *recordingTB) Helper() {}
func (r *recordingTB) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func TestValidateCatchesMismatches(t *testing.T) {
	for _, tc := range []struct {
		name    string
		method  string
		path    string
		status  int
		ct      string
		body    string
		wantErr bool
	}{
		{"valid field list", "GET", "/fields/list", 200, "application/json", `{"fields":[]}`, false},
		{"missing required member", "GET", "/fields/list", 200, "application/json", `{}`, true},
		{"wrong member type", "POST", "/files/list", 200, "application/json", `{"field_name":1,"indices":{}}`, true},
		{"undocumented status", "GET", "/fields/list", 418, "application/json", `{"error":{"code":"x","message":"y"}}`, true},
		{"error shape ok", "POST", "/fields/register", 400, "application/json", `{"error":{"code":"bad_request","message":"m"}}`, false},
		{"error shape wrong", "POST", "/fields/register", 400, "application/json", `{"message":"m"}`, true},
		{"unknown route with error shape", "POST", "/nope", 404, "application/json", `{"error":{"code":"not_found","message":"m"}}`, false},
		{"unknown route plain text", "POST", "/nope", 404, "text/plain", `404 page not found`, true},
		{"png download", "GET", "/download/ndvi/image", 200, "image/png", "\x89PNG", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := &recordingTB{TB: t}
			h := Validate(rt, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tc.ct)
				w.WriteHeader(tc.status)
				fmt.Fprint(w, tc.body)
			}), nil)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
			assert.Equal(t, tc.status, rec.Code)
			assert.Equal(t, tc.body, rec.Body.String())
			assert.Equal(t, tc.wantErr, len(rt.errors) > 0, "%v", rt.errors)
		})
	}
}
