// Package metadata holds the field metadata records of the specification
// (§2.2, registered by §4.2): one record per field and season, where a season
// is identified by its start_date.
//
// # Decoding
//
// Decode is strict, because a silently dropped key loses agronomic data:
//   - the body is one JSON object of at most MaxBodyBytes, nothing after it;
//   - keys must be the spec's names exactly (case-sensitive); any other key,
//     a misspelling such as "yeild_amount" for example, is an error naming it;
//   - no key may appear twice (encoding/json would keep the last silently);
//   - each value must have the spec's JSON type (strings, booleans, an
//     integer yield_amount; 12.0 is accepted as 12, 12.5 and "12" are not);
//     null means absent.
//
// # Validation rules
//
// Validate (which Decode also applies) enforces:
//   - field_name is required: non-blank, at most MaxTextLen bytes, no
//     control characters;
//   - start_date is required and harvest_date optional, both YYYY-MM-DD and
//     real calendar dates (2019-02-29 is rejected);
//   - harvest_date is not before start_date (the same day is allowed);
//   - yield_amount, when given, is ≥ 0; yield_unit is optional with or
//     without it (the spec lists both as optional);
//   - tilling_type is optional and independent of is_tilled (the spec's
//     sample sends ""; {"is_tilled": false, "tilling_type": "no-till"} is
//     a sensible record);
//   - crop_type, yield_unit and tilling_type are at most MaxTextLen bytes
//     without control characters.
//
// Every failure is a *ValidationError naming the offending key, which also
// matches errors.Is(err, ErrInvalid).
//
// # Seasons
//
// Seasons is the storage rule of §4.2: registering a record with the start
// date of an existing season replaces that season, another start date adds
// one; seasons stay sorted by start date.
package metadata

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/cropkit/cropkit/api"
)

// Limits on one record.
const (
	// MaxBodyBytes is the largest JSON body Decode reads: the server's
	// request body limit (1 MiB), so a body the server accepts is judged
	// by its content, not refused again by a smaller size rule.
	MaxBodyBytes = 1 << 20
	// MaxTextLen is the longest accepted string value, in bytes.
	MaxTextLen = 256
)

// ErrInvalid matches every *ValidationError (errors.Is).
var ErrInvalid = errors.New("invalid field metadata")

// ValidationError reports a record that cannot be accepted. Field is the JSON
// key at fault, empty when the body as a whole is wrong (not JSON, not an
// object, too large).
type ValidationError struct {
	Field  string
	Reason string
}

func (e *ValidationError) Error() string {
	if e.Field == "" {
		return "field metadata: " + e.Reason
	}
	return fmt.Sprintf("field metadata %s: %s", e.Field, e.Reason)
}

// Is makes errors.Is(err, ErrInvalid) true for every ValidationError.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }

// Record is one season of a field's metadata, with the spec's JSON keys.
// Optional booleans and the yield are pointers so that "absent" differs from
// false and 0; optional strings are empty when absent.
type Record struct {
	FieldName   string `json:"field_name"`
	StartDate   string `json:"start_date"`
	HarvestDate string `json:"harvest_date,omitempty"`
	CropType    string `json:"crop_type,omitempty"`
	IsCoverCrop *bool  `json:"is_cover_crop,omitempty"`
	YieldAmount *int   `json:"yield_amount,omitempty"`
	YieldUnit   string `json:"yield_unit,omitempty"`
	IsTilled    *bool  `json:"is_tilled,omitempty"`
	TillingType string `json:"tilling_type,omitempty"`
}

// API is r as the server answers it (api.MetadataRecord, the one wire
// shape of a §2.2 record): the same members, absent strings as nil.
func (r Record) API() api.MetadataRecord {
	text := func(v string) *string {
		if v == "" {
			return nil
		}
		return &v
	}
	return api.MetadataRecord{
		FieldName: r.FieldName, StartDate: r.StartDate, HarvestDate: text(r.HarvestDate),
		CropType: text(r.CropType), IsCoverCrop: r.IsCoverCrop, YieldAmount: r.YieldAmount,
		YieldUnit: text(r.YieldUnit), IsTilled: r.IsTilled, TillingType: text(r.TillingType),
	}
}

