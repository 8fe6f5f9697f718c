package metadata

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func ptr[T any](v T) *T { return &v }

// sample is the spec's sample body (§4.2): tilling_type is an empty string.
const sample = `{
  "field_name": "UES-03",
  "start_date": "2018-10-15",
  "harvest_date": "2019-07-30",
  "crop_type": "winter wheat",
  "is_cover_crop": false,
  "yield_amount": 9,
  "yield_unit": "t/ha",
  "is_tilled": false,
  "tilling_type": ""
}`

func TestDecodeSample(t *testing.T) {
	r, err := Decode(strings.NewReader(sample))
	require.NoError(t, err)
	assert.Equal(t, Record{
		FieldName:   "UES-03",
		StartDate:   "2018-10-15",
		HarvestDate: "2019-07-30",
		CropType:    "winter wheat",
		IsCoverCrop: ptr(false),
		YieldAmount: ptr(9),
		YieldUnit:   "t/ha",
		IsTilled:    ptr(false),
		TillingType: "",
	}, r)
}

func TestDecode(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		want      Record
		wantField string // of the *ValidationError; "-" for no error
		wantIn    string // substring of the reason
	}{
		{"minimal", `{"field_name":"a","start_date":"2019-03-01"}`,
			Record{FieldName: "a", StartDate: "2019-03-01"}, "-", ""},
		{"nulls are absent", `{"field_name":"a","start_date":"2019-03-01","harvest_date":null,"is_tilled":null,"yield_amount":null,"crop_type":null}`,
			Record{FieldName: "a", StartDate: "2019-03-01"}, "-", ""},
		{"surrounding whitespace", " \n\t{\"field_name\":\"a\",\"start_date\":\"2019-03-01\"}\n ",
			Record{FieldName: "a", StartDate: "2019-03-01"}, "-", ""},
		{"integral float yield", `{"field_name":"a","start_date":"2019-03-01","yield_amount":12.0,"yield_unit":"t"}`,
			Record{FieldName: "a", StartDate: "2019-03-01", YieldAmount: ptr(12), YieldUnit: "t"}, "-", ""},
		{"exponent yield", `{"field_name":"a","start_date":"2019-03-01","yield_amount":1e3,"yield_unit":"kg"}`,
			Record{FieldName: "a", StartDate: "2019-03-01", YieldAmount: ptr(1000), YieldUnit: "kg"}, "-", ""},
		{"zero yield", `{"field_name":"a","start_date":"2019-03-01","yield_amount":0,"yield_unit":"t/ha"}`,
			Record{FieldName: "a", StartDate: "2019-03-01", YieldAmount: ptr(0), YieldUnit: "t/ha"}, "-", ""},
		{"tilled with type", `{"field_name":"a","start_date":"2019-03-01","is_tilled":true,"tilling_type":"plough"}`,
			Record{FieldName: "a", StartDate: "2019-03-01", IsTilled: ptr(true), TillingType: "plough"}, "-", ""},
		{"unicode text", `{"field_name":"Akker \u00e9\u00e9n","start_date":"2019-03-01","crop_type":"suikerbiet"}`,
			Record{FieldName: "Akker één", StartDate: "2019-03-01", CropType: "suikerbiet"}, "-", ""},

		{"no-till, not tilled", `{"field_name":"a","start_date":"2019-03-01","is_tilled":false,"tilling_type":"no-till"}`,
			Record{FieldName: "a", StartDate: "2019-03-01", IsTilled: ptr(false), TillingType: "no-till"}, "-", ""},
		{"yield without unit", `{"field_name":"a","start_date":"2019-03-01","yield_amount":9}`,
			Record{FieldName: "a", StartDate: "2019-03-01", YieldAmount: ptr(9)}, "-", ""},

		// Duplicate keys: encoding/json would keep the last silently.
		{"duplicate key", `{"field_name":"a","start_date":"2019-03-01","yield_amount":5,"yield_amount":50}`, Record{}, "yield_amount", "more than once"},
		{"duplicate escaped key", `{"field_name":"a","start_date":"2019-03-01","\u0066ield_name":"b"}`, Record{}, "field_name", "more than once"},
		{"duplicate null key", `{"field_name":"a","start_date":"2019-03-01","crop_type":null,"crop_type":"maize"}`, Record{}, "crop_type", "more than once"},

		// Body-level errors.
		{"empty", ``, Record{}, "", "empty body"},
		{"blank", "  \n", Record{}, "", "empty body"},
		{"array", `[{"field_name":"a"}]`, Record{}, "", "not a JSON object"},
		{"string", `"a"`, Record{}, "", "not a JSON object"},
		{"truncated", `{"field_name":"a"`, Record{}, "", "malformed JSON"},
		{"syntax", `{"field_name":"a",}`, Record{}, "", "malformed JSON"},
		{"trailing object", `{"field_name":"a","start_date":"2019-03-01"}{}`, Record{}, "", "after the JSON object"},
		{"trailing brace", `{"field_name":"a","start_date":"2019-03-01"}}`, Record{}, "", "after the JSON object"},

		// Unknown keys, exact names.
		{"unknown key", `{"field_name":"a","start_date":"2019-03-01","yeild_amount":3}`, Record{}, "yeild_amount", "unknown field"},
		{"wrong case", `{"Field_Name":"a","start_date":"2019-03-01"}`, Record{}, "Field_Name", "unknown field"},
		{"first unknown sorted", `{"zz":1,"field_name":"a","aa":2}`, Record{}, "aa", "unknown field"},

		// Wrong types name the key.
		{"field_name number", `{"field_name":3,"start_date":"2019-03-01"}`, Record{}, "field_name", "must be a string"},
		{"start_date object", `{"field_name":"a","start_date":{"d":1}}`, Record{}, "start_date", "must be a string"},
		{"harvest_date geojson", `{"field_name":"a","start_date":"2019-03-01","harvest_date":{"type":"Point"}}`, Record{}, "harvest_date", "must be a string"},
		{"crop_type bool", `{"field_name":"a","start_date":"2019-03-01","crop_type":true}`, Record{}, "crop_type", "must be a string"},
		{"is_cover_crop string", `{"field_name":"a","start_date":"2019-03-01","is_cover_crop":"true"}`, Record{}, "is_cover_crop", "must be a boolean"},
		{"is_tilled number", `{"field_name":"a","start_date":"2019-03-01","is_tilled":1}`, Record{}, "is_tilled", "must be a boolean"},
		{"yield string", `{"field_name":"a","start_date":"2019-03-01","yield_amount":"12","yield_unit":"t"}`, Record{}, "yield_amount", "must be an integer"},
		{"yield fraction", `{"field_name":"a","start_date":"2019-03-01","yield_amount":12.5,"yield_unit":"t"}`, Record{}, "yield_amount", "not an integer"},
		{"yield huge", `{"field_name":"a","start_date":"2019-03-01","yield_amount":1e30,"yield_unit":"t"}`, Record{}, "yield_amount", "out of range"},
		{"yield overflow", `{"field_name":"a","start_date":"2019-03-01","yield_amount":99999999999999999999,"yield_unit":"t"}`, Record{}, "yield_amount", "out of range"},
		{"yield_unit number", `{"field_name":"a","start_date":"2019-03-01","yield_amount":1,"yield_unit":5}`, Record{}, "yield_unit", "must be a string"},
		{"tilling_type array", `{"field_name":"a","start_date":"2019-03-01","tilling_type":[]}`, Record{}, "tilling_type", "must be a string"},

		// Decode validates.
		{"missing start_date", `{"field_name":"a"}`, Record{}, "start_date", "is required"},
		{"negative yield", `{"field_name":"a","start_date":"2019-03-01","yield_amount":-1,"yield_unit":"t"}`, Record{}, "yield_amount", "negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decode(strings.NewReader(tt.body))
			if tt.wantField == "-" {
				require.NoError(t, err)
				assert.Equal(t, tt.want, got)
				return
			}
			var ve *ValidationError
			require.ErrorAs(t, err, &ve)
			require.ErrorIs(t, err, ErrInvalid)
			assert.Equal(t, tt.wantField, ve.Field)
			assert.Contains(t, ve.Reason, tt.wantIn)
			assert.Equal(t, Record{}, got)
		})
	}
}

