package colormap

import (
	"encoding/json"
	"image/color"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func rgb(r, g, b uint8) color.RGBA { return color.RGBA{R: r, G: g, B: b, A: 0xff} }

func TestSpecTable(t *testing.T) {
	rdYlGnHex := []string{"#a50026", "#d3322b", "#f16d43", "#fcab63", "#fedc8c", "#f9f7ae", "#d7ee8e", "#a4d86f", "#64bc61", "#23964f", "#23964f"}
	ndwiHex := []string{"#d3322b", "#f16d43", "#fcab64", "#fedc90", "#faf8c0", "#dcf1ec", "#abd6e8", "#76abd0", "#4a74b4", "#4a74b4"}
	upper := make([]string, len(rdYlGnHex))
	for i, h := range rdYlGnHex {
		upper[i] = strings.ToUpper(h)
	}
	tests := []struct {
		index       string
		hex         []string
		start, stop float64
	}{
		{"ndvi", rdYlGnHex, 0, 1},
		{"ndwi", ndwiHex, 0, 1},
		{"chi", rdYlGnHex, 0, 3},
		{"ndre", rdYlGnHex, 0, 1},
		{"savi", rdYlGnHex, 0, 1},
		{"lai", rdYlGnHex, 1, 7},
		{"evi", rdYlGnHex, 0, 1},
		{"nirv", upper, 100, 2000},
	}
	require.Equal(t, []string{"ndvi", "ndwi", "chi", "ndre", "savi", "lai", "evi", "nirv"}, Names())
	for _, tt := range tests {
		t.Run(tt.index, func(t *testing.T) {
			c, ok := ForIndex(tt.index)
			require.True(t, ok)
			assert.Equal(t, tt.index, c.Index)
			assert.Equal(t, tt.hex, c.Hex)
			assert.Equal(t, tt.start, c.Start)
			assert.Equal(t, tt.stop, c.Stop)
			require.Len(t, c.Scale, len(tt.hex))
			for i, h := range tt.hex {
				want, err := ParseHex(h)
				require.NoError(t, err)
				assert.Equal(t, want, c.Scale[i], "colour %d", i)
			}
			require.NoError(t, c.Validate())
		})
	}
	ndvi, _ := ForIndex("ndvi")
	nirv, _ := ForIndex("nirv")
	assert.Equal(t, ndvi.Scale, nirv.Scale, "nirv is the ndvi colours in upper case")
	assert.Equal(t, rgb(0xa5, 0x00, 0x26), ndvi.Scale[0])
	assert.Equal(t, rgb(0x23, 0x96, 0x4f), ndvi.Scale[10])

	for _, name := range []string{"NDVI", "", "rgb", "ndmi"} {
		_, ok := ForIndex(name)
		assert.False(t, ok, name)
	}
}

func TestForIndexReturnsCopies(t *testing.T) {
	a, _ := ForIndex("ndvi")
	a.Scale[0] = rgb(1, 2, 3)
	a.Hex[0] = "#010203"
	b, _ := ForIndex("ndvi")
	assert.Equal(t, rgb(0xa5, 0x00, 0x26), b.Scale[0])
	assert.Equal(t, "#a50026", b.Hex[0])
}

func TestColor(t *testing.T) {
	tests := []struct {
		index string
		v     float64
		want  color.RGBA
	}{
		// Stops of ndvi: every 0.1.
		{"ndvi", 0, rgb(0xa5, 0x00, 0x26)},
		{"ndvi", 0.1, rgb(0xd3, 0x32, 0x2b)},
		{"ndvi", 0.3, rgb(0xfc, 0xab, 0x63)},
		{"ndvi", 0.5, rgb(0xf9, 0xf7, 0xae)},
		{"ndvi", 0.7, rgb(0xa4, 0xd8, 0x6f)},
		{"ndvi", 0.9, rgb(0x23, 0x96, 0x4f)},
		{"ndvi", 1, rgb(0x23, 0x96, 0x4f)},
		// Midpoints: (165,0,38)+(211,50,43) / 2 = (188, 25, 40.5 → 41).
		{"ndvi", 0.05, rgb(188, 25, 41)},
		// (249,247,174)+(215,238,142) / 2 = (232, 242.5 → 243, 158).
		{"ndvi", 0.55, rgb(232, 243, 158)},
		// A quarter of the way from #fcab63 (252,171,99) to #fedc8c (254,220,140):
		// (252.5 → 253, 183.25 → 183, 109.25 → 109).
		{"ndvi", 0.325, rgb(253, 183, 109)},
		// The last segment is constant (the spec repeats #23964f).
		{"ndvi", 0.95, rgb(0x23, 0x96, 0x4f)},
		// Clamping.
		{"ndvi", -0.4, rgb(0xa5, 0x00, 0x26)},
		{"ndvi", 1.7, rgb(0x23, 0x96, 0x4f)},
		{"ndvi", math.Inf(-1), rgb(0xa5, 0x00, 0x26)},
		{"ndvi", math.Inf(1), rgb(0x23, 0x96, 0x4f)},
		{"ndvi", math.NaN(), color.RGBA{}},
		// chi over [0, 3]: a stop every 0.3.
		{"chi", 1.5, rgb(0xf9, 0xf7, 0xae)},
		{"chi", 0.15, rgb(188, 25, 41)},
		{"chi", 3.5, rgb(0x23, 0x96, 0x4f)},
		// lai over [1, 7]: a stop every 0.6.
		{"lai", 1, rgb(0xa5, 0x00, 0x26)},
		{"lai", 0.2, rgb(0xa5, 0x00, 0x26)},
		{"lai", 4, rgb(0xf9, 0xf7, 0xae)},
		{"lai", 7, rgb(0x23, 0x96, 0x4f)},
		// nirv over [100, 2000]: a stop every 190.
		{"nirv", 100, rgb(0xa5, 0x00, 0x26)},
		{"nirv", 195, rgb(188, 25, 41)},
		{"nirv", 1050, rgb(0xf9, 0xf7, 0xae)},
		{"nirv", 0.5, rgb(0xa5, 0x00, 0x26)},
		{"nirv", 2400, rgb(0x23, 0x96, 0x4f)},
		// ndwi: 10 colours, a stop every 1/9.
		{"ndwi", 0, rgb(0xd3, 0x32, 0x2b)},
		{"ndwi", 4.0 / 9, rgb(0xfa, 0xf8, 0xc0)},
		{"ndwi", 5.0 / 9, rgb(0xdc, 0xf1, 0xec)},
		{"ndwi", 8.0 / 9, rgb(0x4a, 0x74, 0xb4)},
		{"ndwi", 1, rgb(0x4a, 0x74, 0xb4)},
		// (211,50,43)+(241,109,67) / 2 = (226, 79.5 → 80, 55).
		{"ndwi", 1.0 / 18, rgb(226, 80, 55)},
		{"ndwi", -1, rgb(0xd3, 0x32, 0x2b)},
	}
	for _, tt := range tests {
		c, ok := ForIndex(tt.index)
		require.True(t, ok)
		assert.Equal(t, tt.want, c.Color(tt.v), "%s(%v)", tt.index, tt.v)
	}
}

func TestColorInvalidColormapIsTransparent(t *testing.T) {
	assert.Equal(t, color.RGBA{}, Colormap{}.Color(0.5))
	c := Colormap{Scale: []color.RGBA{rgb(0, 0, 0), rgb(255, 255, 255)}, Start: 1, Stop: 1}
	assert.Equal(t, color.RGBA{}, c.Color(1))
}

func TestNew(t *testing.T) {
	c, err := New("gray", []string{"#000000", "#FFFFFF"}, -1, 1)
	require.NoError(t, err)
	assert.Equal(t, rgb(0, 0, 0), c.Color(-1))
	assert.Equal(t, rgb(128, 128, 128), c.Color(0)) // 127.5 rounds up
	assert.Equal(t, rgb(255, 255, 255), c.Color(1))
	assert.Equal(t, []string{"#000000", "#FFFFFF"}, c.Hex)

	bad := []struct {
		name        string
		hex         []string
		start, stop float64
	}{
		{"one colour", []string{"#000000"}, 0, 1},
		{"no colours", nil, 0, 1},
		{"no hash", []string{"000000", "#ffffff"}, 0, 1},
		{"short", []string{"#000", "#ffffff"}, 0, 1},
		{"not hex", []string{"#00000g", "#ffffff"}, 0, 1},
		{"with alpha", []string{"#000000ff", "#ffffff"}, 0, 1},
		{"empty range", []string{"#000000", "#ffffff"}, 1, 1},
		{"reversed range", []string{"#000000", "#ffffff"}, 2, 1},
		{"NaN start", []string{"#000000", "#ffffff"}, math.NaN(), 1},
		{"infinite stop", []string{"#000000", "#ffffff"}, 0, math.Inf(1)},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New("x", tt.hex, tt.start, tt.stop)
			require.ErrorIs(t, err, ErrInvalidColormap)
		})
	}
}

