package metadata_test

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cropkit/cropkit/metadata"
)

func ExampleDecode() {
	body := `{"field_name": "UES-03", "start_date": "2019-03-01", "harvest_date": "2019-02-01"}`
	_, err := metadata.Decode(strings.NewReader(body))
	var ve *metadata.ValidationError
	if errors.As(err, &ve) { // a 400 for the client
		fmt.Println(ve.Field, "-", ve.Reason)
	}
	// Output: harvest_date - 2019-02-01 is before start_date 2019-03-01
}

func ExampleSeasons_Upsert() {
	var s metadata.Seasons
	s.Upsert(metadata.Record{FieldName: "UES-03", StartDate: "2019-03-01", CropType: "maize"})
	s.Upsert(metadata.Record{FieldName: "UES-03", StartDate: "2018-10-15", CropType: "winter wheat"})
	replaced := s.Upsert(metadata.Record{FieldName: "UES-03", StartDate: "2019-03-01", CropType: "sugar beet"})
	fmt.Println(replaced)
	for _, r := range s {
		fmt.Println(r.StartDate, r.CropType)
	}
	// Output:
	// true
	// 2018-10-15 winter wheat
	// 2019-03-01 sugar beet
}
