package metadata

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
)

// knownKey reports whether k is one of the spec's record keys.
func knownKey(k string) bool {
	switch k {
	case "field_name", "start_date", "harvest_date", "crop_type", "is_cover_crop",
		"yield_amount", "yield_unit", "is_tilled", "tilling_type":
		return true
	}
	return false
}

// Decode reads one JSON record (see the package documentation for the strict
// rules), then validates it. Content errors are *ValidationError; an error
// reading r is returned wrapped.
func Decode(r io.Reader) (Record, error) {
	body, err := io.ReadAll(io.LimitReader(r, MaxBodyBytes+1))
	if err != nil {
		return Record{}, fmt.Errorf("read field metadata: %w", err)
	}
	if len(body) > MaxBodyBytes {
		return Record{}, &ValidationError{"", fmt.Sprintf("body larger than %d bytes", MaxBodyBytes)}
	}
	rec, err := decodeBytes(body)
	if err != nil {
		return Record{}, err
	}
	if err := rec.Validate(); err != nil {
		return Record{}, err
	}
	return rec, nil
}

func decodeBytes(body []byte) (Record, error) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return Record{}, &ValidationError{"", "empty body, want a JSON object"}
	}
	if trimmed[0] != '{' {
		return Record{}, &ValidationError{"", "body is not a JSON object"}
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	var raw map[string]json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return Record{}, &ValidationError{"", "malformed JSON: " + jsonReason(err)}
	}
	if dec.InputOffset() != int64(len(trimmed)) {
		return Record{}, &ValidationError{"", "data after the JSON object"}
	}
	if key, dup := duplicateKey(trimmed); dup {
		return Record{}, &ValidationError{key, "given more than once"}
	}
	var unknown []string
	for k := range raw {
		if !knownKey(k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return Record{}, &ValidationError{unknown[0], "unknown field"}
	}

	var rec Record
	var err error
	str := func(key string, dst *string) {
		if err == nil {
			err = decodeString(key, raw[key], dst)
		}
	}
	boolean := func(key string, dst **bool) {
		if err == nil {
			err = decodeBool(key, raw[key], dst)
		}
	}
	str("field_name", &rec.FieldName)
	str("start_date", &rec.StartDate)
	str("harvest_date", &rec.HarvestDate)
	str("crop_type", &rec.CropType)
	boolean("is_cover_crop", &rec.IsCoverCrop)
	if err == nil {
		err = decodeInt("yield_amount", raw["yield_amount"], &rec.YieldAmount)
	}
	str("yield_unit", &rec.YieldUnit)
	boolean("is_tilled", &rec.IsTilled)
	str("tilling_type", &rec.TillingType)
	if err != nil {
		return Record{}, err
	}
	return rec, nil
}

// absent reports a missing key or a JSON null.
func absent(v json.RawMessage) bool { return v == nil || string(v) == "null" }

func decodeString(key string, v json.RawMessage, dst *string) error {
	if absent(v) {
		return nil
	}
	if v[0] != '"' {
		return &ValidationError{key, "must be a string"}
	}
	if err := json.Unmarshal(v, dst); err != nil {
		return &ValidationError{key, "must be a string"}
	}
	return nil
}

func decodeBool(key string, v json.RawMessage, dst **bool) error {
	if absent(v) {
		return nil
	}
	var b bool
	switch string(v) {
	case "true":
		b = true
	case "false":
	default:
		return &ValidationError{key, "must be a boolean"}
	}
	*dst = &b
	return nil
}

// decodeInt accepts a JSON number with an integral value in int range.
func decodeInt(key string, v json.RawMessage, dst **int) error {
	if absent(v) {
		return nil
	}
	if c := v[0]; c != '-' && (c < '0' || c > '9') {
		return &ValidationError{key, "must be an integer"}
	}
	if n, err := strconv.ParseInt(string(v), 10, strconv.IntSize); err == nil {
		i := int(n)
		*dst = &i
		return nil
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return &ValidationError{key, "must be an integer"}
	}
	if f != math.Trunc(f) {
		return &ValidationError{key, fmt.Sprintf("%s is not an integer", v)}
	}
	if err != nil || f < math.MinInt || f >= math.MaxInt {
		return &ValidationError{key, "out of range"}
	}
	i := int(f)
	*dst = &i
	return nil
}

// jsonReason describes a JSON syntax error with its byte offset.
func jsonReason(err error) string {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return fmt.Sprintf("%v (offset %d)", syn, syn.Offset)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return "unexpected end of JSON"
	}
	return err.Error()
}

// duplicateKey finds a key repeated in the top-level object of body (valid
// JSON, already decoded once): encoding/json keeps the last silently, which
// would drop data the client sent. Keys compare after unescaping, so "a"
// and "\u0061" are the same key.
func duplicateKey(body []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return "", false
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		key, ok := tok.(string)
		if err != nil || !ok {
			return "", false
		}
		if seen[key] {
			return key, true
		}
		seen[key] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return "", false
		}
	}
	return "", false
}
