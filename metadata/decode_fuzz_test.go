package metadata

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// FuzzDecode feeds arbitrary bodies to Decode. Invariants: no panic; every
// error is a *ValidationError (the body is never read past MaxBodyBytes);
// an accepted record passes Validate, and its JSON encoding decodes to the
// same record (the round trip the server's GET relies on). Seeds: the spec's
// sample and the committed corpus (no field metadata ships with the real data).
func FuzzDecode(f *testing.F) {
	f.Add([]byte(sample))
	f.Add([]byte(`{"field_name":"a","start_date":"2019-03-01","yield_amount":1e3,"yield_unit":"kg"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		rec, err := Decode(bytes.NewReader(body))
		if err != nil {
			var ve *ValidationError
			if !errors.As(err, &ve) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("error is not a *ValidationError: %v", err)
			}
			return
		}
		if len(body) > MaxBodyBytes {
			t.Fatalf("accepted a body of %d bytes", len(body))
		}
		if err := rec.Validate(); err != nil {
			t.Fatalf("accepted record fails Validate: %v", err)
		}
		b, err := json.Marshal(rec)
		if err != nil {
			t.Fatalf("marshal %+v: %v", rec, err)
		}
		back, err := Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("re-decode %s: %v", b, err)
		}
		if !reflect.DeepEqual(rec, back) {
			t.Fatalf("round trip changed the record:\n%+v\n%+v", rec, back)
		}
	})
}