func TestDecodeSizeLimit(t *testing.T) {
	pad := strings.Repeat(" ", MaxBodyBytes)
	_, err := Decode(strings.NewReader(`{"field_name":"a","start_date":"2019-03-01"}` + pad))
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Contains(t, ve.Reason, "larger than")

	// Exactly at the limit is fine.
	body := `{"field_name":"a","start_date":"2019-03-01"}`
	body += strings.Repeat(" ", MaxBodyBytes-len(body))
	_, err = Decode(strings.NewReader(body))
	require.NoError(t, err)
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, io.ErrClosedPipe }

func TestDecodeReadError(t *testing.T) {
	_, err := Decode(failingReader{})
	require.ErrorIs(t, err, io.ErrClosedPipe)
	assert.False(t, errors.Is(err, ErrInvalid), "an I/O error is not the client's fault")
}

func TestValidate(t *testing.T) {
	base := Record{FieldName: "UES-03", StartDate: "2019-03-01"}
	with := func(f func(*Record)) Record { r := base; f(&r); return r }
	long := strings.Repeat("x", MaxTextLen+1)
	tests := []struct {
		name      string
		r         Record
		wantField string // "" for valid
		wantIn    string
	}{
		{"minimal", base, "", ""},
		{"full", Record{FieldName: "f", StartDate: "2019-03-01", HarvestDate: "2019-08-01", CropType: "maize",
			IsCoverCrop: ptr(true), YieldAmount: ptr(11), YieldUnit: "t/ha", IsTilled: ptr(true), TillingType: "plough"}, "", ""},
		{"harvest same day", with(func(r *Record) { r.HarvestDate = "2019-03-01" }), "", ""},
		{"leap day", with(func(r *Record) { r.StartDate = "2020-02-29" }), "", ""},
		{"empty tilling_type untilled", with(func(r *Record) { r.IsTilled = ptr(false) }), "", ""},
		{"text at limit", with(func(r *Record) { r.CropType = long[:MaxTextLen] }), "", ""},

		{"no field_name", with(func(r *Record) { r.FieldName = "" }), "field_name", "is required"},
		{"blank field_name", with(func(r *Record) { r.FieldName = " \t" }), "field_name", "is required"},
		{"field_name control char", with(func(r *Record) { r.FieldName = "a\nb" }), "field_name", "control"},
		{"field_name too long", with(func(r *Record) { r.FieldName = long }), "field_name", "longer than"},
		{"crop_type too long", with(func(r *Record) { r.CropType = long }), "crop_type", "longer than"},
		{"tilling_type control char", with(func(r *Record) { r.IsTilled = ptr(true); r.TillingType = "a\x00" }), "tilling_type", "control"},

		{"no start_date", with(func(r *Record) { r.StartDate = "" }), "start_date", "is required"},
		{"start_date slashes", with(func(r *Record) { r.StartDate = "2019/03/01" }), "start_date", "YYYY-MM-DD"},
		{"start_date short", with(func(r *Record) { r.StartDate = "2019-3-1" }), "start_date", "YYYY-MM-DD"},
		{"start_date datetime", with(func(r *Record) { r.StartDate = "2019-03-01T00:00:00Z" }), "start_date", "YYYY-MM-DD"},
		{"start_date day 30 of February", with(func(r *Record) { r.StartDate = "2019-02-30" }), "start_date", "calendar date"},
		{"start_date not leap", with(func(r *Record) { r.StartDate = "2019-02-29" }), "start_date", "calendar date"},
		{"start_date month 13", with(func(r *Record) { r.StartDate = "2019-13-01" }), "start_date", "calendar date"},
		{"harvest_date bad", with(func(r *Record) { r.HarvestDate = "next week" }), "harvest_date", "YYYY-MM-DD"},
		{"harvest_date day 31 of April", with(func(r *Record) { r.HarvestDate = "2019-04-31" }), "harvest_date", "calendar date"},
		{"harvest before start", with(func(r *Record) { r.HarvestDate = "2019-02-28" }), "harvest_date", "before start_date"},

		{"negative yield", with(func(r *Record) { r.YieldAmount = ptr(-3); r.YieldUnit = "t" }), "yield_amount", "negative"},
		// The spec lists yield_amount, yield_unit, is_tilled and tilling_type
		// as optional, each on its own.
		{"yield without unit", with(func(r *Record) { r.YieldAmount = ptr(3) }), "", ""},
		{"unit without yield", with(func(r *Record) { r.YieldUnit = "t/ha" }), "", ""},
		{"no-till, not tilled", with(func(r *Record) { r.IsTilled = ptr(false); r.TillingType = "no-till" }), "", ""},
		{"tilling_type without is_tilled", with(func(r *Record) { r.TillingType = "plough" }), "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.r.Validate()
			if tt.wantField == "" {
				require.NoError(t, err)
				return
			}
			var ve *ValidationError
			require.ErrorAs(t, err, &ve)
			assert.Equal(t, tt.wantField, ve.Field)
			assert.Contains(t, ve.Reason, tt.wantIn)
			assert.ErrorIs(t, err, ErrInvalid)
			assert.Contains(t, err.Error(), tt.wantField)
		})
	}
}

