package weather_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/weather"
)

func BenchmarkReadTable(b *testing.B) {
	data, err := os.ReadFile(testenv.DataDir(b, "weather", "flanders-31UES.csv"))
	if err != nil {
		b.Skip(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := weather.ReadTable(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAccumulate(b *testing.B) {
	t, err := weather.ReadTableFile(testenv.DataDir(b, "weather", "flanders-31UES.csv"))
	if err != nil {
		b.Skip(err)
	}
	days := t.All()
	p, _ := weather.ParamsFor("maize", nil, nil)
	for b.Loop() {
		weather.Accumulate(days, p)
	}
}