func TestDefault(t *testing.T) {
	c, err := Default("gndvi", -1, 1)
	require.NoError(t, err)
	ndvi, _ := ForIndex("ndvi")
	assert.Equal(t, "gndvi", c.Index)
	assert.Equal(t, ndvi.Hex, c.Hex)
	assert.Equal(t, ndvi.Color(0.5), c.Color(0))
	assert.Equal(t, ndvi.Color(0.05), c.Color(-0.9))
	_, err = Default("gndvi", 1, -1)
	require.ErrorIs(t, err, ErrInvalidColormap)
}

func TestParseHex(t *testing.T) {
	c, err := ParseHex("#A4d86F")
	require.NoError(t, err)
	assert.Equal(t, rgb(0xa4, 0xd8, 0x6f), c)
}

func BenchmarkColor(b *testing.B) {
	c, _ := ForIndex("ndvi")
	var sink color.RGBA
	for i := 0; b.Loop(); i++ {
		sink = c.Color(float64(i%1000) / 1000)
	}
	_ = sink
}

func TestJSON(t *testing.T) {
	c, _ := ForIndex("ndwi")
	b, err := json.Marshal(c)
	require.NoError(t, err)
	assert.JSONEq(t, `{"index":"ndwi","scale":["#d3322b","#f16d43","#fcab64","#fedc90","#faf8c0","#dcf1ec","#abd6e8","#76abd0","#4a74b4","#4a74b4"],"start":0,"stop":1}`, string(b))
	var back Colormap
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, c, back)

	for _, bad := range []string{
		`{"index":"x","scale":["#000000"],"start":0,"stop":1}`,
		`{"index":"x","scale":["#000000","red"],"start":0,"stop":1}`,
		`{"index":"x","scale":["#000000","#ffffff"],"start":1,"stop":0}`,
	} {
		require.ErrorIs(t, json.Unmarshal([]byte(bad), &back), ErrInvalidColormap, bad)
	}
	require.Error(t, json.Unmarshal([]byte(`{"scale":"#000000"}`), &back))
}

func TestRadarColormaps(t *testing.T) {
	for _, tt := range []struct {
		index       string
		start, stop float64
	}{{"vv", -25, 0}, {"vh", -30, -5}, {"vh_vv", -15, 0}, {"rvi", 0, 1}} {
		c, err := Lookup(tt.index, [2]float64{0, 1})
		require.NoError(t, err, tt.index)
		assert.Equal(t, tt.start, c.Start, tt.index)
		assert.Equal(t, tt.stop, c.Stop, tt.index)
		assert.Equal(t, tt.index, c.Index)
		_, spec := ForIndex(tt.index)
		assert.False(t, spec, "radar maps are not the spec's")
	}
	assert.Equal(t, []string{"vv", "vh", "vh_vv", "rvi"}, RadarNames())
	vv, _ := ForRadarIndex("vv")
	assert.Equal(t, color.RGBA{0x44, 0x01, 0x54, 0xff}, vv.Color(-40), "below the range: first colour")
	assert.Equal(t, color.RGBA{0xfd, 0xe7, 0x25, 0xff}, vv.Color(3), "above the range: last colour")
}