func TestValidationErrorMessage(t *testing.T) {
	assert.Equal(t, "field metadata start_date: is required", (&ValidationError{"start_date", "is required"}).Error())
	assert.Equal(t, "field metadata: empty body", (&ValidationError{"", "empty body"}).Error())
}

func TestRecordJSONRoundTrip(t *testing.T) {
	r, err := Decode(strings.NewReader(sample))
	require.NoError(t, err)
	b, err := json.Marshal(r)
	require.NoError(t, err)
	assert.JSONEq(t, `{"field_name":"UES-03","start_date":"2018-10-15","harvest_date":"2019-07-30","crop_type":"winter wheat",
		"is_cover_crop":false,"yield_amount":9,"yield_unit":"t/ha","is_tilled":false}`, string(b))
	back, err := Decode(strings.NewReader(string(b)))
	require.NoError(t, err)
	assert.Equal(t, r, back)
}

func TestSeasonsUpsert(t *testing.T) {
	rec := func(start, crop string) Record {
		return Record{FieldName: "UES-03", StartDate: start, CropType: crop}
	}
	steps := []struct {
		r            Record
		wantReplaced bool
		wantStarts   []string
		wantCrops    []string
	}{
		{rec("2019-03-01", "maize"), false, []string{"2019-03-01"}, []string{"maize"}},
		{rec("2018-10-15", "winter wheat"), false, []string{"2018-10-15", "2019-03-01"}, []string{"winter wheat", "maize"}},
		{rec("2020-04-01", "sugar beet"), false, []string{"2018-10-15", "2019-03-01", "2020-04-01"}, []string{"winter wheat", "maize", "sugar beet"}},
		// Same start_date: the season is replaced, not duplicated.
		{rec("2019-03-01", "potatoes"), true, []string{"2018-10-15", "2019-03-01", "2020-04-01"}, []string{"winter wheat", "potatoes", "sugar beet"}},
		{rec("2019-03-02", "barley"), false, []string{"2018-10-15", "2019-03-01", "2019-03-02", "2020-04-01"}, []string{"winter wheat", "potatoes", "barley", "sugar beet"}},
		{rec("2018-10-15", "winter barley"), true, []string{"2018-10-15", "2019-03-01", "2019-03-02", "2020-04-01"}, []string{"winter barley", "potatoes", "barley", "sugar beet"}},
	}
	var s Seasons
	for i, st := range steps {
		assert.Equal(t, st.wantReplaced, s.Upsert(st.r), "step %d", i)
		var starts, crops []string
		for _, r := range s {
			starts = append(starts, r.StartDate)
			crops = append(crops, r.CropType)
		}
		assert.Equal(t, st.wantStarts, starts, "step %d", i)
		assert.Equal(t, st.wantCrops, crops, "step %d", i)
	}
	got, ok := s.Get("2019-03-01")
	require.True(t, ok)
	assert.Equal(t, "potatoes", got.CropType)
	_, ok = s.Get("2019-03-03")
	assert.False(t, ok)
}

