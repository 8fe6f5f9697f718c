package httpretry

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"", 0, false},
		{"0", 0, true},
		{"120", 2 * time.Minute, true},
		{" 7 ", 7 * time.Second, true},
		{"-3", 0, false},
		{"99999999999999", maxRetryAfter, true}, // would overflow time.Duration
		{now.Add(time.Hour).Format(http.TimeFormat), time.Hour, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
		{"tomorrow", 0, false},
	}
	for _, tt := range tests {
		got, ok := ParseRetryAfter(tt.in, now)
		assert.Equal(t, tt.ok, ok, tt.in)
		assert.Equal(t, tt.want, got, tt.in)
	}
}
