package store

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/weather"
)

// TestWeatherStore: the weather cache answers alike on SQLite and PostgreSQL.
func TestWeatherStore(t *testing.T) {
	eachStore(t, func(t *testing.T, st archive.Store) {
		ctx := context.Background()
		rad := 12.5
		t0 := time.Date(2024, 6, 10, 8, 0, 0, 0, time.UTC)
		days := []archive.CachedDay{
			{Day: weather.Day{Date: "2024-06-01", TminC: 8.25, TmaxC: 21.5, TmeanC: 14, PrecipitationMM: 0.4, RadiationMJ: &rad}, Final: true, FetchedAt: t0},
			{Day: weather.Day{Date: "2024-06-08", TminC: 10, TmaxC: 24, TmeanC: 17}, FetchedAt: t0},
			{Day: weather.Day{Date: "2024-06-09", TminC: 11, TmaxC: 25, TmeanC: 18, PrecipitationMM: 3}, FetchedAt: t0},
		}
		require.NoError(t, st.PutWeatherDays(ctx, "src", "0.1:50.7:4.1", days))
		require.NoError(t, st.PutWeatherDays(ctx, "src", "0.1:50.8:4.1", days[2:]))
		require.NoError(t, st.PutWeatherDays(ctx, "other", "0.1:50.7:4.1", days))
		got, err := st.WeatherDays(ctx, "src", "0.1:50.7:4.1", "2024-06-01", "2024-06-08")
		require.NoError(t, err)
		require.Len(t, got, 2)
		assert.Equal(t, days[0].Day, got[0].Day)
		assert.True(t, got[0].Final)
		assert.Equal(t, t0, got[0].FetchedAt)
		assert.False(t, got[1].Final)

		stale, err := st.StaleWeather(ctx, "src", t0.Add(time.Hour))
		require.NoError(t, err)
		assert.Equal(t, []archive.WeatherSpan{{Cell: "0.1:50.7:4.1", From: "2024-06-08", To: "2024-06-09"}, {Cell: "0.1:50.8:4.1", From: "2024-06-09", To: "2024-06-09"}}, stale)
		stale, err = st.StaleWeather(ctx, "src", t0)
		require.NoError(t, err)
		assert.Empty(t, stale, "fetched at the cutoff: not stale")

		// A refetch replaces the day and its state.
		upd := days[1]
		upd.PrecipitationMM, upd.Final, upd.FetchedAt = 7.5, true, t0.Add(48*time.Hour)
		require.NoError(t, st.PutWeatherDays(ctx, "src", "0.1:50.7:4.1", []archive.CachedDay{upd}))
		got, err = st.WeatherDays(ctx, "src", "0.1:50.7:4.1", "2024-06-08", "2024-06-08")
		require.NoError(t, err)
		require.Len(t, got, 1)
		assert.Equal(t, 7.5, got[0].PrecipitationMM)
		assert.True(t, got[0].Final)
	})
}