func TestSeasonsJSON(t *testing.T) {
	var s Seasons
	b, err := json.Marshal(s)
	require.NoError(t, err)
	assert.Equal(t, "[]", string(b))
	b, err = json.Marshal(map[string]Seasons{"seasons": nil})
	require.NoError(t, err)
	assert.JSONEq(t, `{"seasons":[]}`, string(b))

	s.Upsert(Record{FieldName: "f", StartDate: "2019-03-01", YieldAmount: ptr(0), YieldUnit: "t"})
	b, err = json.Marshal(s)
	require.NoError(t, err)
	assert.JSONEq(t, `[{"field_name":"f","start_date":"2019-03-01","yield_amount":0,"yield_unit":"t"}]`, string(b))
	var back Seasons
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, s, back)
}

func BenchmarkDecode(b *testing.B) {
	for b.Loop() {
		if _, err := Decode(strings.NewReader(sample)); err != nil {
			b.Fatal(err)
		}
	}
}

// The wire record (api.MetadataRecord) encodes a Record member for member.
func TestRecordAPI(t *testing.T) {
	for _, r := range []Record{
		{FieldName: "f", StartDate: "2019-03-01"},
		{FieldName: "f", StartDate: "2019-03-01", YieldAmount: ptr(0), YieldUnit: "t", IsTilled: ptr(false)},
		{FieldName: "f", StartDate: "2019-03-01", HarvestDate: "2019-08-01", CropType: "wheat", IsCoverCrop: ptr(true),
			YieldAmount: ptr(9), YieldUnit: "t/ha", IsTilled: ptr(true), TillingType: "<plough>"},
	} {
		want, err := json.Marshal(r)
		require.NoError(t, err)
		got, err := json.Marshal(r.API())
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got))
	}
	b, err := json.Marshal(Seasons(nil).API())
	require.NoError(t, err)
	assert.Equal(t, "[]", string(b))
}