// Validate checks r against the package's rules and returns the first
// failure, in key order, as a *ValidationError.
func (r Record) Validate() error {
	if strings.TrimSpace(r.FieldName) == "" {
		return &ValidationError{"field_name", "is required"}
	}
	for _, t := range []struct{ key, v string }{
		{"field_name", r.FieldName},
		{"crop_type", r.CropType},
		{"yield_unit", r.YieldUnit},
		{"tilling_type", r.TillingType},
	} {
		if err := checkText(t.key, t.v); err != nil {
			return err
		}
	}
	if r.StartDate == "" {
		return &ValidationError{"start_date", "is required"}
	}
	start, err := ParseDate(r.StartDate)
	if err != nil {
		return &ValidationError{"start_date", err.Error()}
	}
	if r.HarvestDate != "" {
		harvest, err := ParseDate(r.HarvestDate)
		if err != nil {
			return &ValidationError{"harvest_date", err.Error()}
		}
		if harvest.Before(start) {
			return &ValidationError{"harvest_date", fmt.Sprintf("%s is before start_date %s", r.HarvestDate, r.StartDate)}
		}
	}
	if r.YieldAmount != nil && *r.YieldAmount < 0 {
		return &ValidationError{"yield_amount", fmt.Sprintf("%d is negative", *r.YieldAmount)}
	}
	return nil
}

// checkText bounds a string value and rejects control characters.
func checkText(key, v string) error {
	if len(v) > MaxTextLen {
		return &ValidationError{key, fmt.Sprintf("longer than %d bytes", MaxTextLen)}
	}
	if strings.IndexFunc(v, unicode.IsControl) >= 0 {
		return &ValidationError{key, "contains control characters"}
	}
	return nil
}

// ParseDate parses a YYYY-MM-DD date (exactly ten characters, a real
// calendar day) as midnight UTC.
func ParseDate(s string) (time.Time, error) {
	if len(s) != len(time.DateOnly) {
		return time.Time{}, fmt.Errorf("%q is not a YYYY-MM-DD date", s)
	}
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not a YYYY-MM-DD calendar date", s)
	}
	return t, nil
}

// Seasons is one field's metadata: one Record per start date, sorted by
// start date. The zero value is empty and ready to use.
type Seasons []Record

// API is s as the server answers it, never nil (JSON [] when empty).
func (s Seasons) API() []api.MetadataRecord {
	out := make([]api.MetadataRecord, len(s))
	for i, r := range s {
		out[i] = r.API()
	}
	return out
}

// Upsert stores r as the season starting on r.StartDate: it replaces the
// season with that start date and reports true, or inserts r in date order
// and reports false. r should have passed Validate, so that start dates sort
// as dates.
func (s *Seasons) Upsert(r Record) (replaced bool) {
	i, found := slices.BinarySearchFunc(*s, r.StartDate, func(e Record, d string) int {
		return strings.Compare(e.StartDate, d)
	})
	if found {
		(*s)[i] = r
		return true
	}
	*s = slices.Insert(*s, i, r)
	return false
}

// Get returns the season starting on startDate.
func (s Seasons) Get(startDate string) (Record, bool) {
	i, found := slices.BinarySearchFunc(s, startDate, func(e Record, d string) int {
		return strings.Compare(e.StartDate, d)
	})
	if !found {
		return Record{}, false
	}
	return s[i], true
}

// MarshalJSON writes the seasons as a JSON array, [] when there are none
// (never null), so list responses always carry an array.
func (s Seasons) MarshalJSON() ([]byte, error) {
	if len(s) == 0 {
		return []byte("[]"), nil
	}
	return json.Marshal([]Record(s))
}
